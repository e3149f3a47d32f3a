"""gnnbench/core/phases.py: the timed phases declared once, and everything that reaches them by name."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gnnbench.core.measurement import Measurement
from gnnbench.core.phases import FULL, PHASES, SAMPLED, phase, steps
from gnnbench.results.row import RUN_COLUMNS
from gnnbench.run.loop import Phases


def test_each_loop_times_its_steps_in_the_order_they_run():
    names = lambda phases: [p.name for p in phases]  # noqa: E731
    assert names(steps(FULL)) == ["forward", "backward", "optimizer"]
    assert names(steps(FULL, "inference")) == ["forward"]
    assert names(steps(SAMPLED)) == ["sample", "gather", "block_prepare", "forward", "backward", "optimizer"]
    assert names(steps(SAMPLED, "inference")) == ["sample", "gather", "block_prepare", "forward"]


def test_every_phase_has_its_columns_in_the_row():
    columns = {c.name for c in RUN_COLUMNS}
    for p in PHASES:
        assert {p.median, p.samples, *([p.iqr] if p.iqr else [])} <= columns, p.name
    assert (phase("kernel").median, phase("kernel").samples) == ("kernel_median_s", "kernel_times")


def test_a_phase_whose_columns_the_row_declares_in_part_is_refused():
    from gnnbench.results.row import _with_phase_columns

    class Partial:
        __annotations__ = {"forward_median_s": "float | None"}

    with pytest.raises(TypeError, match=r"^phase 'forward' has columns \['forward_median_s', 'forward_times'\], "
                                        r"but Partial declares only \['forward_median_s'\]"):
        _with_phase_columns(Partial)


def test_a_measurement_reads_any_phase_from_its_own_columns():
    row = {"kernel_times": None, "kernel_median_s": 0.004, "forward_times": [0.1, 0.3, 0.2]}
    assert Measurement.from_row(row, "kernel").median == pytest.approx(0.004)  # was read as kernel_time_median_s
    assert Measurement.from_row(row, "forward").median == pytest.approx(0.2)
    with pytest.raises(KeyError, match="no timed phase 'fwd'; the phases are epoch, sample, gather"):
        Measurement.from_row(row, "fwd")


class _Clock:
    def __init__(self, *readings: float):
        self.readings = list(readings)

    def __call__(self) -> float:
        return self.readings.pop(0)


def test_laps_are_summed_over_an_epochs_steps_and_an_epoch_is_their_sum():
    phases = Phases(_Clock(0.0, 1.0, 2.0, 10.0, 11.0, 12.0, 20.0, 21.0, 23.0))
    phases.epoch_starts(0, warmup=1)
    phases.start_step()
    phases.lap("sample")
    phases.lap("forward")
    phases.end_epoch(timed=False)  # a warm-up: nothing filed
    phases.epoch_starts(1, warmup=1)
    for _ in range(2):
        phases.start_step()
        phases.lap("sample")
        phases.lap("forward")
    assert phases.step_seconds == 3.0
    phases.end_epoch(timed=True)
    assert phases.seconds["sample"] == [2.0] and phases.seconds["forward"] == [3.0]
    assert phases.seconds["epoch"] == [5.0] and phases.seconds["backward"] == []
    columns = phases.columns()
    assert columns["sample_median_s"] == 2.0 and "backward_median_s" not in columns
    assert columns["epoch_time_iqr_s"] == 0.0
    with pytest.raises(KeyError, match="no timed phase 'gathr'"):
        phases.lap("gathr")


# A phase added to the declaration alone, before anything derives from it; the subprocess then looks for it in
# the row's columns, a store's round trip, the loop's timers, the printed summary and the figure.
_ADDED_PHASE = textwrap.dedent('''
    import io
    from gnnbench.core import phases as declared

    transfer = declared.Phase("transfer", "the batch's tensors to the device", (declared.SAMPLED,))
    at = [p.name for p in declared.PHASES].index("forward")
    declared.PHASES = (*declared.PHASES[:at], transfer, *declared.PHASES[at:])

    from gnnbench.cli.run import summary
    from gnnbench.core.measurement import Measurement
    from gnnbench.results.phases_figure import PHASES as DRAWN, phase_shares
    from gnnbench.results.row import RUN_COLUMNS, RunResult
    from gnnbench.results.schema_doc import schema_markdown
    from gnnbench.results.store import ResultsStore
    from gnnbench.run.loop import Phases

    names = [c.name for c in RUN_COLUMNS]
    assert names[-2:] == ["transfer_median_s", "transfer_times"], names[-4:]
    assert "| `transfer_median_s` | REAL | Median of the seconds per epoch of phase `transfer`" in schema_markdown()

    clock = iter([0.0, 1.0, 3.0])
    phases = Phases(lambda: next(clock))
    phases.epoch_starts(0, 0)
    phases.start_step()
    phases.lap("sample")
    phases.lap("transfer")
    phases.end_epoch(True)
    assert phases.columns()["transfer_times"] == [2.0] and phases.seconds["epoch"] == [3.0]

    seconds = dict(sample=0.1, gather=0.2, block_prepare=0.3, transfer=0.05, forward=1.0, backward=0.8,
                   optimizer=0.4)
    row = dict(status="ok", system="reference", system_version="1.0", model="sage", dataset="cora",
               dataset_nodes=10, dataset_edges=20, framework="torch", framework_version="2", device="cpu",
               warmup=1, epoch_time_median_s=2.85, epoch_time_iqr_s=0.0, epoch_times=[2.85],
               prepare_time_s=0.1, peak_memory_bytes=2**20, train_accuracy=1.0, val_accuracy=1.0,
               test_accuracy=1.0, seeds_per_s=100.0, edges_per_s=1000.0, accuracy_method="full-neighbour",
               hyperparameters={"batching": "sampled", "fanouts": [2], "batch_size": 4, "sampler": "gnnbench"},
               extra={"block_prepare_share": 0.1}, verified="passed")
    for name, value in seconds.items():
        row[name + "_median_s"], row[name + "_times"] = value, [value]
    with ResultsStore(":memory:") as store:
        store.insert(RunResult.from_row(row).to_row())
        [stored] = store.rows()
    assert stored["transfer_median_s"] == 0.05 and stored["transfer_times"] == [0.05]
    assert Measurement.from_row(stored, "transfer").median == 0.05

    text = summary(stored)
    assert "  sampled    sample 100.00 ms, gather 200.00 ms, block prepare 300.00 ms, transfer 50.00 ms" in text, text
    assert "  phases     forward 1000.00 ms, backward 800.00 ms, optimizer 400.00 ms" in text, text

    assert [label for label, _ in DRAWN] == ["sample", "gather", "block prepare", "transfer", "forward",
                                             "backward", "optimizer"]
    [group] = phase_shares([stored]).values()
    assert group["reference"]["shares"]["transfer"] == 0.05 / sum(seconds.values())
    print("ok")
''')


def test_a_phase_declared_in_one_place_reaches_the_row_store_loop_summary_and_figure():
    done = subprocess.run([sys.executable, "-c", _ADDED_PHASE], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2], timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
