"""Carrying out a plan (history.Plan): check, record, apply, and roll back on failure.

All or nothing: the current state of every path is captured (contents stored) before
anything changes; that capture is the undo's own checkpoint, so the undo can be undone,
and if a step fails midway it is applied back, leaving every file as it was.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from ..containment import display_path, locate
from ..echo import listing
from ..errors import WorkspaceError
from ..limits import CHECKPOINT_FILE_MAX_BYTES, CHECKPOINT_MAX_PATHS, MIB, UNDO_DIFF_MAX_BYTES
from ..textio import read_bytes
from ..workspaces import Workspace
from .diffs import line_counts
from .history import Entry, Plan
from .recorder import Recorder
from .states import NONE, Budget, State, absolute, apply, capture, children, same
from .store import Store


class UndoRefused(WorkspaceError):
    pass


@dataclass
class Result:
    entries: list[Entry]
    lines: list[tuple[str, str, str]] = field(default_factory=list)  # (verb, path, note)
    commands: list[Entry] = field(default_factory=list)
    left: list[str] = field(default_factory=list)  # not restorable, left as they are


def _shown(ws: Workspace, rel: str) -> str:
    return display_path(ws, absolute(ws, rel))


def _current(ws: Workspace, rels: list[str], store: Store | None) -> dict[str, State]:
    """The present state of each path, content stored: what a rollback (and an undo of
    this undo) puts back, so it may use the whole store, not one call's share."""
    found: dict[str, State] = {}
    budget = Budget(paths=10 * len(rels) + 10, stored=store.cap if store else 0)
    for rel in rels:
        found.update(capture(ws, rel, recursive=False, store=store, budget=budget))
    return found


def carry_out(
    ws: Workspace,
    plan: Plan,
    store: Store,
    *,
    force: bool,
    dry_run: bool,
    recorder: Recorder | None,
    check_outside: bool = True,
) -> Result:
    result = Result(plan.entries, commands=[e for e in plan.entries if e.cmd])
    if len(plan.targets) > CHECKPOINT_MAX_PATHS:
        # This undo's own checkpoint could not record them all (no way back), and
        # checking each costs a walk: refused before touching any (issue 28).
        raise UndoRefused(
            f"undo refused: it would restore {len(plan.targets):,} paths, more than one "
            f"checkpoint records ({CHECKPOINT_MAX_PATHS:,}); undo a shorter range"
        )
    if plan.blocked and not force:
        raise UndoRefused(f"undo refused: {plan.blocked[0]}")
    targets = dict(plan.targets)
    for rel in plan.lost:
        targets.pop(rel, None)
        result.left.append(_shown(ws, rel))
    if result.left and not force:
        raise UndoRefused(
            f"undo refused: {listing(result.left)} cannot be restored (over the "
            f"{CHECKPOINT_FILE_MAX_BYTES // MIB} MiB checkpoint limit, or its checkpoint "
            "data is gone); pass force=true to undo the rest and leave it as it is"
        )
    current = _current(ws, sorted(targets), store if not dry_run else None)
    changed_outside = [
        rel
        for rel in sorted(targets)
        if check_outside and not same(current.get(rel, NONE), plan.expected.get(rel, NONE))
    ]
    # A directory that goes away must hold nothing the recorded calls did not make.
    strays = [
        kid
        for rel, want in targets.items()
        if want["t"] != "d" and current.get(rel, NONE)["t"] == "d"
        for kid in children(ws, rel)
        if kid not in targets
    ]
    if check_outside and (changed_outside or strays) and not force:
        names = listing(_shown(ws, rel) for rel in [*changed_outside, *strays])
        raise UndoRefused(
            f"undo refused: {names} changed since those calls by something else (an editor "
            "or a command); pass force=true to undo anyway (the current content is "
            "recorded first, so this undo can be undone too)"
        )
    for kid in strays:  # forced, or restore_file: recorded below, then removed
        found = capture(
            ws,
            kid,
            recursive=True,
            store=None if dry_run else store,
            budget=Budget(stored=store.cap),
        )
        current.update(found)
        targets.update(dict.fromkeys(found, NONE))
    for rel in sorted(targets):
        verb, note = _verb(current.get(rel, NONE), targets[rel], store, ws, rel)
        if verb:
            result.lines.append((verb, _shown(ws, rel), note))
    # All or nothing needs a way back for everything this undo replaces.
    unrecordable = [
        rel
        for rel in sorted(targets)
        if not dry_run
        and current.get(rel, NONE)["t"] == "f"
        and not current[rel].get("o")
        and not same(current[rel], targets[rel])
    ]
    if unrecordable:
        raise UndoRefused(
            f"undo refused: {listing(_shown(ws, rel) for rel in unrecordable)} cannot be "
            "recorded first (over the checkpoint size limits), so this undo could not be "
            "rolled back or undone; move it aside and retry"
        )
    if dry_run or not result.lines:
        return result
    if recorder is not None:
        recorder.states(current)
    try:
        apply(ws, targets, dict(current), store)
    except WorkspaceError as exc:
        _roll_back(ws, current, store, exc)
    return result


def _roll_back(ws: Workspace, before: dict[str, State], store: Store, exc: WorkspaceError) -> None:
    try:
        apply(ws, before, _current(ws, sorted(before), None), store)
    except WorkspaceError as again:
        raise WorkspaceError(
            f"undo failed: {exc}; putting files back also failed ({again}); "
            "check the tree with git_status or list_files"
        ) from None
    raise WorkspaceError(f"undo failed: {exc}; every file was put back as it was") from None


def _verb(now: State, want: State, store: Store, ws: Workspace, rel: str) -> tuple[str, str]:
    """How one path changes, for the answer: ('' if it does not)."""
    if want["t"] == "d" and now["t"] == "d":
        return ("mode", f"{want['m']:04o}") if now.get("m") != want.get("m") else ("", "")
    if same(now, want):
        return "", ""
    if want["t"] == "-":
        return "deleted", ""
    if now["t"] == "-":
        return "created", {"d": "directory", "l": f"symlink -> {want.get('k')}"}.get(want["t"], "")
    if now["t"] == "f" and want["t"] == "f":
        return "restored", _line_counts(now, want, store, ws, rel)
    return "restored", ""


def _present(now: State, store: Store, ws: Workspace, rel: str) -> bytes:
    """The bytes a path holds now: from the store once recorded, else (a preview, which
    records nothing) read from disk, and only if still the content `now` describes."""
    if now.get("o"):
        return store.get(now["h"], now["s"])
    with locate(ws, rel) as loc:
        data, _ = read_bytes(loc, UNDO_DIFF_MAX_BYTES)
    if hashlib.sha256(data).hexdigest() != now.get("h"):
        raise WorkspaceError("changed while previewing")
    return data


def _line_counts(now: State, want: State, store: Store, ws: Workspace, rel: str) -> str:
    if max(now.get("s", 0), want.get("s", 0)) > UNDO_DIFF_MAX_BYTES:
        return ""
    try:
        old = _present(now, store, ws, rel).decode("utf-8").splitlines()
        new = store.get(want["h"], want["s"]).decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return "binary"
    except WorkspaceError:
        return ""
    plus, minus = line_counts(old, new)
    return f"+{plus} -{minus} lines" if plus or minus else "mode"
