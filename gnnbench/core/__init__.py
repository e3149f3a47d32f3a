"""The lowest layer: facts every other package may import, and which import nothing of gnnbench's.

``measurement`` is a run's samples and their statistics (Note [noise threshold]); ``oracle`` names the
reference system.
"""
__all__ = ["measurement", "oracle"]
