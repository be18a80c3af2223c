"""`undo` and `restore_file`: any recorded change back, byte for byte (issue 17).

Every mutating call records what it replaced (core.checkpoints); these tools put it
back through the same containment walk as every write, all or nothing, and are
recorded themselves, so an undo can be undone.
"""

from __future__ import annotations

from typing import Annotated

from fastmcp import FastMCP
from pydantic import Field

from ..core import activity, limits
from ..core.checkpoints.history import History
from ..core.checkpoints.revert import Result, carry_out
from ..core.checkpoints.states import absolute
from ..core.containment import locate
from ..core.echo import listing
from ..core.errors import InvalidArgumentError, WorkspaceError
from ..core.statefiles import state_lock
from ..requestctx import history_subject
from ..services import Services
from .base import DESTRUCTIVE, WorkspaceArg, add_tool, bind

EntryId = Annotated[str, Field(description="Entry id from work_log.")]


def undo(
    services: Services,
    steps: Annotated[int | None, Field(ge=1, description="Last N calls (default 1).")] = None,
    to: Annotated[str | None, Field(description="Entry id: undo every call after it.")] = None,
    change: Annotated[str | None, Field(description="Change id: undo its calls.")] = None,
    dryRun: Annotated[bool, Field(description="Preview; change nothing.")] = False,
    force: Annotated[bool, Field(description="Also undo files changed since by others.")] = False,
    workspace: WorkspaceArg = None,
) -> str:
    """Undo file changes recorded in work_log: the last `steps` calls, all after entry
    `to`, or a change's. All or nothing, exact bytes and modes. Refuses files changed since
    by others unless force. Commands are not reverted."""
    given = [name for name, value in (("steps", steps), ("to", to), ("change", change)) if value]
    if len(given) > 1:
        raise InvalidArgumentError(f"pass one of steps, to or change, not {' and '.join(given)}")
    if steps is not None and steps > limits.UNDO_MAX_STEPS:
        raise InvalidArgumentError(
            f"steps is at most {limits.UNDO_MAX_STEPS}; for a longer range pass to=<entry id>"
        )
    ws = services.workspaces.get(workspace)
    store = services.checkpoints(ws)
    with state_lock(ws):
        history = History(store, history_subject(services.settings.share_history))
        if to:
            chosen = history.after(to)
        elif change:
            chosen = history.of_change(change)
        else:
            chosen = history.last_steps(steps or 1)
        plan = history.plan(chosen)
        recorder = activity.current_recorder()
        with services.locks.hold(ws, (absolute(ws, rel) for rel in plan.targets)):
            result = carry_out(ws, plan, store, force=force, dry_run=dryRun, recorder=recorder)
        if recorder is not None and not dryRun and result.lines:
            recorder.reverts = [e.id for e in chosen]
    activity.record(
        [path for _, path, _ in result.lines][: limits.UNDO_LINES_SHOWN],
        f"undid {', '.join('#' + e.id for e in chosen)}",
        "dry run, nothing changed" if dryRun else None,
    )
    return render(result, dry_run=dryRun, head="undo")


def restore_file(
    services: Services,
    path: Annotated[str, Field(description="File or directory.")],
    before: EntryId,
    workspace: WorkspaceArg = None,
) -> str:
    """Put a path (a directory: all recorded under it) back as before entry `before`,
    whatever changed it since. Undoable."""
    ws = services.workspaces.get(workspace)
    with locate(ws, path, follow_final=False, defer_parents=True) as loc:
        rel, shown = loc.real_rel, loc.display
    if loc.is_root:
        raise InvalidArgumentError("restore_file takes a path inside the workspace, not its root")
    store = services.checkpoints(ws)
    with state_lock(ws):
        history = History(store, history_subject(services.settings.share_history))
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
        with services.locks.hold(ws, (absolute(ws, r) for r in plan.targets)):
            result = carry_out(
                ws,
                plan,
                store,
                force=False,
                dry_run=False,
                recorder=activity.current_recorder(),
                check_outside=False,
            )
    activity.record([shown], f"restored as before #{chosen[0].id}")
    result.entries = chosen[:1]
    return render(result, dry_run=False, head="restore")


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
        rows.append(f"Not reverted: what {names} did (commands are not recorded).")
    if result.left:
        rows.append(f"Left as they are (not restorable): {listing(result.left)}.")
    return "\n".join(rows)


def register(app: FastMCP, services: Services) -> None:
    if not services.settings.checkpoints:
        return  # --no-checkpoints: nothing would be recorded to undo
    add_tool(app, bind(undo, services), annotations=DESTRUCTIVE, title="Undo changes")
    add_tool(app, bind(restore_file, services), annotations=DESTRUCTIVE, title="Restore a path")
