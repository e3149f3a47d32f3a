"""``gnnbench verify``: check a system against ``reference`` and record the verdict.

Exit status: 0 when the system passes (or cannot run here because a package
or device is missing, printed as skipped with the reason), 1 when it fails
(including kernels that cannot be loaded, crash or hang: the whole report is
printed first), 2 on bad input.
"""
from __future__ import annotations

from gnnbench.verify.settings import DEFAULT_TIME_LIMIT, VerifySettings

from ._common import add_results_option, open_store, print_json

HELP = "check a system's operators and training against reference (the gate before its figures count)"


class _OperatorNames:
    """The system API's operator names as ``--operator``'s choices, read from ``gnnbench/api.gnn`` only when the
    option is given (every command builds this parser; the API costs a third of a second to parse)."""

    def __iter__(self):
        from gnnbench.api import OPERATORS

        return iter(OPERATORS)

    def __contains__(self, name) -> bool:
        return name in tuple(self)


def add_arguments(p) -> None:
    p.add_argument("--system", required=True, help="kernel system to verify (see `gnnbench systems`)")
    p.add_argument("--operator", choices=_OperatorNames(), default=None, metavar="OPERATOR",
                   help="only this operator's conformance cases (recorded only if it fails): an operator of "
                        "gnnbench/api.gnn, e.g. spmm")
    p.add_argument("--slow", action="store_true",
                   help="also run the case whose flat element index passes 2^31 (needs ~44 GiB free memory)")
    p.add_argument("--fast", action="store_true", help="the CI subset: fewer widths and head counts, blocks at one shape, the size "
                   "ladder on one variant per operator, float32 sampled (PROFILES in gnnbench/check/conformance.py, "
                   "Note [what runs] in gnnbench/check/dims.py)")
    p.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    p.add_argument("--framework", default="torch",
                   help="framework whose glue is verified: torch or tensorflow (default: torch)")
    p.add_argument("--threads", default=None, help="torch threads for the system, at most the CPUs this process may "
                   "run on (default: unchanged)")
    p.add_argument("--no-e2e", action="store_true", help="skip end-to-end training parity and the model checks")
    p.add_argument("--time-limit", type=float, default=None,
                   help="seconds a check group may go without progress before it counts as hung "
                        f"(default: {DEFAULT_TIME_LIMIT:g})")
    p.add_argument("--fallback", default=None, metavar="SYSTEM",
                   help="end-to-end training borrows the operators the system lacks from SYSTEM, e.g. reference")
    p.add_argument("--no-store", action="store_true", help="do not record the verification")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    add_results_option(p)


def settings_from(args):
    """The :class:`~gnnbench.verify.settings.VerifySettings` that ``args`` ask for, built once here; the framework,
    device and threads checked as ``run`` checks them, the time limit a positive number of seconds (bad input
    is refused, never verified and reported "skipped" or "failed")."""
    import math

    from gnnbench.errors import UserError
    from gnnbench.run.config import check_fields
    from gnnbench.run.preflight import check_threads

    given = {"framework": args.framework, "device": args.device}
    if args.threads is not None:
        given["threads"] = args.threads
    checked = check_fields(given)
    check_threads(checked.get("threads"))
    if args.time_limit is not None and not (math.isfinite(args.time_limit) and args.time_limit > 0):
        raise UserError(f"--time-limit must be a positive number of seconds (got {args.time_limit:g})")
    return VerifySettings(operator=args.operator, slow=args.slow, profile="fast" if args.fast else "full",
                          framework=checked["framework"], device=checked["device"], threads=checked.get("threads"),
                          e2e=not args.no_e2e, time_limit=args.time_limit or DEFAULT_TIME_LIMIT,
                          fallback=args.fallback)


def run(system: str, settings: VerifySettings, store_path: str | None = None, store: bool = True):
    """Verify ``system`` as ``settings`` say and record the outcome in the results store unless ``store`` is false;
    returns the :class:`VerifyReport`."""
    from gnnbench.verify.suite import verify

    if not store:
        return verify(system, settings)
    with open_store(store_path) as db:
        return verify(system, settings, store=db)


def main(args) -> int:
    report = run(args.system, settings_from(args), args.results, not args.no_store)
    if args.json:
        print_json(report.as_dict())
    else:
        print_report(report)
    return 1 if report.status == "failed" else 0


# ----------------------------------------------------------------- rendering
_MESSAGES_SHOWN = 3


def _row_detail(row) -> list[str]:
    """The detail cell's entries, each a line; an entry's own line breaks indent what follows them."""
    return [entry.replace("\n", "\n  ") for entry in _detail_entries(row)]


def _detail_entries(row) -> list[str]:
    if row.status == "skipped":
        return [row.reason]
    if row.status == "passed":
        return [row.detail] if row.detail else []
    if row.cases <= 1:
        return row.failures[:_MESSAGES_SHOWN] or ["failed"]
    head = f"{row.failed_cases} of {row.cases} cases failed"
    if row.failed_graphs:
        head += f" (graphs: {', '.join(row.failed_graphs)})"
    return [head, *row.failures[:_MESSAGES_SHOWN]]


def render(report) -> str:
    """The whole report as plain text: settings, the per-operator table, the verdict."""
    head, table, verdict = _parts(report)
    return "\n".join([*head, *([table.render("text").rstrip("\n")] if table else []), *verdict])


def print_report(report) -> None:
    """:func:`render`, with the table drawn by rich on a terminal (:func:`~gnnbench.results.tables.print_table`)."""
    from gnnbench.results.tables import print_table

    head, table, verdict = _parts(report)
    print("\n".join(head))
    if table is not None:
        print_table(table)
    if verdict:
        print("\n".join(verdict))


def checks_table(report):
    """The per-operator table: status, cases, seconds and, for failures, what exposed them."""
    from gnnbench.results.tables import Table

    rows = []
    for row in report.rows():
        status = row.status.upper() if row.status == "failed" else row.status
        rows.append([row.operator, status, str(row.cases) if row.cases else "-",
                     f"{row.seconds:.1f} s" if row.seconds else "-", "\n".join(_row_detail(row))])
    return Table(["check", "status", "cases", "time", "detail"], rows, numeric=[False, False, True, True],
                 multiline=[False, False, False, False, True])


def _parts(report):
    s = report.settings
    head = [f"verify {report.system} {report.system_version} (hash {report.system_hash}) against reference"
            + (f": {s['framework']} {' and '.join(s.get('dtypes') or [s['dtype']])} on {s['device']}, {s['profile']} suite, "
               f"guard {'on' if s['guard'] else 'off'}, tolerance {s['tolerance']}" if s else "")]
    if report.status == "skipped":
        head.append(f"skipped: {report.system} cannot run here: {report.reason}; nothing recorded")
        return head, None, []
    head.extend(f"note: {note}" for note in s.get("notes", ()))
    verdict = f"verdict: {report.status} in {report.seconds:.1f} s"
    if report.largest_graph:
        g = report.largest_graph
        verdict += f"; largest graph checked {g['graph']} ({g['edges']:,} edges, {g['check']})"
    if report.recorded_id is not None:
        verdict += f"; recorded as verification {report.recorded_id} in {report.recorded_in}"
    else:
        verdict += "; not recorded" + (" (a passing partial run does not verify a system)"
                                       if report.status == "passed" and any(r.reason.startswith("needs every")
                                                                            for r in report.end_to_end) else "")
    return head, checks_table(report), [verdict]
