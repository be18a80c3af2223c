"""Synchronous work off the event loop (handoff.py): anyio's default contract, kept."""

from __future__ import annotations

import os
import signal
import threading
import time
from contextvars import ContextVar

import anyio
import pytest

from agent_workspace_mcp.core import handoff
from agent_workspace_mcp.core.limits import HANDOFF_THREADS

WHO: ContextVar[str] = ContextVar("who", default="nobody")


def test_answers_and_raises_what_the_function_does() -> None:
    error = ValueError("bad input")

    def fails() -> None:
        raise error

    async def main() -> None:
        assert await handoff.run_sync(lambda: 6 * 7) == 42
        with pytest.raises(ValueError) as raised:
            await handoff.run_sync(fails)
        assert raised.value is error

    anyio.run(main)


def test_a_stopiteration_becomes_an_error_not_a_wait_forever() -> None:
    def stops() -> None:
        raise StopIteration("exhausted")  # an asyncio future refuses this exception

    raised: list[BaseException] = []

    async def main() -> None:
        try:
            await handoff.run_sync(stops)
        except BaseException as exc:
            raised.append(exc)

    # The wait is shielded, so no timeout inside the loop could end it: watch from outside.
    loop_thread = threading.Thread(target=anyio.run, args=(main,), daemon=True)
    loop_thread.start()
    loop_thread.join(30)
    assert not loop_thread.is_alive(), "the caller still waits for an answer"
    assert isinstance(raised[0], RuntimeError) and "StopIteration" in str(raised[0])


def test_runs_in_a_worker_thread_with_a_copy_of_the_callers_context() -> None:
    def body() -> tuple[int, str]:
        seen = WHO.get()
        WHO.set("the worker")  # its own copy: the caller's value stays
        return threading.get_ident(), seen

    async def main() -> None:
        WHO.set("the caller")
        thread, seen = await handoff.run_sync(body)
        assert thread != threading.get_ident()
        assert seen == "the caller"
        assert WHO.get() == "the caller"

    anyio.run(main)


def test_a_cancelled_caller_waits_for_the_body() -> None:
    started, release = threading.Event(), threading.Event()
    finished: list[str] = []
    returned: list[list[str]] = []

    def body() -> None:
        started.set()
        release.wait(30)
        finished.append("body")

    async def main() -> None:
        scope = anyio.CancelScope()

        async def caller() -> None:
            with scope:
                await handoff.run_sync(body)
                await anyio.sleep(0)  # as with anyio's, the cancellation comes at the next await
                returned.append(["not cancelled"])
            returned.append(list(finished))

        async with anyio.create_task_group() as group:
            group.start_soon(caller)
            await anyio.to_thread.run_sync(started.wait)
            scope.cancel()
            for _ in range(100):  # a caller that did not wait would have left by now
                await anyio.sleep(0)
            assert returned == []
            release.set()
        assert scope.cancelled_caught

    anyio.run(main)
    assert returned == [["body"]]  # left after the body ended, and cancelled


def test_at_most_handoff_threads_run_at_once_and_the_rest_wait() -> None:
    extra = 5
    guard = threading.Condition()
    running, most = [0], [0]
    release = threading.Event()

    def body() -> None:
        with guard:
            running[0] += 1
            most[0] = max(most[0], running[0])
            guard.notify_all()
        release.wait(30)
        with guard:
            running[0] -= 1

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for _ in range(HANDOFF_THREADS + extra):
                group.start_soon(handoff.run_sync, body)

            def all_threads_busy() -> None:
                with guard:
                    assert guard.wait_for(lambda: running[0] == HANDOFF_THREADS, 30)

            await anyio.to_thread.run_sync(all_threads_busy)
            for _ in range(100):  # the ones past the bound must still be waiting
                await anyio.sleep(0)
            with guard:
                assert running[0] == HANDOFF_THREADS
            release.set()
        assert most[0] == HANDOFF_THREADS
        assert running[0] == 0  # and every call ran

    anyio.run(main)


def test_an_idle_thread_ends_and_the_next_call_starts_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool = handoff._Pool()
    monkeypatch.setattr(handoff, "_pool", pool)
    monkeypatch.setattr(handoff, "HANDOFF_IDLE_SECONDS", 0.05)

    async def main() -> None:
        first = await handoff.run_sync(threading.current_thread)
        first.join(30)
        assert not first.is_alive()
        assert pool._threads == 0
        second = await handoff.run_sync(threading.current_thread)
        assert second is not first and second.is_alive()

    anyio.run(main)


def test_a_forked_child_starts_its_own_threads() -> None:
    """The parent's threads do not come along into a child: the child's calls must not
    be handed to them (they would wait forever)."""

    async def twice() -> int:
        return await handoff.run_sync(lambda: 2 * 21)

    assert anyio.run(twice) == 42  # the parent has an idle thread now
    pid = os.fork()
    if pid == 0:  # the child: answer within the parent's bound, or be killed
        os._exit(0 if anyio.run(twice) == 42 else 1)
    deadline = time.monotonic() + 30
    while (done := os.waitpid(pid, os.WNOHANG)) == (0, 0) and time.monotonic() < deadline:
        time.sleep(0.01)
    if done == (0, 0):
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the child's call was handed to a thread it does not have")
    assert os.waitstatus_to_exitcode(done[1]) == 0
