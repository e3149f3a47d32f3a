"""Cora, CiteSeer and PubMed from the Planetoid raw files, read safely and verified.

The raw files ``ind.<name>.{x,y,tx,ty,allx,ally,graph,test.index}`` are the ones
published with Planetoid (Yang, Cohen & Salakhutdinov, ICML 2016) in
github.com/kimiyoung/planetoid. They are Python 2 pickles, so they are read with
:class:`_RestrictedUnpickler` (a pickle can run arbitrary code) and checked
against the sha256 sums below before use.

Note [planetoid checksums]
    The sums of Cora's and CiteSeer's files were taken from the originals.
    PubMed's are not known here (no machine that wrote this had the files),
    so its files are checked for structure only, and a converted cache records
    their sums (Note [published checksums]).

Note [planetoid layout]
    ``allx``/``ally`` hold nodes ``0 .. len(allx)-1``; row ``k`` of ``tx``/``ty``
    is node ``test.index[k]`` (the index file is unsorted). CiteSeer's test ids
    span 1015 values but only 1000 rows exist: the 15 isolated nodes get zero
    features and the label of an all-zero one-hot row (class 0), as in PyG and
    Kipf's GCN code; they are in no split. The standard split is
    train = ``range(len(y))``, val = the next 500 ids, test = ``test.index``.
    Features are row-normalised (a row that sums to 0 stays 0).
"""
from __future__ import annotations

import collections
import hashlib
import os
import pickle
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from gnnbench.errors import UserError
from gnnbench.places import cache_root
from gnnbench.safe_write import write_file

from .dataset import Dataset, build_dataset, index_mask, symmetric_graph

__all__ = ["PLANETOID_NAMES", "SHA256", "load_planetoid", "find_planetoid_dir", "read_pickle"]

PLANETOID_NAMES = ("cora", "citeseer", "pubmed")
_PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")
DOWNLOAD_URL = "https://github.com/kimiyoung/planetoid/raw/master/data/{file}"
HOW_TO_FIX = "pass --data-dir DIR or set GNNBENCH_DATA_DIR to a folder holding the Planetoid ind.* files"

#: sha256 of the published raw files (from kimiyoung/planetoid, data/).
SHA256 = {
    "ind.citeseer.allx": "2ac30345d95c9ec933a817ee0bdd6a5f077f8c184a20e696910192d534414668",
    "ind.citeseer.ally": "f704b2d986dde6c2669934de1f3ae5696a6cf9455c0f6b2646a2d135ea0a1c95",
    "ind.citeseer.graph": "d79a4ef9d3e7169aee8946145f6b7306e35bc79bffad26346cfb94e10e9912a7",
    "ind.citeseer.test.index": "2af990671580b6b2df5d158d1038f8292e30c9cd821b5453f399659b25b723d4",
    "ind.citeseer.tx": "539a8906a2da97628d212f2fdd668c109a8b3f0d36574b59e5d3fd5b5303da21",
    "ind.citeseer.ty": "55e5bd1ba1e733a04598753ad1a8d57957f4b8f89e74519f41f4f4938767e4ce",
    "ind.citeseer.x": "d20de19150741e555de0ed037195630fc194114ebc7fd72ced62810148aa22f6",
    "ind.citeseer.y": "8ba87e515d8e3ee3cf52f6d2c5b86aa73f11ecad825a808455209ec26cd54924",
    "ind.cora.allx": "9419ba2f26f5c35243db64aba110e0f35a04851609e0dc5433450676ca6b8543",
    "ind.cora.ally": "2b998f5cc7fedc86e7f97ca2498f47a1ffc1462c29e2d578b23bf3f62b6e7d71",
    "ind.cora.graph": "58f13302f39dde8852dad6fe6d15b89b077b6d7f837626bce671ef80344b383d",
    "ind.cora.test.index": "297ce89af2b51a6a194181c7dbe1796c6a1cf9cd9349a88383b1b1e227867875",
    "ind.cora.tx": "b9afbaa4a400df991f6f02ef677e1e44da55ffc04801fd02f9e673987829226a",
    "ind.cora.ty": "41f5ac76596a1699cc33f53084a2419e92961c42bb75f36fc38e616d348532ad",
    "ind.cora.x": "23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab",
    "ind.cora.y": "94465c14eb53e04ca262198dcbb2521ee8af60fb3f3d546cd6ca24a511b0e7d1",
}

# numpy's array reconstructor, taken from an array's own __reduce__ so that
# neither the deprecated ``numpy.core`` nor the private ``numpy._core`` is imported.
_NP_RECONSTRUCT = np.empty(0).__reduce__()[0]
_NP_SCALAR = np.float64(0).__reduce__()[0]

def _latin1_encode(text: str, encoding: str = "latin1") -> bytes:
    """``_codecs.encode`` as Python 3's protocol-2 pickles use it for bytes; latin1 only, nothing else."""
    if encoding not in ("latin1", "latin-1") or not isinstance(text, str):
        raise pickle.UnpicklingError(f"refusing _codecs.encode with encoding {encoding!r}")
    return text.encode("latin1")


# (module, name) as written in the pickle -> the object it may resolve to.
# Python 2 pickles say ``__builtin__``; old scipy says ``scipy.sparse.csr``.
_ALLOWED: dict[tuple[str, str], Any] = {
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("numpy.core.multiarray", "_reconstruct"): _NP_RECONSTRUCT,
    ("numpy._core.multiarray", "_reconstruct"): _NP_RECONSTRUCT,
    ("numpy.core.multiarray", "scalar"): _NP_SCALAR,
    ("numpy._core.multiarray", "scalar"): _NP_SCALAR,
    ("scipy.sparse.csr", "csr_matrix"): sp.csr_matrix,
    ("scipy.sparse._csr", "csr_matrix"): sp.csr_matrix,
    ("scipy.sparse", "csr_matrix"): sp.csr_matrix,
    ("scipy.sparse._csr", "csr_array"): sp.csr_array,
    ("scipy.sparse", "csr_array"): sp.csr_array,
    ("collections", "defaultdict"): collections.defaultdict,
    ("_codecs", "encode"): _latin1_encode,  # files re-saved by Python 3 (protocol 2)
    ("__builtin__", "list"): list,
    ("builtins", "list"): list,
    ("__builtin__", "dict"): dict,
    ("builtins", "dict"): dict,
    ("__builtin__", "int"): int,
    ("builtins", "int"): int,
}


class _RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that resolves only the classes the Planetoid files use.

    Any other global (``os.system``, ``builtins.eval``, ...) is refused before
    it is imported, so a tampered file cannot run code.
    """

    def __init__(self, file: Any, path: Path):
        super().__init__(file, encoding="latin1")
        self._path = path

    def find_class(self, module: str, name: str) -> Any:
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise UserError(f"{self._path}: refusing to unpickle '{module}.{name}'; a Planetoid file holds only "
                            f"scipy CSR matrices, numpy arrays and dicts of lists. Replace it with the "
                            f"original from {DOWNLOAD_URL.format(file=self._path.name)}") from None


def read_pickle(path: Path) -> Any:
    """Unpickle ``path`` with :class:`_RestrictedUnpickler` (latin1, for Python 2 pickles)."""
    with open(path, "rb") as fh:
        try:
            return _RestrictedUnpickler(fh, path).load()
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as err:
            raise UserError(f"{path}: not a readable Planetoid pickle ({type(err).__name__}: {err}); "
                            f"replace it with the original from {DOWNLOAD_URL.format(file=path.name)}") from None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _files(name: str) -> list[str]:
    return [f"ind.{name}.{part}" for part in _PARTS]


def find_planetoid_dir(name: str, data_dir: str | os.PathLike | None) -> Path:
    """The folder holding ``ind.<name>.*``, every file present and verified.

    Looks in ``data_dir`` (or its ``planetoid/`` subfolder), else in
    ``$GNNBENCH_DATA_DIR``, else in the download cache, downloading there when
    the network allows (not when ``GNNBENCH_OFFLINE=1``).
    """
    source = "--data-dir"
    if data_dir is None and os.environ.get("GNNBENCH_DATA_DIR"):
        data_dir, source = os.environ["GNNBENCH_DATA_DIR"], "GNNBENCH_DATA_DIR"
    if data_dir is None:
        folder = cache_root() / "data" / "planetoid"
        if not all((folder / f).is_file() for f in _files(name)):
            _download(name, folder)
    else:
        folder = Path(data_dir).expanduser()
        if not folder.is_dir():
            raise UserError(f"Planetoid folder {folder} (from {source}) does not exist; {HOW_TO_FIX}")
        # the folder itself, its planetoid/ (fetch) or PyG's <Title>/raw/ (Note [raw data folders])
        title = {"cora": "Cora", "citeseer": "CiteSeer", "pubmed": "PubMed"}[name]
        for sub in ("planetoid", f"{title}/raw"):
            if not (folder / f"ind.{name}.x").is_file() and (folder / sub / f"ind.{name}.x").is_file():
                folder = folder / sub
    for f in _files(name):
        path = folder / f
        if not path.is_file():
            raise UserError(f"Planetoid file {path} is missing (expected all of ind.{name}.{{{','.join(_PARTS)}}} "
                            f"in {folder}); {HOW_TO_FIX}")
        if f not in SHA256:  # Note [planetoid checksums]
            continue
        digest = _sha256(path)
        if digest != SHA256[f]:
            raise UserError(f"Planetoid file {path} has sha256 {digest[:16]}..., expected {SHA256[f][:16]}...: "
                            f"it is corrupt or not the original; replace it with {DOWNLOAD_URL.format(file=f)}")
    return folder


def _download(name: str, folder: Path) -> None:
    """Fetch the missing ``ind.<name>.*`` into ``folder``, each verified before it is kept."""
    if os.environ.get("GNNBENCH_OFFLINE", "") not in ("", "0"):
        raise UserError(f"no Planetoid files for '{name}' in {folder} and GNNBENCH_OFFLINE is set; {HOW_TO_FIX}")
    folder.mkdir(parents=True, exist_ok=True)
    for f in _files(name):
        target = folder / f
        if target.is_file():
            continue
        url = DOWNLOAD_URL.format(file=f)
        try:
            with urllib.request.urlopen(url, timeout=30) as resp:
                payload = resp.read()
        except (urllib.error.URLError, OSError) as err:
            raise UserError(f"could not download {url} ({err}); {HOW_TO_FIX}") from None
        if f in SHA256 and hashlib.sha256(payload).hexdigest() != SHA256[f]:
            raise UserError(f"downloaded {url} does not match its known sha256; {HOW_TO_FIX}")
        # whole, then renamed: an interrupted download never leaves a partial file (Note [writes refuse links])
        write_file(target, payload)


def _dense(m: Any, path: Path) -> np.ndarray:
    if sp.issparse(m):
        return np.asarray(m.toarray())
    if isinstance(m, np.ndarray) and m.ndim == 2:
        return m
    raise UserError(f"{path}: expected a 2-D matrix (got {type(m).__name__}); replace it with the original")


def load_planetoid(name: str, data_dir: str | os.PathLike | None = None, index_dtype: Any = np.int64) -> Dataset:
    """Cora, CiteSeer or PubMed with the standard Planetoid split (Note [planetoid layout]).

    Args:
        name: ``"cora"``, ``"citeseer"`` or ``"pubmed"``.
        data_dir: folder holding the raw files (default: ``$GNNBENCH_DATA_DIR``,
            else the download cache).
        index_dtype: int32 or int64 for the graph. (default: int64)

    Shapes:
        Cora: N=2708, F=1433, C=7, 10556 directed edges.
        CiteSeer: N=3327, F=3703, C=6, 9104 directed edges.
        PubMed: N=19717, F=500, C=3, 88648 directed edges.
    """
    folder = find_planetoid_dir(name, data_dir)
    parts = {p: folder / f"ind.{name}.{p}" for p in _PARTS}
    x, tx, allx = (_dense(read_pickle(parts[p]), parts[p]) for p in ("x", "tx", "allx"))
    y, ty, ally = (_dense(read_pickle(parts[p]), parts[p]) for p in ("y", "ty", "ally"))
    adjacency = read_pickle(parts["graph"])
    if not isinstance(adjacency, dict):
        raise UserError(f"{parts['graph']}: expected a dict of adjacency lists (got {type(adjacency).__name__})")
    try:
        test_index = np.loadtxt(parts["test.index"], dtype=np.int64, ndmin=1)
    except ValueError as err:
        raise UserError(f"{parts['test.index']}: expected one node id per line ({err}); replace it with the "
                        f"original") from None
    if test_index.size == 0 or test_index.min() < 0:
        raise UserError(f"{parts['test.index']}: expected non-negative node ids, one per line")

    # Note [planetoid layout]: allx rows are nodes 0.., tx row k is node test_index[k]
    num_nodes = max(allx.shape[0], int(test_index.max()) + 1)
    features = np.zeros((num_nodes, allx.shape[1]), dtype=np.float32)
    features[: allx.shape[0]] = allx
    features[test_index] = tx
    onehot = np.zeros((num_nodes, ally.shape[1]), dtype=np.float32)
    onehot[: ally.shape[0]] = ally
    onehot[test_index] = ty
    labels = onehot.argmax(axis=1)
    row_sum = features.sum(axis=1, keepdims=True)
    features /= np.where(row_sum == 0, 1, row_sum)

    src = np.fromiter((s for s, nbrs in adjacency.items() for _ in nbrs), dtype=np.int64)
    dst = np.fromiter((d for nbrs in adjacency.values() for d in nbrs), dtype=np.int64)
    if src.size and max(src.max(), dst.max()) >= num_nodes:
        raise UserError(f"{parts['graph']}: node id {max(src.max(), dst.max())} exceeds the {num_nodes} "
                        f"nodes of the feature files; the files are not from one dataset")
    graph = symmetric_graph(src, dst, num_nodes, index_dtype)

    train = np.arange(y.shape[0])
    val = np.arange(y.shape[0], y.shape[0] + 500)
    return build_dataset(name, graph, features, labels, index_mask(num_nodes, train),
                         index_mask(num_nodes, val), index_mask(num_nodes, test_index), y.shape[1])
