"""The thread pools of a run, configured once by the platform for every system alike: which threading layer
numba uses, how the OpenMP pools wait, and how many threads each pool gets.

Note [thread pools]
    A run's process holds several thread pools: numba's (isplib's, dgnn's
    and pim's kernels, the platform's own sampler, dropout and CSR
    transpose), the framework's OpenMP pool (torch's intra-op ops, MKL),
    torch's inter-op pool, TensorFlow's Eigen pools. Left to their
    defaults, numba picks its ``omp`` layer, a second GNU OpenMP runtime
    beside torch's own, and both runtimes' workers spin after every
    parallel section waiting for the next. On an idle machine that costs
    nothing; with as many threads as cores and one other busy process
    beside the run, the spinning workers of one pool hold the cores the
    other pool's next section needs, and every small section waits for
    the scheduler's time slice. Sampled SAGE on Cora at batch 16 runs
    hundreds of small sections an epoch, and issue 43 found isplib's epoch
    forty times its one-thread figure at two threads, its optimizer (torch's
    Adam, the same code as reference's) over a hundred times reference's.
    The figures behind the choices below, each layer and wait policy and
    the case before and after, are tables in ``results/studies/batch_cost.md``
    (``benchmarks/studies/bench_batch_cost.py``).

    The pools table there says what decides it: with GNU OpenMP's default
    wait, isplib's and reference's epochs ran seconds under either numba
    layer; told to sleep, a tenth of that under either layer, since numba's
    ``omp`` layer is GNU OpenMP too and follows the same policy. Between the
    two layers the table shows no difference beyond its noise; the issue
    measured ``workqueue`` ahead at OpenMP's default wait, and it leaves one
    OpenMP runtime in the process instead of two.

    So a worker starts with (:func:`pool_environment`):

    * numba's ``workqueue`` layer (:data:`NUMBA_LAYER`): its workers block
      on a condition instead of spinning, and it is not an OpenMP runtime,
      so only one OpenMP runtime is left. It is slower to launch a section
      on an idle machine, which is why small sections run serially (Note
      [serial below a size] in :mod:`gnnbench.runtime.serial`). It is not
      safe to launch sections from two threads at once; gnnbench calls
      kernels from one thread (TensorFlow's eager ops run a kernel on the
      calling thread; its one ``tf.function``, the optimizer's update, calls
      none).
    * the OpenMP pools told to sleep at once after a section
      (``OMP_WAIT_POLICY=PASSIVE``; ``KMP_BLOCKTIME=0`` for an Intel
      OpenMP runtime, which MKL may load): a sleeping worker frees its core
      for whatever runs next, in this process or beside it.
    * with ``--threads N``: every pool sized ``N`` (``OMP_NUM_THREADS``,
      ``MKL_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``NUMBA_NUM_THREADS``,
      TensorFlow's ``TF_NUM_INTRAOP_THREADS``), and torch's inter-op pool
      one thread (:data:`INTEROP_THREADS`): the training loop is one chain
      of ops, so a second pool of ``N`` threads would only wait beside the
      first. TensorFlow's inter-op pool is left to TensorFlow, whose
      graph functions need it.

    A variable already set in the caller's environment is kept (a user
    comparing layers sets ``NUMBA_THREADING_LAYER`` for the run), except
    the thread counts, which ``--threads`` decides. An ``--in-process``
    run gets what can still be set in a running process
    (:func:`configure_this_process`): numba's layer if numba has not yet
    started its pool, numba's and torch's thread counts, torch's inter-op
    pool if it has not started; the OpenMP runtime reads its wait policy
    only when it loads. Every successful row records what its process
    actually ran under (``extra.thread_pools``, :func:`pools_in_use`), so
    two rows that differ in it are told apart.
"""
from __future__ import annotations

import os
import sys

from gnnbench.results.row import ThreadPools

__all__ = ["NUMBA_LAYER", "WAIT_POLICY", "INTEROP_THREADS", "pool_environment", "configure_this_process",
           "numba_pool_started", "pools_in_use"]

#: Note [thread pools]: numba's threading layer in every run.
NUMBA_LAYER = "workqueue"
#: Note [thread pools]: how the OpenMP runtimes' workers wait between parallel sections.
WAIT_POLICY = {"OMP_WAIT_POLICY": "PASSIVE", "KMP_BLOCKTIME": "0"}
#: Note [thread pools]: torch's inter-op pool when ``--threads`` is given.
INTEROP_THREADS = 1
#: the variables that size each pool to ``--threads``
_THREAD_COUNTS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS",
                  "TF_NUM_INTRAOP_THREADS")


def pool_environment(threads: int | None, base: dict[str, str]) -> dict[str, str]:
    """``base`` with the variables that configure a new process's thread pools (Note [thread pools]).

    Args:
        threads (int, optional): ``--threads``; None leaves the pools' sizes to the libraries.
        base (dict): the environment the process would otherwise get; its own layer and wait policy win.
    """
    env = dict(base)
    env.setdefault("NUMBA_THREADING_LAYER", NUMBA_LAYER)
    for name, value in WAIT_POLICY.items():
        env.setdefault(name, value)
    if threads:
        for name in _THREAD_COUNTS:
            env[name] = str(threads)
    return env


def configure_this_process(threads: int | None) -> None:
    """Give this process's pools what :func:`pool_environment` gives a worker, as far as a running process
    still can (Note [thread pools]); a worker started with that environment is left as it is."""
    numba = sys.modules.get("numba")
    if numba is not None and not numba_pool_started():
        numba.config.THREADING_LAYER = os.environ.get("NUMBA_THREADING_LAYER", NUMBA_LAYER)
    if not threads:
        return
    if numba is not None:
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)
        if torch.get_num_interop_threads() != INTEROP_THREADS:
            try:
                torch.set_num_interop_threads(INTEROP_THREADS)
            except RuntimeError:  # the pool has started in this process: it keeps its size, which is recorded
                pass


def numba_pool_started() -> bool:
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    return bool(parallel is not None and parallel._is_initialized)


def pools_in_use(threads: int | None) -> ThreadPools:
    """What this process's pools run under now: the record of ``extra.thread_pools`` (Note [thread pools])."""
    numba_layer = numba_threads = None
    if numba_pool_started():
        import numba

        numba_layer, numba_threads = numba.threading_layer(), numba.get_num_threads()
    torch = sys.modules.get("torch")
    return ThreadPools(threads=threads, numba_layer=numba_layer, numba_threads=numba_threads,
                       omp_wait_policy=os.environ.get("OMP_WAIT_POLICY"),
                       torch_threads=torch.get_num_threads() if torch is not None else None,
                       torch_interop_threads=torch.get_num_interop_threads() if torch is not None else None)
