"""Where benchmark runs execute: local processes (joblib/loky) or a Dask cluster (``distributed``).

Both backends run the same task, :func:`compute` (one run with one torch and one BLAS thread; the run itself is the
caller's ``run`` function, :func:`uncertain_bo.benchmarks.runner.run` for the runner), and hand the
finished results back to the calling process as they arrive (:func:`execute`); the runner writes them, so a
run's files and records are the same whichever backend ran it, and a sweep interrupted on either resumes from
``DIR/runs``.

Dask (``--backend dask --scheduler ADDRESS``): every run is one task submitted with ``Client.map``; results stream
back through ``distributed.as_completed``. ``ADDRESS`` is a running scheduler (``tcp://host:8786``; start one with
``dask scheduler`` and workers with ``dask worker tcp://host:8786`` in an environment where this package is
installed), a scheduler file (``*.json``), or ``local:N`` — a :class:`distributed.LocalCluster` of ``N`` worker
processes with one thread each, started and closed here. A run whose worker dies is re-run once elsewhere (the
scheduler's ``distributed.scheduler.allowed-failures``, set to 1 for ``local:N``; a remote scheduler keeps its
own, reported at the start) and then reported as failed; a run that raises is reported at once (a deterministic
error does not go away on a retry). Failures never stop the other runs.
"""
from __future__ import annotations

import logging
import traceback
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence, TextIO

#: one run: ``run(problem, method, seed, iterations, settings) -> result`` (:func:`uncertain_bo.benchmarks.runner.run`)
RunFunction = Callable[..., dict[str, Any]]

__all__ = ['BACKENDS', 'RunFunction', 'Outcome', 'compute', 'execute', 'parse_scheduler', 'resolve_backend',
           'BackendError']

BACKENDS = ('joblib', 'dask')

#: times the scheduler re-runs a task whose worker died (Dask's ``allowed-failures``) for ``local:N``
LOCAL_ALLOWED_FAILURES = 1


class BackendError(ValueError):
    """A backend cannot start (Dask missing, scheduler unreachable, bad address): a user-facing one-liner.

    Example:
        ``--scheduler`` without ``--backend dask``:

        >>> resolve_backend('joblib', 'tcp://10.0.0.5:8786')
        Traceback (most recent call last):
        ...
        uncertain_bo.benchmarks.backends.BackendError: --scheduler is for --backend dask (joblib runs ...)
    """


@dataclass
class Outcome:
    """A finished run: ``result`` (as :func:`~uncertain_bo.benchmarks.runner.run` returns it, with ``key``) or
    ``error`` (one line: the exception type and message).

    Example:
        A run that raises comes back as an outcome with a one-line error (the other runs go on); ``n_jobs=1`` runs
        in this process:

        >>> from uncertain_bo.benchmarks import RunSpec
        >>> def flaky(problem, method, seed, iterations, settings):
        ...     raise RuntimeError(f'simulator crashed at seed {seed}')
        >>> [outcome] = execute([RunSpec('rkhs2d', 'ugp_ucb', seed=3, iterations=10)], flaky, n_jobs=1)
        >>> outcome.index, outcome.result, outcome.error
        (0, None, 'RuntimeError: simulator crashed at seed 3 (<doctest ...>:2)')
    """

    index: int
    result: dict[str, Any] | None = None
    error: str | None = None


def compute(spec, run: RunFunction) -> dict[str, Any]:
    """One run of ``spec`` (:class:`~uncertain_bo.benchmarks.runner.RunSpec`) by ``run`` (:data:`RunFunction`) with
    one torch and one BLAS/OpenMP thread and torch's default dtype set to the package's ``DTYPE`` (float64), the
    same on every backend, so a run's numbers depend neither on the worker's thread pools nor on the host process's
    global torch state (some library code still creates tensors in the default dtype: a float32 default moves the
    records by about 1e-8, enough to change a later decision)."""
    import torch
    from threadpoolctl import threadpool_limits

    from ..distributions import DTYPE

    threads, dtype = torch.get_num_threads(), torch.get_default_dtype()
    torch.set_num_threads(1)
    torch.set_default_dtype(DTYPE)
    try:
        with threadpool_limits(limits=1):
            result = run(spec.problem, spec.method, spec.seed, spec.iterations, spec.settings)
    finally:
        torch.set_num_threads(threads)
        torch.set_default_dtype(dtype)
    result['key'] = spec.key
    return result


def _task(index: int, spec, run: RunFunction, factory=None) -> Outcome:
    """:func:`compute` of ``spec`` by ``run``, with an exception turned into a reported failure (the other runs go
    on). ``factory``: the problem's factory where the worker may lack it
    (:func:`~uncertain_bo.benchmarks.problem_registry.external_factory`: a problem registered by the calling script
    or notebook), registered in the worker first."""
    try:
        if factory is not None:
            from .problem_registry import register_problem
            register_problem(spec.problem, factory, replace=True)
        return Outcome(index, result=compute(spec, run))
    except Exception as exc:   # reported with the run's key; the sweep goes on
        last = traceback.extract_tb(exc.__traceback__)[-1]
        return Outcome(index, error=f'{type(exc).__name__}: {exc} ({last.filename}:{last.lineno})')


def parse_scheduler(text: str | None, n_jobs: int) -> tuple[str, Any]:
    """``--scheduler`` -> ``('local', n_workers)``, ``('file', path)`` or ``('address', address)``.

    ``None`` and ``'local'`` mean ``local:n_jobs``.

    Raises:
        BackendError: ``local:N`` with N not a positive integer.
    """
    if text is None or text.strip() == 'local':
        return 'local', max(1, n_jobs)
    text = text.strip()
    if text.startswith('local:'):
        n = text[len('local:'):]
        if not n.isdigit() or int(n) < 1:
            raise BackendError(f'--scheduler {text!r}: local:N needs a positive number of workers N')
        return 'local', int(n)
    if text.endswith('.json'):
        return 'file', text
    return 'address', text


def resolve_backend(backend: str | None, scheduler: str | None) -> tuple[str, str | None]:
    """``--backend`` / ``--scheduler`` -> ``(backend, scheduler)``: a scheduler implies Dask; joblib takes none.

    Raises:
        BackendError: ``--backend joblib`` with a scheduler, or a malformed ``local:N``.
    """
    if backend is None:
        backend = 'dask' if scheduler is not None else 'joblib'
    if backend == 'joblib' and scheduler is not None:
        raise BackendError('--scheduler is for --backend dask (joblib runs --n-jobs local processes)')
    if backend == 'dask':
        parse_scheduler(scheduler, 1)
    return backend, scheduler


def execute(specs: Sequence, run: RunFunction, *, backend: str = 'joblib', n_jobs: int = 2,
            scheduler: str | None = None, progress: TextIO | None = None) -> Iterator[Outcome]:
    """Run ``specs`` and yield an :class:`Outcome` per run as each finishes (in completion order).

    Args:
        specs: the runs.
        run: what one run is (:data:`RunFunction`; a module-level function: it travels to the workers by name).
        backend: ``'joblib'`` (``n_jobs`` local processes) or ``'dask'``.
        n_jobs: joblib's processes; the worker count of ``scheduler='local'``.
        scheduler: Dask only — see :func:`parse_scheduler`.
        progress: where to say which cluster runs the sweep (None = silent).

    Raises:
        BackendError: unknown backend, Dask not installed, scheduler unreachable.
    """
    if backend == 'joblib':
        yield from _joblib(specs, run, n_jobs)
    elif backend == 'dask':
        yield from _dask(specs, run, n_jobs, scheduler, progress)
    else:
        raise BackendError(f'unknown backend {backend!r}; known: {", ".join(BACKENDS)}')


def _joblib(specs: Sequence, run: RunFunction, n_jobs: int) -> Iterator[Outcome]:
    from joblib import Parallel, delayed

    from .problem_registry import external_factory

    if not specs:
        return
    yield from Parallel(n_jobs=min(n_jobs, len(specs)), return_as='generator_unordered')(
        delayed(_task)(i, spec, run, external_factory(spec.problem)) for i, spec in enumerate(specs))


def _dask(specs: Sequence, run: RunFunction, n_jobs: int, scheduler: str | None,
          progress: TextIO | None) -> Iterator[Outcome]:
    try:
        import dask
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise BackendError("the Dask backend needs the packages dask and distributed: pip install 'dask[distributed]' "
                           '(pinned in requirements.txt)') from None
    kind, where = parse_scheduler(scheduler, n_jobs)
    if not specs:
        return
    cluster = None
    log = logging.getLogger('distributed')   # the cluster's own INFO lines would bury the progress lines
    level = log.level
    log.setLevel(max(level, logging.WARNING))
    # the workers' statistical profiler wakes every 10 ms and takes the GIL from the run's thread: on a loaded
    # machine that thread then waits for a preempted one (a local cluster's workers get this configuration)
    with dask.config.set({'distributed.scheduler.allowed-failures': LOCAL_ALLOWED_FAILURES,
                          'distributed.worker.profile.enabled': False,
                          'distributed.admin.system-monitor.gil.enabled': False}):
        try:
            if kind == 'local':
                cluster = LocalCluster(n_workers=where, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=logging.ERROR)
                client = Client(cluster)
            elif kind == 'file':
                client = Client(scheduler_file=where, timeout='20s')
            else:
                client = Client(where, timeout='20s')
        except (OSError, TimeoutError, ValueError, RuntimeError) as exc:
            if cluster is not None:
                cluster.close()
            log.setLevel(level)
            raise BackendError(f'cannot reach the Dask scheduler at {where!r} ({type(exc).__name__}: {exc}); start '
                               'one with `dask scheduler` and workers with `dask worker ADDRESS`') from None
    try:
        if progress is not None:
            retries = client.run_on_scheduler(_allowed_failures)
            workers = len(client.scheduler_info(n_workers=-1).get('workers', {}))
            print(f'dask: {client.scheduler.address}, {workers} worker(s) now'
                  + ('' if workers else ' (none yet: start them with `dask worker ADDRESS`; runs wait for one)')
                  + f'; a run lost with its worker is retried {retries} time(s), then reported',
                  file=progress, flush=True)
        token = uuid.uuid4().hex[:8]
        from .problem_registry import external_factory
        futures = client.map(_task, range(len(specs)), list(specs), [run] * len(specs),
                             [external_factory(s.problem) for s in specs],
                             key=[f'uncertain-bo-run-{token}-{i}' for i in range(len(specs))])
        index = {f.key: i for i, f in enumerate(futures)}
        for future in as_completed(futures):
            if future.status == 'finished':
                yield future.result()
            else:   # the task never returned: its worker died (KilledWorker after the retry) or it was cancelled
                exc = future.exception() if future.status == 'error' else None
                what = f'{type(exc).__name__}: {exc}' if exc is not None else future.status
                yield Outcome(index[future.key], error=f'lost on the cluster ({what})')
            future.release()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
        log.setLevel(level)


def _allowed_failures(dask_scheduler=None) -> int:
    return int(dask_scheduler.allowed_failures)
