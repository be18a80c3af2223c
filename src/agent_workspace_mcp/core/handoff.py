"""Synchronous work in worker threads, handed over at a lower cost than anyio's.

Synchronous tool bodies, answers written to stdout, audit lines, the git tools' reads,
a command's spawn and the console's reads cross from the event loop to a worker thread
and back; only the stdin reader keeps anyio's thread, which anyio can abandon when the
server stops (`abandon_on_cancel`). `anyio.to_thread.run_sync` yields to the loop twice
before it hands the work over (its checkpoint and its capacity limiter) and hands it
over through a `queue.Queue`: 175-185 us a trip on our machines, against 75-80 us for a
thread waiting on its own `SimpleQueue` that wakes the loop once with the result
(bench/handoff.py). Over stdio a write took three trips (its body, its answer, its audit
line), and its body's is what read_file, run on the loop, does not pay (issue 47, item 4).

The contract is anyio's default one: the function runs with a copy of the caller's
context; a cancelled caller still waits for it to finish (a tool body is never abandoned
half done: its journal entry is written after it), then is cancelled at its next await;
at most HANDOFF_THREADS run at once and the rest wait their turn, first come first
served; a thread idle for HANDOFF_IDLE_SECONDS ends; a forked child starts its own
threads. These are not anyio's worker threads, so `anyio.from_thread` cannot be used in
them (nothing here calls back into the loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import queue
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

import anyio

from .limits import HANDOFF_IDLE_SECONDS, HANDOFF_THREADS

T = TypeVar("T")


class _Job:
    __slots__ = ("context", "fn", "future", "loop")

    def __init__(self, fn: Callable[[], Any], loop: asyncio.AbstractEventLoop) -> None:
        self.fn = fn
        self.context = contextvars.copy_context()
        self.loop = loop
        self.future: asyncio.Future[Any] = loop.create_future()

    def run(self) -> tuple[Any, BaseException | None]:
        try:
            return self.context.run(self.fn), None
        except BaseException as exc:  # the caller gets what the function raised, whatever it is
            return None, exc

    def answer(self, result: Any, error: BaseException | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody is waiting
            self.loop.call_soon_threadsafe(_settle, self.future, result, error)


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # the caller was cancelled by plain asyncio, not through anyio
        return
    if error is None:
        future.set_result(result)
    elif isinstance(error, StopIteration):  # a future refuses it: the caller would wait forever
        future.set_exception(RuntimeError(f"StopIteration raised in a worker thread: {error}"))
    else:
        future.set_exception(error)


class _Pool:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[_Job]] = []  # a stack: the warmest thread first
        self._waiting: deque[_Job] = deque()  # past HANDOFF_THREADS, in order of arrival
        self._threads = 0

    def submit(self, job: _Job) -> None:
        with self._lock:
            if self._idle:
                inbox = self._idle.pop()
            elif self._threads < HANDOFF_THREADS:
                self._threads += 1
                inbox = queue.SimpleQueue()
                threading.Thread(
                    target=self._serve, args=(inbox,), name="awm-worker", daemon=True
                ).start()
            else:
                self._waiting.append(job)
                return
        inbox.put(job)

    def _serve(self, inbox: queue.SimpleQueue[_Job]) -> None:
        job: _Job | None
        while True:
            try:
                job = inbox.get(timeout=HANDOFF_IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if inbox in self._idle:  # else a job was handed over just now
                        self._idle.remove(inbox)
                        self._threads -= 1
                        return
                job = inbox.get()
            while job is not None:
                result, error = job.run()
                done = job
                with self._lock:  # idle again before the caller wakes: it may call at once
                    job = self._waiting.popleft() if self._waiting else None
                    if job is None:
                        self._idle.append(inbox)
                done.answer(result, error)
                del done, result, error  # not kept alive while idle


_pool = _Pool()


def _after_fork() -> None:
    """A forked child has none of its parent's threads (and maybe a lock one held): a
    pool that counted them would hand its work to no one."""
    global _pool
    _pool = _Pool()


os.register_at_fork(after_in_child=_after_fork)


async def run_sync(fn: Callable[[], T]) -> T:
    """`fn()` in a worker thread, awaited; see the module's docstring for the contract."""
    job = _Job(fn, asyncio.get_running_loop())
    _pool.submit(job)
    with anyio.CancelScope(shield=True):
        result: T = await job.future
    return result


_THREADED = "__awm_threaded__"


def threaded(fn: Callable[..., T]) -> Callable[..., T]:
    """Mark a coroutine function whose body runs in one `run_sync` trip: the journal
    middleware then does its own work in that thread too, not in trips of its own."""
    setattr(fn, _THREADED, True)
    return fn


def is_threaded(fn: Callable[..., Any]) -> bool:
    return bool(getattr(fn, _THREADED, False))
