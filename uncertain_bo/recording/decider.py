"""Background decisions, recorded and replayed at the same points of the measurement cycle.

With ``decide_in_background`` the explorer submits each decision (and the recommendation after each measurement) to
a one-thread executor and polls the job's ``done()`` once per cycle (:mod:`uncertain_bo.explorer.deciding`); the
cycle at which it first sees the job done depends on how long the job took on that machine, under that load. The
job's *result* does not: the planner is not changed while a job runs (revisions and parameter changes wait), so the
same job on the same planner state gives the same target.

- :class:`RecordingDecider` wraps the live executor and records, for each job in submission order, how many of the
  explorer's ``done()`` polls answered False before the first True (``{"job": i, "polls": k}``, one record per job,
  when the explorer first sees it done).
- :class:`ReplayDecider` runs each job at once, where it was submitted, and answers the explorer's polls as the live
  executor did: False ``k`` times, then True. Every poll comes from the explorer's cycle, whose calls the replay
  repeats in the recorded order, so the result is taken at the same cycle and the target is sent at the same time.

A job whose record is missing (the recording ended first, or lost messages) is reported done at its first poll.
"""
from __future__ import annotations

from concurrent.futures import Executor, Future
from typing import Any, Callable

__all__ = ['RecordingDecider', 'ReplayDecider']


class _PolledFuture:
    """A future whose ``done()`` polls are counted until the first True; then ``on_done(polls)`` is called once."""

    def __init__(self, future: Future, on_done: Callable[[int], None]):
        self._future, self._on_done = future, on_done
        self._polls = 0
        self._reported = False

    def done(self) -> bool:
        done = self._future.done()
        if not done:
            self._polls += 1
        elif not self._reported:
            self._reported = True
            self._on_done(self._polls)
        return done

    def result(self, timeout: float | None = None) -> Any:
        return self._future.result(timeout)

    def cancel(self) -> bool:
        return self._future.cancel()


class RecordingDecider:
    """``executor`` (the explorer's decider) with its jobs' polls recorded: ``record({'job': i, 'polls': k})`` when the
    explorer first sees job ``i`` done after ``k`` polls that answered False (called on the explorer's thread).

    Example:
        The explorer polls a background decision once per cycle; the polls answered False are recorded when it
        first sees the job done:

        >>> import threading
        >>> from concurrent.futures import ThreadPoolExecutor
        >>> records, release = [], threading.Event()
        >>> decider = RecordingDecider(ThreadPoolExecutor(max_workers=1), records.append)
        >>> job = decider.submit(lambda: release.wait() and (12.0, 30.0))      # a decision: the next target
        >>> job.done(), job.done()                                             # two cycles while it runs
        (False, False)
        >>> release.set(); job.result()
        (12.0, 30.0)
        >>> job.done(), records
        (True, [{'job': 0, 'polls': 2}])
        >>> decider.shutdown()
    """

    def __init__(self, executor: Executor, record: Callable[[dict[str, int]], None]):
        self._executor, self._record = executor, record
        self._jobs = 0

    def submit(self, fn: Callable, *args, **kwargs) -> _PolledFuture:
        job = self._jobs
        self._jobs += 1
        return _PolledFuture(self._executor.submit(fn, *args, **kwargs),
                             lambda polls: self._record({'job': job, 'polls': polls}))

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._executor.shutdown(wait=wait, cancel_futures=cancel_futures)


class _ReplayedFuture:
    """A job run at submission, reported done after ``polls`` polls (None: at the first)."""

    def __init__(self, fn: Callable, args, kwargs, polls: int | None):
        self._left = polls or 0
        self._result = self._error = None
        try:
            self._result = fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - raised by result(), as a real future does
            self._error = exc

    def done(self) -> bool:
        if self._left > 0:
            self._left -= 1
            return False
        return True

    def result(self, timeout: float | None = None) -> Any:
        if self._error is not None:
            raise self._error
        return self._result


class ReplayDecider:
    """The explorer's decider in a replay: ``polls`` maps job index (submission order) -> the polls the live executor
    answered False (:class:`RecordingDecider`'s records).

    Example:
        The replay runs each job at once and answers the polls as recorded: job 0 was seen done at the third poll,
        job 1 has no record (done at its first poll):

        >>> decider = ReplayDecider({0: 2})
        >>> first, second = decider.submit(lambda: (12.0, 30.0)), decider.submit(lambda: (40.0, 8.0))
        >>> [first.done() for _ in range(3)], first.result()
        ([False, False, True], (12.0, 30.0))
        >>> second.done(), decider.missing
        (True, 1)
    """

    def __init__(self, polls: dict[int, int]):
        self._polls = dict(polls)
        self._jobs = 0
        self.missing = 0       #: jobs without a record (reported done at once)

    def submit(self, fn: Callable, *args, **kwargs) -> _ReplayedFuture:
        job = self._jobs
        self._jobs += 1
        if job not in self._polls:
            self.missing += 1
        return _ReplayedFuture(fn, args, kwargs, self._polls.get(job))

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        pass
