"""One measured run, and matrices of them.

``config`` (the one RunConfig) and ``preflight`` check a run before any
worker starts; ``harness`` is the training loop every system runs through;
``runner``/``worker`` isolate each run in its own process; ``record`` builds
the stored row; ``repeat`` counts the processes of one configuration and
their spread (Note [repetitions]); ``sweep`` and ``executors`` run matrices;
``measurement`` owns the statistics; ``allocator`` and ``environment`` record
the machine.
"""
