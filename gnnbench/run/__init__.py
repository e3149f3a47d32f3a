"""One measured run, and matrices of them.

``config`` (the one RunConfig) and ``preflight`` check a run before any
worker starts; ``resolved`` resolves a RunConfig once for the checks, the
loops and the row (Note [a run resolved once]); ``harness`` is the training
loop every system runs through, ``sampled`` its mini-batch counterpart,
``loop`` what both share (the phases they time, by name) and ``tuning`` a
system's first-use tuning;
``runner``/``worker`` isolate each run in its own process, and ``warm`` forks
such processes from a warm parent that has paid the imports once (Note
[cheap processes]); ``record`` builds
the stored row; ``repeat`` counts the processes of one configuration and
their spread (Note [repetitions]); ``sweep`` and ``executors`` run matrices;
``measurement`` owns the statistics; ``allocator`` and ``environment`` record
the machine.
"""
