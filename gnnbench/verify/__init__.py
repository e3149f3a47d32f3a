"""``gnnbench verify``: the correctness gate a system passes before its figures count.

``suite`` composes the oracle's checks (:mod:`gnnbench.check`) with
end-to-end training through :mod:`gnnbench.run` (``training``), which is why it
sits above both; ``isolation`` runs each group of checks in a child process, so
a crash or hang is a finding named by its case, not the end of the
verification. ``settings`` holds what one verification is asked to do, and
``large_index`` the ``2**31`` case. The imports run one way:
suite -> isolation -> the check bodies (training, large_index, gnnbench.check).
"""
