"""The lowest layer: facts every other package may import, and which import nothing of gnnbench's.

``measurement`` is a run's samples and their statistics (Note [noise threshold]); ``phases`` what a run
times per epoch, by name (Note [phases by name]); ``stability`` every
threshold that flags a figure as unsteady (Note [stability thresholds]); ``oracle`` names the
reference system.
"""
__all__ = ["measurement", "phases", "stability", "oracle"]
