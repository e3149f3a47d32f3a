"""Import DGL 2.1.0 under torch 2.13 without touching site-packages.

``dgl==2.1.0`` is the newest DGL wheel on PyPI for Linux, and it predates
torch 2.13. Importing it as is fails or misbehaves in three places; this
module fixes each one from the outside and is the only place gnnbench
imports DGL (``from gnnbench.peers.dgl_shim import dgl``).

Note [DGL import shim]
    1. ``dgl/__init__.py`` imports ``dgl.distributed``, which imports
       ``dgl.graphbolt``, which loads ``libgraphbolt_pytorch_<torch>.so``:
       there is no build for torch 2.13, so ``import dgl`` raises. gnnbench
       uses neither graphbolt nor distributed training, so an empty module
       registered as ``dgl.graphbolt`` before ``import dgl`` satisfies the
       import; any attribute read from it raises a clear error instead.
       (The same stub makes ``torchdata`` and ``pydantic``, graphbolt's
       dependencies, unnecessary at import time.)
    2. Without ``DGLBACKEND`` set, DGL prints a notice to stderr and writes
       ``~/.dgl/config.json`` (or ``$DGLDEFAULTDIR/config.json``); setting
       ``DGLBACKEND=pytorch`` (unless the user chose otherwise) avoids both.
    3. ``dgl.sparse`` (``libdgl_sparse_pytorch_<torch>.so``) has no torch 2.13
       build either; it is imported lazily by DGL and gnnbench never uses it.
    4. ``dgl.data`` imports OGB, whose import asks PyPI whether it is
       outdated, from a thread; DGL is imported without that request (Note
       [ogb's version check] in datasets/pypi_check.py).

    What gnnbench does use works under torch 2.13 on the CPU: graph
    construction from CSC arrays, ``dgl.ops`` (``gspmm``, ``gsddmm``,
    ``edge_softmax``) and their kernels in ``dgl._sparse_ops``, and the
    ``dgl.nn`` layers ``GraphConv``, ``GATConv``, ``GINConv`` and ``SAGEConv``.
"""
import importlib.util
import os
import sys
import types

from gnnbench.errors import UnavailableError

__all__ = ["dgl", "GRAPHBOLT_STUB"]


class _DisabledModule(types.ModuleType):
    """A stand-in module whose every attribute lookup explains why it is absent."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"dgl.graphbolt.{name} is unavailable: gnnbench replaces dgl.graphbolt with a stub "
                             f"because DGL 2.1.0 ships no graphbolt library for this torch "
                             f"(see Note [DGL import shim] in gnnbench/peers/dgl_shim.py)")


GRAPHBOLT_STUB = _DisabledModule("dgl.graphbolt")

if importlib.util.find_spec("dgl") is None:
    raise UnavailableError("DGL is not installed (pip install dgl==2.1.0 pandas)")

os.environ.setdefault("DGLBACKEND", "pytorch")
sys.modules.setdefault("dgl.graphbolt", GRAPHBOLT_STUB)

from gnnbench.datasets.pypi_check import without_pypi_check  # noqa: E402

with without_pypi_check():  # dgl.data imports ogb (Note [ogb's version check] in datasets/pypi_check.py)
    import dgl  # noqa: E402  (the stub must be registered first)
