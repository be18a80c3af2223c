"""The journal hook point: mutating tools say what they changed, in one call.

A tool body calls `record(paths, detail)`; whoever wraps the call (the journal
middleware) opened a capture with `capture()` and reads it after the call, whatever
the outcome. Outside a capture, `record()` does nothing, so core code and tests can
run the tools without any journal. A context variable carries the capture across
FastMCP's worker-thread dispatch (contexts are copied into the thread, and the
captured object is shared, not copied).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...checkpoints.recorder import Recorder
    from ...containment import Located


@dataclass
class Activity:
    paths: list[str] = field(default_factory=list)
    detail: str | None = None
    result: str | None = None  # overrides the default "ok" / "error: ..." outcome
    approval: str | None = None  # who approved the call, how, and its digest (issue 32)


# Every open capture: the audit trail and the journal each open one around a call.
_current: ContextVar[tuple[Activity, ...]] = ContextVar("agent_workspace_activity", default=())


def record(paths: Iterable[str] = (), detail: str | None = None, result: str | None = None) -> None:
    paths = list(paths)
    for activity in _current.get():
        for path in paths:
            if path not in activity.paths:
                activity.paths.append(path)
        if detail is not None:
            activity.detail = detail
        if result is not None:
            activity.result = result


def approved(text: str) -> None:
    """Say who decided this call and how (the journal keeps it beside the tool's detail);
    each step of the decision is kept, in order (asked, announced, decided)."""
    for activity in _current.get():
        activity.approval = f"{activity.approval}; {text}" if activity.approval else text


@contextmanager
def capture() -> Iterator[Activity]:
    activity = Activity()
    token = _current.set((*_current.get(), activity))
    try:
        yield activity
    finally:
        _current.reset(token)


@contextmanager
def isolated() -> Iterator[Activity]:
    """A capture that is the only one open: a preview the approval gate runs (a dry run)
    reports into it and leaves the call's own journal and audit captures untouched."""
    activity = Activity()
    token = _current.set((activity,))
    try:
        yield activity
    finally:
        _current.reset(token)


# Set by the approval gate when a person cleared this call to run a program (issue 43):
# with `--confirm exec`, the runner starts nothing without it, so a tool that runs
# programs cannot reach the runner around the gate.
_exec_cleared: ContextVar[bool] = ContextVar("awm_exec_cleared", default=False)


def clear_exec() -> None:
    _exec_cleared.set(True)


def exec_cleared() -> bool:
    return _exec_cleared.get()


# `--stage-commands` (issue 46): the approval gate opens a box before a command tool
# runs; the runner runs the command against a copy-on-write view and leaves its change
# set here for the gate to show and, once approved, land. Shared, not copied, across the
# worker-thread dispatch (like a capture).
@dataclass
class Staged:
    proposal: Any = None  # core.exec.staging.Proposal once the command ran
    answer: str = ""  # the command's own answer (output and exit)


_staging: ContextVar[Staged | None] = ContextVar("awm_staging", default=None)


@contextmanager
def staging() -> Iterator[Staged]:
    box = Staged()
    token = _staging.set(box)
    try:
        yield box
    finally:
        _staging.reset(token)


def staged_box() -> Staged | None:
    return _staging.get()


# The checkpoint of the call being journaled (issue 17), if any: tool bodies report each
# path before they change it. Outside a recorded call these do nothing.
_recorder: ContextVar[Recorder | None] = ContextVar("agent_workspace_recorder", default=None)


def before(loc: Located, *, recursive: bool = False) -> None:
    """`loc` (and, if `recursive`, everything under it) is about to change."""
    recorder = _recorder.get()
    if recorder is not None:
        recorder.located(loc, recursive=recursive)


def before_content(loc: Located, data: bytes | None, mode: int | None) -> None:
    """`loc` is about to change; its current bytes are `data` (None: it does not exist)."""
    recorder = _recorder.get()
    if recorder is not None:
        recorder.content(loc, data, mode)


def left_content(loc: Located, data: bytes) -> None:
    """`loc` now holds `data`, written by this call under its path lock: what the call
    left there, without reading it back (issue 47, item 4)."""
    recorder = _recorder.get()
    if recorder is not None:
        recorder.wrote(loc, data)


def ran_command() -> None:
    """The call ran a command: its side effects are not recorded, and undo says so."""
    recorder = _recorder.get()
    if recorder is not None:
        recorder.cmd = True


def current_recorder() -> Recorder | None:
    return _recorder.get()


@contextmanager
def recording(recorder: Recorder) -> Iterator[Recorder]:
    token = _recorder.set(recorder)
    try:
        yield recorder
    finally:
        _recorder.reset(token)
