"""A command's changes to the workspace, recorded like an edit (issue 46).

`begin` scans the tree before the command starts (core.checkpoints.treescan); when it
ends, `Watch.end` scans again. A foreground command's changes go into the checkpoint of
the call that ran it (`into_call`): undo, review_changes and the console see them, the
journal lists the paths, and the stale-read guard counts them as that session's writes.
A background job's go into a checkpoint of their own when the job ends (`as_job_end`),
attributed to the call that started it.

What is not recorded: `.git` and state directories (the sandbox keeps them read-only;
core.exec.repoguard undoes a new one), changes past the scan's bounds (said so), an
unconfined workspace (`/` is not scanned), and writes through a shared memory map that
leave a file's size and times alone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from ..checkpoints.diffs import line_counts
from ..checkpoints.recorder import Recorder, new_entry_id
from ..checkpoints.states import State
from ..checkpoints.store import Store
from ..checkpoints.treescan import Baseline, Effect, TreeIndex, index_for
from ..echo import echo
from ..limits import COMMAND_CHANGES_SHOWN, UNDO_DIFF_MAX_BYTES
from ..state import stale_reads
from ..state.journal import activity
from ..state.journal.entries import Memory, now_iso
from ..state.locks import state_lock
from ..workspaces import Workspace

log = logging.getLogger("agent_workspace_mcp")


@dataclass
class Watch:
    """One command being recorded: the tree it started from and whose changes they are."""

    ws: Workspace
    store: Store
    index: TreeIndex
    baseline: Baseline
    command: str
    tool: str
    call_id: str | None  # the call that ran or started it
    by: str | None
    who: str | None
    agent: stale_reads.Agent | None
    effect: Effect | None = field(default=None)

    def end(self) -> Effect:
        """Scan again (once): what the command changed."""
        if self.effect is None:
            self.effect = self.index.after(self.baseline, self.store)
        return self.effect


@dataclass(frozen=True)
class Recording:
    """Commands' changes are recorded: into which store, and the journal for a job's."""

    store: Callable[[Workspace], Store]
    memory: Memory


def begin(recording: Recording, ws: Workspace, command: str) -> Watch | None:
    """Before a command starts, inside the call that runs it (None: not recorded)."""
    recorder = activity.current_recorder()
    if recorder is None or not ws.confined:
        return None
    store = recording.store(ws)
    index = index_for(ws)
    baseline = index.before(store)
    return Watch(
        ws,
        store,
        index,
        baseline,
        command,
        recorder.tool,
        recorder.id,
        recorder.by,
        recorder.who,
        stale_reads.current_agent(),
    )


def into_call(watch: Watch) -> str:
    """A foreground command ended: its changes into the call's checkpoint and journal
    entry; the answer's line saying what changed ('' when nothing did)."""
    effect = watch.end()
    recorder = activity.current_recorder()
    if recorder is not None:
        recorder.effect(effect.changes)
        recorder.ran = watch.command
        recorder.cmd = not effect.complete
    activity.record(paths=_paths(effect))
    _guard(watch, effect)
    return summary(effect, watch.store)


def as_job_end(watch: Watch, job_id: str, memory: Memory, ended: str) -> str:
    """A job ended: its changes as a checkpoint and journal entry of their own, attributed
    to the call that started it; the line for its log ('' when nothing changed)."""
    effect = watch.end()
    if not effect.changes and effect.complete:
        return ""
    ws = watch.ws
    recorder = Recorder(ws, new_entry_id(), watch.store)
    recorder.effect(effect.changes)
    recorder.ran = watch.command
    recorder.cmd = not effect.complete
    line = summary(effect, watch.store)
    change = memory.active_change(ws)
    ts = now_iso()
    extra = {"job": job_id, "of": watch.call_id or ""}
    if watch.agent is not None:
        extra.update(session=watch.agent.session, client=watch.agent.client or "")
    try:
        with state_lock(ws):
            recorder.finish("job_end", ts, change, locked=True, by=watch.by, who=watch.who)
            memory.record(
                ws,
                "job_end",
                paths=_paths(effect),
                detail=f"{job_id}: {watch.command}",
                result=f"{ended}; {line}" if line else ended,
                change=change or "",
                entry_id=recorder.id,
                ts=ts,
                locked=True,
                by=watch.by,
                extra=extra,
            )
    except Exception as exc:  # best effort, like every journal write
        log.warning("job %s: its changes could not be recorded in %s: %s", job_id, ws.name, exc)
        return f"its changes could not be recorded ({exc})"
    if watch.agent is not None:
        with stale_reads.bind(ws, watch.agent):
            _guard(watch, effect)
    return line


def _guard(watch: Watch, effect: Effect) -> None:
    """The session that ran the command wrote what it changed (it need not read it
    again); another session that read one of those files is refused, naming it."""
    written: dict[str, str | None] = {}
    for rel, (_, after) in effect.changes.items():
        if after.get("t") == "f" and after.get("h"):
            written[rel] = str(after["h"])
        elif after.get("t") in ("-", "l", "?"):
            written[rel] = None
    if written:
        stale_reads.command_wrote(watch.ws, written, f"{watch.tool} (`{watch.command}`)")


def _paths(effect: Effect) -> list[str]:
    return [rel for rel, (_, after) in effect.changes.items() if after.get("t") != "d"] or [
        rel for rel in effect.changes
    ]


def summary(effect: Effect, store: Store) -> str:
    """`changed 3 files: src/a.py (+2 -1), b.txt (new), old/ (deleted, 12 files)`."""
    changes = effect.changes
    items: list[str] = []
    files = 0
    gone_dirs = [r for r, (b, a) in changes.items() if b.get("t") == "d" and a.get("t") != "d"]
    new_dirs = [r for r, (b, a) in changes.items() if a.get("t") == "d" and b.get("t") != "d"]
    grouped: set[str] = set()
    for rel, what in [*((r, "deleted") for r in gone_dirs), *((r, "new") for r in new_dirs)]:
        if any(rel.startswith(top + "/") for top in [*gone_dirs, *new_dirs] if top != rel):
            continue
        below = [r for r in changes if r.startswith(rel + "/")]
        grouped.update(below, {rel})
        count = sum(1 for r in below if "d" not in (changes[r][0].get("t"), changes[r][1].get("t")))
        files += count
        items.append(f"{echo(rel)}/ ({what}, {count} file{'' if count == 1 else 's'})")
    for rel, (before, after) in changes.items():
        if rel in grouped:
            continue
        if "d" not in (before.get("t"), after.get("t")):
            files += 1
        items.append(f"{echo(rel)} ({_how(before, after, store)})")
    if not items and effect.complete:
        return ""
    shown = items[:COMMAND_CHANGES_SHOWN]
    more = len(items) - len(shown)
    text = f"changed {files} file{'' if files == 1 else 's'}"
    text += ": " + ", ".join(shown) if shown else ""
    if more:
        text += f", and {more} more (review_changes shows them)"
    if not effect.complete:
        text += "; not fully recorded (past the scan's bounds): undo cannot restore all of it"
    if effect.overlapped:
        text += "; another command ran in this workspace meanwhile: its changes may be included"
    return text


def _how(before: State, after: State, store: Store) -> str:
    kind_b, kind_a = before.get("t"), after.get("t")
    if kind_b == "-":
        return {"l": f"new link -> {echo(str(after.get('k')))}", "d": "new directory"}.get(
            str(kind_a), "new"
        )
    if kind_a == "-":
        return "deleted"
    if kind_b != kind_a:
        return f"now a {_KIND.get(str(kind_a), 'file')}"
    if kind_a == "l":
        return f"link -> {echo(str(after.get('k')))}"
    if kind_a == "d" or (before.get("h") or before.get("q")) == (after.get("h") or after.get("q")):
        return f"mode {int(before.get('m', 0)):o} -> {int(after.get('m', 0)):o}"
    counts = _line_counts(before, after, store)
    if before.get("m") != after.get("m"):
        counts += f", mode {int(before.get('m', 0)):o} -> {int(after.get('m', 0)):o}"
    if not before.get("o"):
        counts += ", not restorable"
    return counts.lstrip(", ") or "modified"


_KIND = {"f": "file", "d": "directory", "l": "symlink", "?": "special file"}


def _line_counts(before: State, after: State, store: Store) -> str:
    if not (before.get("o") and after.get("o")):
        return "modified"
    if max(int(before.get("s", 0)), int(after.get("s", 0))) > UNDO_DIFF_MAX_BYTES:
        return "modified"
    try:
        old = store.get(before["h"], before["s"]).decode("utf-8").splitlines()
        new = store.get(after["h"], after["s"]).decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return "binary"
    except Exception:
        return "modified"
    plus, minus = line_counts(old, new)
    return f"+{plus} -{minus}"
