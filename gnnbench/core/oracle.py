"""The oracle's name: the system every other is verified against and compared with (Note [claims need
verification] in :mod:`gnnbench.results.compare`)."""

__all__ = ["REFERENCE"]

#: The reference system: plain, exact kernels that define each operator's result.
REFERENCE = "reference"
