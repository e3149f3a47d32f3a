"""``gnnbench datasets``: dataset names, their parameters and sizes."""
from __future__ import annotations

from ._common import print_json

HELP = "list datasets (with sizes when --sizes) and the parameters of synthetic ones"


def add_arguments(p) -> None:
    p.add_argument("--data-dir", default=None, help="folder of raw dataset files (Planetoid)")
    p.add_argument("--sizes", action="store_true", help="load each available dataset and show its sizes")
    p.add_argument("--json", action="store_true")


def run(data_dir: str | None = None, sizes: bool = False) -> list[dict]:
    from gnnbench.datasets import list_datasets, load_dataset
    from gnnbench.errors import UserError

    out = []
    for info in list_datasets():
        entry = {"name": info.name, "description": info.description,
                 "parameters": dict(info.parameters) if info.parameters else {},
                 "needs_data_dir": info.needs_data_dir}
        if sizes:
            try:
                entry.update(load_dataset(info.name, data_dir=data_dir).describe())
            except UserError as err:
                entry["unavailable"] = str(err)
        out.append(entry)
    return out


def main(args) -> int:
    rows = run(args.data_dir, args.sizes)
    if args.json:
        print_json(rows)
        return 0
    for r in rows:
        params = ", ".join(f"{k}={v}" for k, v in r["parameters"].items())
        size = ""
        if "nodes" in r:
            size = f"  [{r['nodes']} nodes, {r['edges']} edges, {r['features']} features, {r['classes']} classes]"
        elif "unavailable" in r:
            size = f"  [unavailable: {r['unavailable']}]"
        print(f"{r['name']:<10} {r['description']}{size}")
        if params:
            print(f"{'':<10}   parameters: {params}")
    return 0
