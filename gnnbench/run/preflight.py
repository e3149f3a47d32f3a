"""Checks of a run configuration against this machine, made before any worker starts.

:class:`~gnnbench.run.config.RunConfig` checks what a value can be on its own
(Note [one run configuration]); :func:`check` checks what needs the
machine: the system and framework exist and run here, the model's epochs
exceed the warm-ups, the raw files of a dataset are present, the memory
allocator is installed, the pinned CPUs (``--cpus``) are ones this process may use, and the system options
are ones the system declares.
Each failure is one :class:`~gnnbench.errors.UserError` line, exit status 2.
``run``, ``sweep`` (and campaigns) and ``verify`` check a run's limits on this machine through one function,
:func:`check_limits` (Note [limits of a run on this machine]).

Note [limits of a run on this machine]
    ``--cpus`` names CPUs this process may run on (``os.sched_getaffinity``), and ``--threads`` is at most
    as many as those CPUs. A thread beyond one a CPU only takes turns with another, so its figures
    measure the scheduler, not the kernels (the same reason a pinned run's threads never exceed its CPUs,
    Note [pinned runs]); and far beyond, torch's OpenMP pool does not fail cleanly: ``--threads 2048`` on
    two CPUs dies in the worker with SIGSEGV. Refusing here turns that crash, stored as a ``crashed`` row,
    into one line before anything runs, the same for every command that starts runs.

Note [system options]
    A system declares its options by its ``configure`` hook's keyword
    parameters; a native baseline by its module's ``configure`` function
    (``pyg-native``: ``adjacency``, ``patch``). Options given to a system
    without one are refused. The hook itself is called once here with the
    options, so that an unknown name or a bad value (``-o aggr=fast``) is
    refused in this process, not in the worker; the worker calls it again.
"""
from __future__ import annotations

import inspect

from gnnbench.errors import UnavailableError, UserError

__all__ = ["check", "check_names", "check_options", "check_dataset_files", "check_limits", "check_threads",
           "check_model_on_dataset"]


def usable_cpus() -> int:
    """How many CPUs this process may run on (its affinity; the CPU count where affinity is unknown)."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def check_threads(threads: int | None, flag: str = "--threads") -> None:
    """``threads`` is a positive whole number no larger than the CPUs this process may use (Note [limits of a
    run on this machine]); None (the libraries' own) passes.

    Raises:
        UserError: one line naming ``flag``, the value and the bound.
    """
    if threads is None:
        return
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise UserError(f"{flag} must be a whole number of threads, at least 1 (got {threads})")
    cpus = usable_cpus()
    if threads > cpus:
        raise UserError(f"{flag} {threads} is more than the {cpus} CPU{'s' if cpus > 1 else ''} this process may "
                        f"run on: threads beyond one a CPU only take turns (see `gnnbench machine`)")


def check_limits(config, isolate: bool = True) -> None:
    """A run's limits on this machine: ``--threads`` and (isolated runs) ``--cpus`` (Note [limits of a run on this
    machine]); the one check of them ``run``, ``sweep`` and campaigns make."""
    from gnnbench.run.pinning import check_cpus

    if isolate:
        check_cpus(config.cpus)
    check_threads(config.threads)


def check_names(config):
    """The system, framework and model are known; epochs exceed the warm-ups. Returns ``config`` resolved
    (:class:`~gnnbench.run.resolved.ResolvedRun`, Note [a run resolved once])."""
    from gnnbench.frameworks import FRAMEWORKS
    from gnnbench.run.resolved import ResolvedRun
    from gnnbench.runtime.registry import system_info

    system_info(config.system)
    if config.framework not in FRAMEWORKS:
        raise UserError(f"unknown framework '{config.framework}'; choose one of: {', '.join(FRAMEWORKS)}")
    return ResolvedRun.of(config)


def check_dataset_files(config) -> None:
    """Raw files or a converted cache are present for datasets that need them, and loading fits in memory."""
    from gnnbench.datasets.registry import validate

    validate(config.dataset, config.data_dir)


def unavailable_reason(config) -> str | None:
    """Why the system cannot run here with this framework and device, or None."""
    from gnnbench.frameworks import framework_available
    from gnnbench.runtime.registry import system_info

    return framework_available(config.framework) or system_info(config.system).unavailable_reason(
        config.framework, config.device)


def check_options(config) -> None:
    """``-o KEY=VALUE`` against the options the system declares (Note [system options])."""
    if not config.system_options:
        return
    from gnnbench.runtime.registry import load_system, native_configure, system_info

    given = dict(config.system_options)
    if system_info(config.system).kind != "kernel":
        configure = native_configure(config.system)
        if configure is None:
            raise UserError(f"--option {', '.join(given)}: '{config.system}' is a native baseline and takes no "
                            f"options")
    else:
        glue = load_system(config.system, config.framework, config.device)
        if "configure" not in glue.hooks:
            raise UserError(f"--option {', '.join(given)}: system '{config.system}' takes no options (its spec "
                            f"declares no configure hook)")
        configure = glue.hook("configure")
    params = inspect.signature(configure).parameters.values()
    named = [p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not any(p.kind == p.VAR_KEYWORD for p in params):
        unknown = [k for k in given if k not in named]
        if unknown:
            raise UserError(f"--option {', '.join(unknown)}: system '{config.system}' has no such option; "
                            f"allowed: {', '.join(named) or 'none'}")
    try:
        configure(**given)
    except UserError as err:
        raise UserError(f"--option: {str(err).splitlines()[0]}") from None
    except (TypeError, ValueError) as err:
        raise UserError(f"--option: system '{config.system}' refused {given}: {err}") from None


def check(config, isolate: bool = True) -> None:
    """Every check of one configuration that can fail before training (exit status 2).

    Raises:
        UserError: a name, file, allocator or option that cannot work.
        UnavailableError: the system or framework cannot run here.
    """
    from gnnbench.run.allocator import resolve_allocator
    from gnnbench.frameworks import framework_available
    from gnnbench.runtime.registry import system_info

    run = check_names(config)
    reason = framework_available(config.framework)
    if reason:
        raise UserError(reason)
    reason = system_info(config.system).unavailable_reason(config.framework, config.device)
    if reason:
        raise UnavailableError(f"system '{config.system}' is unavailable: {reason}")
    check_dataset_files(config)
    check_limits(config, isolate)
    check_model_on_dataset(run.model_cls, run.hyper, config.dataset, config.data_dir)  # typed or not, widths
    if isolate:
        resolve_allocator(config.allocator)  # a named allocator that is not installed
    elif config.allocator not in ("auto", "system"):
        raise UserError(f"--allocator {config.allocator} needs an isolated run: an --in-process run keeps this "
                        f"process's allocator (drop --in-process or --allocator)")
    elif config.cpus is not None:
        raise UserError(f"--cpus {config.cpus} needs an isolated run: pinning an --in-process run would pin this "
                        f"process for good (drop --in-process or --cpus)")
    check_options(config)
    from gnnbench.run.sampled import check_sampling

    check_sampling(run)  # fanouts against the model's layers, batch size, sampler installed
    if config.fallback:
        from gnnbench.runtime.fallback import check_fallback

        check_fallback(config.system, config.fallback, config.framework, config.device)


def check_model_on_dataset(model_cls, hyper, dataset: str, data_dir: str | None = None) -> None:
    """Everything about running ``model_cls`` on dataset ``dataset`` (a name) that can fail before a worker
    starts: typed against homogeneous, and what the model refuses of a typed dataset's shape (feature widths
    that differ for R-GCN, ...), built from the name alone (one line each). Here, above both the models and the
    datasets, since it asks each about the other."""
    from gnnbench.datasets.registry import typed_schema
    from gnnbench.models import check_typed
    from gnnbench.models.typed import Schema

    found = typed_schema(dataset, data_dir)  # a real typed dataset reads its small files here
    check_typed(model_cls, found is not None, dataset)
    if found is not None:
        widths, relations, target, classes = found
        model_cls(Schema(widths, relations, target), classes, hyper)
