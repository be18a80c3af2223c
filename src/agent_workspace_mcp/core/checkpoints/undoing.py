"""Undo and restore as operations on a workspace (issue 17), shared by the `undo` and
`restore_file` tools and the operator console: choose the recorded calls, plan, put the
files back through the containment walk all or nothing, and say what was done. The
caller journals the call (core.state.journal.calls), so an undo can itself be undone.
"""

from __future__ import annotations

from .. import limits
from ..containment import locate
from ..echo import listing
from ..errors import InvalidArgumentError, WorkspaceError
from ..state.journal import activity
from ..state.locks import PathLocks, state_lock
from ..workspaces import Workspace
from .history import History
from .revert import Result, carry_out
from .states import absolute
from .store import Store


def undo(
    ws: Workspace,
    store: Store,
    locks: PathLocks,
    *,
    subject: str | None,
    steps: int | None = None,
    to: str | None = None,
    change: str | None = None,
    entry: str | None = None,
    ids: tuple[set[str], str] | None = None,
    dry_run: bool = False,
    force: bool = False,
    under: str | None = None,
) -> Result:
    """Undo the last `steps` calls, every call after entry `to`, a change's calls, or
    exactly one `entry`, or the calls `ids` names (with how to name them in an answer);
    `subject`: only that subject's history (None: everyone's). `under`: only that path
    and what lies below it (the calls stay recorded as not undone: their other paths
    can still be undone)."""
    chosen_by = (
        ("steps", steps),
        ("to", to),
        ("change", change),
        ("entry", entry),
        ("session", ids),
    )
    given = [name for name, value in chosen_by if value]
    if len(given) > 1:
        raise InvalidArgumentError(f"pass one of steps, to or change, not {' and '.join(given)}")
    if steps is not None and steps > limits.UNDO_MAX_STEPS:
        raise InvalidArgumentError(
            f"steps is at most {limits.UNDO_MAX_STEPS}; for a longer range pass to=<entry id>"
        )
    with state_lock(ws):
        history = History(store, subject)
        if ids:
            chosen = history.of_ids(*ids)
        elif entry:
            chosen = history.only(entry)
        elif to:
            chosen = history.after(to)
        elif change:
            chosen = history.of_change(change)
        else:
            chosen = history.last_steps(steps or 1)
        plan = history.plan(chosen, under=under)
        recorder = activity.current_recorder()
        with locks.hold(ws, (absolute(ws, rel) for rel in plan.targets)):
            result = carry_out(ws, plan, store, force=force, dry_run=dry_run, recorder=recorder)
        if recorder is not None and not dry_run and result.lines and under is None:
            recorder.reverts = [e.id for e in chosen]
    activity.record(
        [path for _, path, _ in result.lines][: limits.UNDO_LINES_SHOWN],
        f"undid {', '.join('#' + e.id for e in chosen)}",
        "dry run, nothing changed" if dry_run else None,
    )
    return result


def restore(
    ws: Workspace,
    store: Store,
    locks: PathLocks,
    path: str,
    before: str,
    *,
    subject: str | None,
    dry_run: bool = False,
) -> Result:
    """Put `path` (a directory: everything recorded under it) back as before entry
    `before`, whatever changed it since (`dry_run`: only say what would change)."""
    with locate(ws, path, follow_final=False, defer_parents=True) as loc:
        rel, shown = loc.real_rel, loc.display
    if loc.is_root:
        raise InvalidArgumentError("restore_file takes a path inside the workspace, not its root")
    with state_lock(ws):
        history = History(store, subject)
        start = history.find(before)
        chosen = [
            e
            for e in history.entries[start:]
            if any(p == rel or p.startswith(rel + "/") for p in (e.paths or {}))
        ]
        others = [e for e in chosen if not history.visible(e)]
        if others:
            raise WorkspaceError(
                f"{shown} was changed since by another subject's call #{others[0].id}; "
                "restore_file reverts only your own work (the operator can allow more "
                "with --share-history)"
            )
        if not chosen:
            raise WorkspaceError(
                f"{shown} was not changed by #{before.lstrip('#')} or any later recorded call; "
                "nothing to restore"
            )
        plan = history.plan(chosen, under=rel)
        plan.blocked.clear()  # a path asked for by name: whatever changed it since
        with locks.hold(ws, (absolute(ws, r) for r in plan.targets)):
            result = carry_out(
                ws,
                plan,
                store,
                force=False,
                dry_run=dry_run,
                recorder=None if dry_run else activity.current_recorder(),
                check_outside=False,
            )
    if not dry_run:
        activity.record([shown], f"restored as before #{chosen[0].id}")
    result.entries = chosen[:1]
    return result


def render(result: Result, *, dry_run: bool, head: str) -> str:
    calls = listing(f"#{e.id} {e.tool}" for e in result.entries)
    n = len(result.entries)
    if head == "undo":
        title = f"{'Would undo' if dry_run else 'Undid'} {n} call{'s' * (n != 1)}: {calls}"
    else:
        title = f"{'Would restore' if dry_run else 'Restored'} as before {calls}"
    if not result.lines:
        return f"{title}. Nothing to change: the files are already as they were."
    rows = [f"{title}{' (dry run, nothing changed)' if dry_run else ''}:"]
    width = max(len(verb) for verb, _, _ in result.lines)
    for verb, path, note in result.lines[: limits.UNDO_LINES_SHOWN]:
        rows.append(f"{verb:<{width}}  {path}{f'  ({note})' if note else ''}")
    if len(result.lines) > limits.UNDO_LINES_SHOWN:
        rows.append(f"... and {len(result.lines) - limits.UNDO_LINES_SHOWN} more paths")
    if result.commands:
        names = listing(f"#{e.id} {e.tool}" for e in result.commands)
        rows.append(
            f"Not reverted: what {names} did that was not recorded (past the scan's bounds, an "
            "unconfined workspace, or a background job: its changes are its job_end entry)."
        )
    if result.left:
        rows.append(f"Left as they are (not restorable): {listing(result.left)}.")
    return "\n".join(rows)
