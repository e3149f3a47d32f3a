"""Where each real dataset comes from: publisher URL, license, raw layout, published sizes and split.

One :class:`Source` per dataset states every fact about its publisher once;
the loaders, ``gnnbench datasets``, ``gnnbench datasets fetch`` and the
``rmat:like=NAME`` presets all read it.

Note [raw data folders]
    Raw files are looked for in the folder given by ``--data-dir``, else
    ``$GNNBENCH_DATA_DIR``, else ``<cache>/data`` (where ``gnnbench datasets
    fetch`` extracts). Inside it, each dataset accepts its publisher's layout
    and the folder PyG would use, e.g. for Reddit ``reddit_data.npz`` and
    ``reddit_graph.npz`` in ``reddit/``, ``Reddit/raw/`` or the folder itself;
    for OGB ``ogbn_arxiv/raw/*.csv.gz`` and ``ogbn_arxiv/split/time/*.csv.gz``
    as the ``ogb`` package leaves them (ogbn-mag: ``ogbn_mag/raw/relations/...``);
    for IGBH ``igbh/<size>/processed/`` as IGB's download scripts leave it.

Note [published checksums]
    OGB, DGL and the gnn-benchmark repository publish no checksums for their
    archives, so ``sha256`` is ``None`` for them: ``fetch`` records the sum of
    what it downloaded in ``<cache>/data/CHECKSUMS.json`` and refuses a later
    download (or resumed part) that differs, and every converted cache records
    the sums of the raw files it was made from. Planetoid's files are checked
    against the sums in :mod:`.planetoid` where they are known.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from gnnbench.errors import UserError
from gnnbench.places import cache_root

__all__ = ["Source", "SOURCES", "data_root", "find_raw_folder", "missing_files_message", "sha256_of_files",
           "file_sha256"]


@dataclass(frozen=True)
class Source:
    """A real dataset as its publisher ships it.

    Args:
        name: gnnbench's name, e.g. ``"ogbn-arxiv"``.
        nodes, edges, features, classes: published sizes; ``edges`` counts
            directed edges after symmetrisation, as gnnbench stores them.
        task: ``"multiclass"`` or ``"multilabel"``.
        split: the split and who defined it.
        url: where ``fetch`` downloads from; several files are separated by spaces.
        license: the data's license.
        folders: sub-folders of the data root that may hold ``files``, in
            order; ``"."`` is the root itself.
        files: the raw files needed, relative to the folder found.
        archive_folder: the folder ``fetch`` extracts into (under the data root).
        sha256: the archive's sha256, or ``None`` (Note [published checksums]).
    """

    name: str
    nodes: int
    edges: int
    features: int
    classes: int
    task: str
    split: str
    url: str
    license: str
    folders: tuple[str, ...]
    files: tuple[str, ...]
    archive_folder: str
    sha256: str | None = None

    @property
    def urls(self) -> list[str]:
        return self.url.split()


_OGB = "http://snap.stanford.edu/ogb/data/nodeproppred/{}.zip"
_OGB_FILES = ("raw/edge.csv.gz", "raw/num-node-list.csv.gz", "raw/num-edge-list.csv.gz",
              "raw/node-label.csv.gz")
_MAG_RELATIONS = ("author___affiliated_with___institution", "author___writes___paper", "paper___cites___paper",
                  "paper___has_topic___field_of_study")
_MAG_FILES = ("raw/num-node-dict.csv.gz", "raw/triplet-type-list.csv.gz", "raw/node-feat/paper/node-feat.csv.gz",
              "raw/nodetype-has-label.csv.gz", "raw/node-label/paper/node-label.csv.gz",
              *(f"raw/relations/{r}/{f}" for r in _MAG_RELATIONS for f in ("edge.csv.gz", "num-edge-list.csv.gz")),
              "split/time/nodetype-has-split.csv.gz", "split/time/paper/train.csv.gz",
              "split/time/paper/valid.csv.gz", "split/time/paper/test.csv.gz")
_PLANETOID = "https://github.com/kimiyoung/planetoid/raw/master/data/ind.{}.{}"
_PLANETOID_PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")
_SHCHUR = "https://github.com/shchur/gnn-benchmark/raw/master/data/npz/{}"


def _planetoid(name: str, title: str, nodes: int, edges: int, features: int, classes: int) -> Source:
    return Source(name, nodes, edges, features, classes, "multiclass",
                  "Planetoid (Yang et al. 2016; Kipf & Welling's GCN): 20 per class train, 500 val, 1000 test",
                  " ".join(_PLANETOID.format(name, p) for p in _PLANETOID_PARTS),
                  "MIT (kimiyoung/planetoid)", (".", "planetoid", f"{title}/raw"),
                  tuple(f"ind.{name}.{p}" for p in _PLANETOID_PARTS), "planetoid")


def _amazon(name: str, title: str, npz: str, nodes: int, edges: int, features: int, classes: int) -> Source:
    return Source(name, nodes, edges, features, classes, "multiclass",
                  "Shchur et al. 2018 (as GCN-style benchmarks use it): 20 per class train, 30 per class val, "
                  "rest test, random with seed 0 (no publisher split)",
                  _SHCHUR.format(npz), "MIT (shchur/gnn-benchmark); data from McAuley et al. 2015",
                  ("amazon", ".", f"{title}/raw", f"amazon/{title}/raw"), (npz,), "amazon")


SOURCES: dict[str, Source] = {s.name: s for s in (
    _planetoid("cora", "Cora", 2708, 10556, 1433, 7),
    _planetoid("citeseer", "CiteSeer", 3327, 9104, 3703, 6),
    _planetoid("pubmed", "PubMed", 19717, 88648, 500, 3),
    Source("ogbn-arxiv", 169343, 2315598, 128, 40, "multiclass",
           "OGB time split (publisher): papers to 2017 train, 2018 val, 2019+ test",
           _OGB.format("arxiv"), "ODC-BY", ("ogbn_arxiv",), _OGB_FILES + (
               "raw/node-feat.csv.gz", "split/time/train.csv.gz", "split/time/valid.csv.gz",
               "split/time/test.csv.gz"), "ogbn_arxiv"),
    Source("ogbn-products", 2449029, 123718280, 100, 47, "multiclass",
           "OGB sales-ranking split (publisher): top 8% train, next 2% val, rest test",
           _OGB.format("products"), "Amazon license", ("ogbn_products",), _OGB_FILES + (
               "raw/node-feat.csv.gz", "split/sales_ranking/train.csv.gz", "split/sales_ranking/valid.csv.gz",
               "split/sales_ranking/test.csv.gz"), "ogbn_products"),
    Source("ogbn-proteins", 132534, 79122504, 8, 112, "multilabel",
           "OGB species split (publisher); 112 binary tasks, ROC-AUC",
           _OGB.format("proteins"), "CC-0", ("ogbn_proteins",), _OGB_FILES + (
               "raw/edge-feat.csv.gz", "split/species/train.csv.gz", "split/species/valid.csv.gz",
               "split/species/test.csv.gz"), "ogbn_proteins"),
    # typed: nodes over every type, edges over the 4 relations and the 3 reverses gnnbench adds
    # (Note [reverse relations of real datasets]), features the papers' (datasets/ogb_mag.py)
    Source("ogbn-mag", 1939743, 36805743, 128, 349, "multiclass",
           "OGB time split (publisher), on papers: to 2017 train, 2018 val, 2019 test",
           _OGB.format("mag"), "ODC-BY", ("ogbn_mag", "mag"), _MAG_FILES, "ogbn_mag"),
    Source("reddit", 232965, 114615892, 602, 41, "multiclass",
           "GraphSAGE (Hamilton et al. 2017, publisher): node_types 1 train, 2 val, 3 test",
           "https://data.dgl.ai/dataset/reddit.zip", "research use (GraphSAGE); no explicit license",
           ("reddit", "reddit/reddit", "Reddit/raw", "."), ("reddit_data.npz", "reddit_graph.npz"), "reddit"),
    _amazon("amazon-computers", "Computers", "amazon_electronics_computers.npz", 13752, 491722, 767, 10),
    _amazon("amazon-photo", "Photo", "amazon_electronics_photo.npz", 7650, 238162, 745, 8),
)}


def data_root(data_dir: str | os.PathLike | None) -> tuple[Path, str]:
    """The data root (Note [raw data folders]) and what named it, for messages."""
    if data_dir is not None:
        return Path(data_dir).expanduser(), "--data-dir"
    if os.environ.get("GNNBENCH_DATA_DIR"):
        return Path(os.environ["GNNBENCH_DATA_DIR"]).expanduser(), "GNNBENCH_DATA_DIR"
    return cache_root() / "data", "the download cache"


def missing_files_message(source: Source, root: Path) -> str:
    """One line saying which files are expected where, and the two ways to get them."""
    where = root / source.folders[0]
    files = ", ".join(source.files) if len(source.files) <= 4 else f"{source.files[0]} ... ({len(source.files)} files)"
    return (f"run `gnnbench datasets fetch {source.name}` on a machine with internet, or put {files} from "
            f"{source.urls[0]}{' ...' if len(source.urls) > 1 else ''} (extracted) in {where} and pass "
            f"--data-dir {root}")


def find_raw_folder(source: Source, data_dir: str | os.PathLike | None) -> Path:
    """The folder holding every raw file of ``source`` (Note [raw data folders]).

    Raises:
        UserError: the data root does not exist, or no candidate folder holds
            every file (the message names the files and where they go).
    """
    root, named_by = data_root(data_dir)
    if named_by != "the download cache" and not root.is_dir():
        raise UserError(f"data folder {root} (from {named_by}) does not exist; pass an existing folder")
    for folder in source.folders:
        candidate = root / folder
        if all((candidate / f).is_file() for f in source.files):
            return candidate
    raise UserError(f"no {source.name} files in {root}: {missing_files_message(source, root)}")


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def sha256_of_files(folder: Path, files: tuple[str, ...]) -> dict[str, dict[str, object]]:
    """``{file: {"sha256", "bytes"}}`` of the raw files a cache was converted from (for its manifest)."""
    return {f: {"sha256": file_sha256(folder / f), "bytes": (folder / f).stat().st_size} for f in files}
