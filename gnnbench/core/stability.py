"""When a figure is too unsteady to claim anything: every stability threshold, stated once.

pyperf warns about a benchmark whose values spread too much, whose extremes sit
far from the centre, or whose processes are too few for the precision asked of
it; gnnbench adds a fourth reason that pyperf leaves to the user: other
processes took a share of the CPUs while the run was timed. Every consumer
(``gnnbench run``'s summary, ``compare``'s marks, the report, ``--strict``) reads
the limits here and nowhere else.

Note [stability thresholds]
    * :data:`SPREAD_LIMIT` (10 %): a spread above it makes a figure unstable:
      within one process the epochs' IQR / median (the noise mark ``(! XX%)``,
      ``torch.utils.benchmark``'s 10 %), across processes the standard deviation
      of the per-process medians over their mean (pyperf's "standard deviation
      is at least 10 % of the mean").
    * :data:`OUTLIER_LIMIT` (50 %): a process median 50 % or more away from the
      median of process medians (pyperf's "minimum or maximum is 50 % from the
      mean").
    * :data:`OTHER_CPU_LIMIT` (10 %): other processes took more than this share
      of the CPUs the worker was allowed to use while it ran (from
      ``/proc/stat``, less the worker's own time; steal time counted as taken).
    * :data:`PRECISION` (5 %) and :data:`MIN_PROCESSES` (5): the relative
      half-width asked of a 95 % interval of the median of process medians, and
      the fewest processes that a comparison needs before it claims any
      significance at that precision (pyperf runs 20 processes by default;
      campaigns behind published tables run at least 5).

    A figure flagged unstable is still shown, never dropped: the flag says why
    it cannot carry a significance mark, and a quieter rerun is the remedy.

Note [too few processes withholds]
    pyperf only warns when a benchmark has fewer processes than its precision
    needs; here the shortfall withholds the mark, like the other reasons.
    The A/A benchmark is why (its figures: results/design_figures.md): on a
    shared machine the spread between processes asks for far more processes
    than a campaign runs, and with five a true slowdown of a tenth was seen
    as significant only now and then. A mark right that rarely is a coin the
    reader cannot see; "5 processes, 44 needed" tells them what buys a
    verdict (``--repeat``, ``rounds``). The interval is still printed, and
    no identical pair was marked in either condition, so what is withheld is
    only the claims the processes cannot support.
"""
from __future__ import annotations

__all__ = ["SPREAD_LIMIT", "OUTLIER_LIMIT", "OTHER_CPU_LIMIT", "PRECISION", "MIN_PROCESSES"]

#: relative spread above which a figure is unstable: IQR/median within a process, stdev/mean across processes
SPREAD_LIMIT = 0.10
#: a process median this far (relative) from the median of process medians is an outlier
OUTLIER_LIMIT = 0.50
#: share of the worker's allowed CPUs taken by other processes during the run above which it is flagged
OTHER_CPU_LIMIT = 0.10
#: relative half-width asked of the 95 % interval of a median of process medians
PRECISION = 0.05
#: fewest processes per configuration before a comparison claims significance; campaigns default to it
MIN_PROCESSES = 5
