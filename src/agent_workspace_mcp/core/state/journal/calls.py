"""One journaled call, however it arrives: an agent's tool call (the journal middleware)
or an operator's action in the console. It captures what the call touched
(`activity.record`), records its checkpoint so it can itself be undone, and writes the
journal entry and the checkpoint line under one state lock, success or failure.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ...checkpoints.recorder import Recorder, new_entry_id
from ...checkpoints.store import Store
from ...workspaces import Workspace
from .. import stale_reads
from ..locks import state_lock
from . import activity
from .entries import Memory, now_iso

log = logging.getLogger("agent_workspace_mcp")


@dataclass
class Call:
    """A call being journaled: what it touched, and how it ended (set by the caller
    that knows: the middleware from the answer, `journaled` from the exception)."""

    ws: Workspace
    tool: str
    recorder: Recorder
    capture: activity.Activity
    error: str | None = None
    failed: bool = False
    extra: dict[str, Any] = field(default_factory=dict)  # session, client, ms

    @property
    def id(self) -> str:
        return self.recorder.id


def begin(ws: Workspace, tool: str, store: Store) -> Recorder:
    recorder = Recorder(ws, new_entry_id(), store)
    recorder.tool = tool
    return recorder


def write(call: Call, memory: Memory, *, subject: str | None, checkpoints: bool) -> None:
    """The journal entry (and, with checkpoints, the call's checkpoint line): best effort,
    a failure is logged and changes nothing the caller returns."""
    act = call.capture
    if call.failed:
        result = f"error: {call.error}" if call.error else "error"
    else:
        result = act.result or "ok"
    ws = call.ws
    change = memory.active_change(ws)
    ts = now_iso()
    try:  # one lock for the checkpoint line and the journal entry
        with state_lock(ws):
            if checkpoints:
                call.recorder.finish(
                    call.tool,
                    ts,
                    change,
                    locked=True,
                    by=subject,
                    who=who_of(call.extra.get("session"), call.extra.get("client")),
                )
            memory.record(
                ws,
                call.tool,
                paths=act.paths,
                detail=act.detail,
                result=result,
                change=change or "",
                entry_id=call.id,
                ts=ts,
                locked=True,
                by=subject,
                extra={**call.extra, "approval": act.approval} if act.approval else call.extra,
            )
    except Exception as exc:  # best effort: never changes the answer
        log.warning("journal write failed in %s: %s", ws.name, exc)


def who_of(session: str | None, client: str | None) -> str | None:
    """The session and client, as refusals and undo name the call's maker."""
    if not session:
        return None
    return f"session {session}" + (f", {client}" if client else "")


@contextlib.contextmanager
def capturing(ws: Workspace, tool: str, store: Store, *, checkpoints: bool) -> Iterator[Call]:
    """Capture and (with checkpoints) record around a call; the caller writes it."""
    recorder = begin(ws, tool, store)
    recording = activity.recording(recorder) if checkpoints else contextlib.nullcontext()
    with activity.capture() as act, recording:
        yield Call(ws, tool, recorder, act)


@contextlib.contextmanager
def journaled(
    ws: Workspace,
    tool: str,
    *,
    store: Store,
    memory: Memory,
    subject: str | None,
    checkpoints: bool = True,
) -> Iterator[Call]:
    """A whole journaled call in synchronous code (the console's actions, made as
    `stale_reads.OPERATOR`): an exception is recorded as the call's error and raised on."""
    with (
        capturing(ws, tool, store, checkpoints=checkpoints) as call,
        stale_reads.bind(ws, stale_reads.OPERATOR),
    ):
        call.extra = {
            "session": stale_reads.OPERATOR.session,
            "client": stale_reads.OPERATOR.client,
        }
        try:
            yield call
        except Exception as exc:
            call.failed, call.error = True, str(exc)
            raise
        finally:
            write(call, memory, subject=subject, checkpoints=checkpoints)


T = TypeVar("T")


class InThread:
    """A journaled synchronous tool's bookkeeping, run in the tool's own worker thread:
    the state check before the body and the journal write after a body that returned,
    where the journal middleware would otherwise take two more trips to a thread
    (issue 47, item 4). One body claims it: a dry run the approval gate asks for first
    does not (its arguments say `dryRun`); a body that raises leaves the write to the
    middleware, which knows the sentence the error becomes."""

    def __init__(self, ready: Callable[[], None], finish: Callable[[], None]) -> None:
        self._ready, self._finish = ready, finish
        self._claimed = threading.Lock()
        self.refused = False  # the state could not be used: no body ran, nothing to write
        self.written = False

    def run(self, body: Callable[[], T]) -> T:
        try:
            self._ready()
        except Exception:
            self.refused = True
            raise
        result = body()
        self._finish()
        self.written = True
        return result

    def claim(self) -> bool:
        return self._claimed.acquire(blocking=False)


IN_THREAD: ContextVar[InThread | None] = ContextVar("awm_journal_in_thread", default=None)


def run_in_thread(body: Callable[[], T], *, dry_run: bool) -> T:
    """`body`, with its call's journal bookkeeping around it when it is the call's own."""
    envelope = IN_THREAD.get()
    if envelope is None or dry_run or not envelope.claim():
        return body()
    return envelope.run(body)
