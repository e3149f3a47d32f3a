"""``gnnbench datasets [--sizes]`` lists datasets; ``gnnbench datasets fetch NAME`` downloads one."""
from __future__ import annotations

from ._common import print_json

HELP = "list datasets (sizes, source, license, whether present) or `fetch NAME` to download one"


def add_arguments(p) -> None:
    p.add_argument("action", nargs="?", default="list", choices=("list", "fetch"),
                   help="list (default) or fetch NAME")
    p.add_argument("name", nargs="?", default=None, help="dataset to fetch, e.g. ogbn-arxiv")
    p.add_argument("--data-dir", default=None,
                   help="folder of raw dataset files (default: $GNNBENCH_DATA_DIR, else the download cache)")
    p.add_argument("--sizes", action="store_true", help="load each present dataset and show its actual sizes")
    p.add_argument("--url", default=None, help="fetch from this mirror instead of the publisher's URL")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the network (default: 10)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar while fetching")
    p.add_argument("--json", action="store_true")


def run(data_dir: str | None = None, sizes: bool = False) -> list[dict]:
    """One entry per dataset: description, published sizes, task, source, license, presence, how to get it."""
    import os

    from gnnbench.datasets import list_datasets, load_dataset
    from gnnbench.datasets.cache import read_manifest
    from gnnbench.datasets.fetch import describe_local
    from gnnbench.datasets.registry import canonical_name, typed_listing
    from gnnbench.datasets.sources import SOURCES
    from gnnbench.errors import UserError

    if data_dir is not None and not os.path.isdir(os.path.expanduser(data_dir)):
        raise UserError(f"data folder {data_dir} (from --data-dir) does not exist; pass an existing folder")
    out = []
    for info in list_datasets():
        entry: dict = {"name": info.name, "description": info.description,
                       "parameters": dict(info.parameters) if info.parameters else {},
                       "needs_data_dir": info.needs_data_dir}
        source = SOURCES.get(info.name)
        if source is not None:
            present, where = describe_local(info.name, data_dir)
            cached = read_manifest(info.name) is not None
            entry.update({"nodes": source.nodes, "edges": source.edges, "features": source.features,
                          "classes": source.classes, "task": source.task, "split": source.split,
                          "source": source.urls[0] + (f" (+{len(source.urls) - 1} files)" if len(source.urls) > 1
                                                      else ""),
                          "license": source.license, "present": present or cached,
                          "where": where if present else ("converted cache" if cached else where),
                          "how_to_get": (f"gnnbench datasets fetch {info.name}, or put the publisher's files in "
                                         f"{where} (--data-dir / GNNBENCH_DATA_DIR)")})
        elif info.name == "igbh":  # a real typed dataset that gnnbench cannot fetch: where its files go
            from gnnbench.datasets.igbh import local

            entry.update(local(data_dir))
        else:
            # a synthetic default (rmat: 4M edges) is measured only once generated: --sizes must stay quick
            cached = not info.parameters or read_manifest(canonical_name(info.name)) is not None
            entry.update({"source": "generated", "license": "-", "present": cached,
                          "how_to_get": "generated on first use"})
        typed = typed_listing(info.name, data_dir)  # each typed dataset with its node types and relations
        if typed:
            entry["typed"] = typed
        if sizes and entry["present"]:
            try:
                entry.update(load_dataset(info.name, data_dir=data_dir).describe())
                entry["measured"] = True
            except UserError as err:
                entry["unavailable"] = str(err)
        out.append(entry)
    return out


def fetch(name: str, data_dir: str | None = None, url: str | None = None, timeout: float = 10.0,
          progress: bool = True) -> dict:
    """Download, check and extract ``name``; return where it went and the sha256 of each download."""
    from gnnbench.datasets.fetch import fetch as fetch_dataset

    done = fetch_dataset(name, data_dir=data_dir, url=url, timeout=timeout, progress=progress)
    return {"name": done.name, "folder": str(done.folder), "sha256": done.downloads}


def main(args) -> int:
    from gnnbench.errors import UserError

    if args.action == "fetch":
        if not args.name:
            raise UserError("gnnbench datasets fetch needs a dataset name, e.g. `gnnbench datasets fetch ogbn-arxiv`")
        result = fetch(args.name, args.data_dir, args.url, args.timeout, not args.no_progress)
        if args.json:
            print_json(result)
        else:
            print(f"{result['name']}: files in {result['folder']}")
            for link, digest in result["sha256"].items():
                print(f"  sha256 {digest}  {link}")
        return 0
    if args.name:
        raise UserError(f"unexpected '{args.name}': `gnnbench datasets` lists, `gnnbench datasets fetch NAME` fetches")
    rows = run(args.data_dir, args.sizes)
    if args.json:
        print_json(rows)
        return 0
    from gnnbench.results.tables import print_table

    for i, table in enumerate(tables(rows)):
        if i:
            print()
        print_table(table)
    return 0


def tables(rows: list[dict]):
    """Three tables: sizes and presence; source, license and folder; the split or what a generator makes."""
    from gnnbench.results.tables import Table

    def task(r: dict) -> str:
        if "classes" not in r:
            return ""
        return f"{r['classes']} tasks (multi-label)" if r.get("task") == "multilabel" else f"{r['classes']} classes"

    def count(r: dict, key: str) -> str:
        return f"{r[key]:,}" if isinstance(r.get(key), int) else ""

    def state(r: dict) -> str:
        if r["source"] == "generated":
            return "generated" if r["present"] else "generated on first use"
        return "present" if r["present"] else "not present"

    sizes = Table(["dataset", "nodes", "edges", "features", "task", "sizes", "here"],
                  [[r["name"], count(r, "nodes"), count(r, "edges"), count(r, "features"), task(r),
                    "measured" if r.get("measured") else "published" if "nodes" in r else "", state(r)]
                   for r in rows], numeric=[False, True, True, True])
    sizes.notes += [f"{r['name']}: unavailable: {r['unavailable']}" for r in rows if "unavailable" in r]
    missing = [r for r in rows if r["source"] != "generated" and not r["present"]]
    if missing:
        sizes.notes.append("to get one that is not present: `gnnbench datasets fetch NAME`, or put the "
                           "publisher's files in its folder below (--data-dir / GNNBENCH_DATA_DIR)")

    def about(r: dict) -> str:
        if r["parameters"]:
            return f"{r['description']}; parameters: {', '.join(f'{k}={v}' for k, v in r['parameters'].items())}"
        return r.get("split") or r["description"]

    published = [r for r in rows if r["source"] != "generated"]
    origin = Table(["dataset", "source", "license", "folder"],
                   [[r["name"], r["source"], r["license"], r["where"]] for r in published], title="where from")
    what = Table(["dataset", "split, or what it is"], [[r["name"], about(r)] for r in rows], title="what it is")
    typed = [p for r in rows for p in r.get("typed", ())]

    def relations(p: dict) -> str:
        shown = p["relations"][:8]
        more = len(p["relations"]) - len(shown)
        return f"{len(p['relations'])}: " + ", ".join(shown) + (f", ... ({more} more)" if more else "")

    def node_types(p: dict) -> str:
        return ", ".join(f"{t} {'?' if v['nodes'] is None else format(v['nodes'], ',')}x{v['features']}"
                         for t, v in p["node_types"].items())

    types = Table(["dataset", "scale", "node types (nodes x features)", "target", "relations"],
                  [[p["name"], f"{p['scale']:g}" if "scale" in p else "-", node_types(p),
                    f"{p['target']} ({p['classes']} classes)", relations(p)] for p in typed],
                  title="typed datasets (hetero:like=NAME,scale=S: scale multiplies every count; ogbn-mag and "
                        "igbh: counts from their files, else as published, ? where unpublished)")
    return [sizes, origin, what] + ([types] if typed else [])
