"""``gnnbench verify``: the correctness gate a system passes before its figures count.

``suite`` composes the oracle's checks (:mod:`gnnbench.check`) with
end-to-end training through :mod:`gnnbench.run`, which is why it sits above
both; ``isolation`` runs each group of checks in a child process, so a crash
or hang is a finding named by its case, not the end of the verification.
"""
