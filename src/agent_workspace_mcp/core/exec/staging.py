"""A command's changes held back until a person approves them (issue 46, `--stage-commands`).

The command runs in the bubblewrap sandbox against a copy-on-write view of the workspace:
fuse-overlayfs with the real root (opened by fd, never by a path the agent could swap) as
its read-only lower layer and a private upper directory, bound at the root's own path, so
the command sees and changes "the workspace" as usual while the real tree stays untouched.
When it ends, the upper directory is exactly its change set: files and links it wrote,
whiteouts for what it removed, opaque directories for a folder it replaced. That set
becomes a Proposal: per path the real state before and the staged state after, content
in the workspace's checkpoint store, the whole sealed by its digest in the approval
request, so what lands is exactly what the person was shown.

Why an overlay rather than running on a copy: a copy of a large tree costs seconds per
command and twice its size; the overlay costs one mount and only what changes. Why
fuse-overlayfs rather than the kernel's overlay: Debian's bubblewrap (0.8) has no overlay
options, and a kernel overlay needs privileges or a user namespace of our own; FUSE
needs neither. Where it cannot run, `--stage-commands` refuses to start, naming why.

What is never staged to land: `.git` and state directories (bound read-only in the
sandbox anyway), special files (FIFOs, sockets, devices), and a set past the checkpoint
bounds: the proposal then says so and lands nothing.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field

from ..checkpoints.diffs import line_counts
from ..checkpoints.states import (
    NONE,
    Budget,
    State,
    absolute,
    apply,
    capture,
    entry_state,
    same,
)
from ..checkpoints.store import Store
from ..checkpoints.treescan import Effect
from ..echo import echo
from ..errors import ConfigError, WorkspaceError
from ..limits import (
    CHECKPOINT_FILE_MAX_BYTES,
    CHECKPOINT_MAX_PATHS,
    COMMAND_CHANGES_SHOWN,
    CONFIRM_SUMMARY_MAX_CHARS,
    STAGE_MOUNT_SECONDS,
    STATE_DIR_NAME,
)
from ..osflags import DIR_FLAGS
from ..safejson import loads
from ..state.locks import PathLocks
from ..workspaces import Workspace
from .commands import which

OVERLAY = "fuse-overlayfs"
# fuse-overlayfs marks what the command removed, as the kernel's overlay does: a 0/0
# character device (or, unprivileged, a `.wh.NAME` file), and a replaced directory as
# opaque (`.wh..wh..opq`, plus a `.wh..opq` device).
WHITEOUT = ".wh."
OPAQUE = (".wh..wh..opq", ".wh..opq")
NEVER_LANDED = (".git", STATE_DIR_NAME)


@dataclass
class Proposal:
    """What a staged command would change: path -> (state now, state it left)."""

    changes: dict[str, tuple[State, State]] = field(default_factory=dict)
    held: list[str] = field(default_factory=list)  # why parts of it cannot land
    complete: bool = True
    answer: str = ""  # the command's own answer (output, exit), given again when it lands

    def encode(self) -> bytes:
        body = {
            "changes": {rel: [b, a] for rel, (b, a) in sorted(self.changes.items())},
            "held": self.held,
            "complete": self.complete,
            "answer": self.answer,
        }
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes) -> Proposal:
        body = loads(data)
        if not isinstance(body, dict) or not isinstance(body.get("changes"), dict):
            raise WorkspaceError("the staged changes are damaged; nothing landed")
        changes = {rel: (pair[0], pair[1]) for rel, pair in body["changes"].items()}
        return cls(
            changes,
            [str(why) for why in body.get("held") or []],
            bool(body.get("complete")),
            str(body.get("answer") or ""),
        )

    @property
    def landable(self) -> bool:
        return self.complete and not self.held


def check(
    *,
    confirm: Sequence[str],
    confirm_path: Sequence[str],
    runs_programs: Collection[str],
    commands: bool,
    unconfined: bool,
    network: bool,
    checkpoints: bool,
    bwrap: str | None,
    sandbox_said: str,
    path_dirs: Sequence[str],
) -> str:
    """`--stage-commands` at start-up: the fuse-overlayfs binary, or one line naming why
    commands cannot be staged here (ConfigError)."""
    if not commands:
        problem = "no command tool is served (add --shell, --shell-allow or --tasks)"
    elif (
        "exec" not in confirm
        and "risky" not in confirm
        and not confirm_path
        and not set(confirm) & set(runs_programs)
    ):
        problem = (
            "it holds a command's changes for a person's decision: add --confirm exec (ask "
            "about every command), --confirm risky or --confirm-path (ask when what it "
            "changed meets a rule)"
        )
    elif unconfined:
        problem = "an unconfined server's commands reach every file; a view cannot hold them"
    elif network:
        problem = (
            "a staged command runs before a person approves it, so it must have no "
            "network: leave out --sandbox-network"
        )
    elif bwrap is None:
        problem = (
            "it needs the bwrap sandbox (outside it a command sees the real workspace); "
            f"commands here run {sandbox_said or 'unsandboxed'}"
        )
    elif not checkpoints:
        problem = "staged changes are kept in the checkpoint store: leave out --no-checkpoints"
    else:
        return find_overlay(path_dirs)
    raise ConfigError(f"--stage-commands: {problem}")


def find_overlay(path_dirs: Sequence[str]) -> str:
    """The fuse-overlayfs binary outside every root, proven to work here; else one line."""
    binary = which(OVERLAY, path_dirs)
    if binary is None:
        raise ConfigError(
            "--stage-commands needs fuse-overlayfs for a copy-on-write view of the workspace "
            "(Debian package 'fuse-overlayfs'); it is not installed outside the workspace"
        )
    problem = _probe(binary)
    if problem:
        raise ConfigError(f"--stage-commands: {problem}")
    return binary


@functools.lru_cache(maxsize=4)
def _probe(binary: str) -> str | None:
    """Why a copy-on-write view cannot be made here, or None (mount, write, unmount)."""
    with tempfile.TemporaryDirectory(prefix="awm-stage-probe-") as top:
        lower = os.path.join(top, "lower")
        os.mkdir(lower)
        try:
            with Stage.mount(binary, lower, top) as stage:
                with open(os.path.join(stage.merged, "probe"), "w") as handle:
                    handle.write("x")
                written = os.listdir(stage.upper)
        except (WorkspaceError, OSError) as exc:
            return f"a copy-on-write view cannot be mounted here ({exc})"
        if os.listdir(lower) or written != ["probe"]:
            return "the copy-on-write view did not keep its writes apart from the workspace"
    return None


class Stage:
    """One mounted view: `merged` is what the command sees, `upper` what it changed."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.upper = os.path.join(where, "upper")
        self.merged = os.path.join(where, "merged")
        self.mounted = False
        self.doomed = True  # closed by whoever made it until a command owns it

    @classmethod
    def make(cls, binary: str, lower: str | int, parent: str) -> Stage:
        """A mounted view (the caller closes it)."""
        stage = cls(tempfile.mkdtemp(prefix="stage-", dir=parent or None))
        try:
            stage._mount(binary, lower)
        except BaseException:
            stage.close()
            raise
        return stage

    @classmethod
    @contextlib.contextmanager
    def mount(cls, binary: str, lower: str | int, parent: str) -> Iterator[Stage]:
        """Mount a view over `lower` (a path, or an open directory fd: the checked root)
        in a new private directory under `parent`; unmounted and removed on exit."""
        stage = cls.make(binary, lower, parent)
        try:
            yield stage
        finally:
            stage.close()

    def _mount(self, binary: str, lower: str | int) -> None:
        work = os.path.join(self.where, "work")
        for name in (self.upper, work, self.merged):
            os.mkdir(name, 0o700)
        fds: tuple[int, ...] = ()
        if isinstance(lower, int):
            # The daemon resolves its own /proc/self/fd/N: the fd we checked, not a path.
            fds, lower = (lower,), f"/proc/self/fd/{lower}"
        options = f"lowerdir={lower},upperdir={self.upper},workdir={work}"
        try:
            out = subprocess.run(
                [binary, "-o", options, self.merged],
                pass_fds=fds,
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=STAGE_MOUNT_SECONDS,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise WorkspaceError(f"{OVERLAY} could not start ({exc})") from None
        if out.returncode != 0:
            said = out.stderr.decode("utf-8", "replace").strip().splitlines()
            raise WorkspaceError(f"{OVERLAY} failed" + (f": {said[-1]}" if said else ""))
        self.mounted = True

    def unmount(self) -> None:
        if not self.mounted:
            return
        for argv in (["fusermount3", "-u"], ["fusermount", "-u"], ["umount"], ["umount", "-l"]):
            program = shutil.which(argv[0], path="/usr/bin:/bin:/usr/sbin:/sbin")
            if program is None:
                continue
            done = subprocess.run(
                [program, *argv[1:], self.merged],
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=STAGE_MOUNT_SECONDS,
            )
            if done.returncode == 0:
                self.mounted = False
                return
        raise WorkspaceError(f"the staged view at {self.merged} could not be unmounted")

    def close(self) -> None:
        try:
            self.unmount()
        finally:
            if not self.mounted:
                shutil.rmtree(self.where, ignore_errors=True)

    def open_merged(self) -> int:
        return os.open(self.merged, DIR_FLAGS)

    def proposal(self, ws: Workspace, store: Store) -> Proposal:
        """The command's change set, once it ended and the view is unmounted: each path's
        real state now and the state the command left, content stored."""
        self.unmount()
        found = Proposal()
        budget = Budget()
        after: dict[str, State] = {}
        removed: list[str] = []  # whited out: the real entry (and all below it) goes
        opaque: list[str] = []  # replaced folders: what is not in the view goes
        top = os.open(self.upper, DIR_FLAGS)
        stack = [(top, "")]
        try:
            while stack:
                fd, prefix = stack.pop()
                try:
                    for name in sorted(os.listdir(fd)):
                        rel = f"{prefix}{name}"
                        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                        if name in OPAQUE:
                            opaque.append(prefix.rstrip("/"))
                            continue
                        if name.startswith(WHITEOUT):
                            removed.append(prefix + name[len(WHITEOUT) :])
                            continue
                        if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
                            removed.append(rel)
                            continue
                        if name in NEVER_LANDED:
                            found.held.append(f"{rel} ({name} is never changed by a command)")
                            continue
                        if not budget.take_path():
                            found.complete = False
                            return found
                        state = entry_state(fd, name, st, store, budget)
                        if state["t"] == "?":
                            found.held.append(f"{rel} (a special file)")
                            continue
                        if state["t"] == "f" and not state.get("o"):
                            found.held.append(
                                f"{rel} (over {CHECKPOINT_FILE_MAX_BYTES // (1 << 20)} MiB)"
                            )
                            continue
                        after[rel] = state
                        if stat.S_ISDIR(st.st_mode):
                            with contextlib.suppress(OSError):
                                stack.append((os.open(name, DIR_FLAGS, dir_fd=fd), rel + "/"))
                finally:
                    os.close(fd)
        finally:
            for fd, _ in stack:
                os.close(fd)
        self._compare(ws, store, found, after, removed, [o for o in opaque if o])
        return found

    @staticmethod
    def _compare(
        ws: Workspace,
        store: Store,
        found: Proposal,
        after: dict[str, State],
        removed: list[str],
        opaque: list[str],
    ) -> None:
        budget = Budget(paths=CHECKPOINT_MAX_PATHS)
        now: dict[str, State] = {}
        # Everything below a removed or replaced folder is part of what changes.
        for rel in [*removed, *opaque]:
            now.update(capture(ws, rel, recursive=True, store=store, budget=budget))
        for rel in removed:
            for below in [r for r in now if r == rel or r.startswith(rel + "/")]:
                after.setdefault(below, dict(NONE))
        for rel in opaque:
            for below in [r for r in now if r.startswith(rel + "/")]:
                after.setdefault(below, dict(NONE))
        for rel in after:
            if rel not in now:
                now.update(capture(ws, rel, recursive=False, store=store, budget=budget))
        if budget.truncated:
            found.complete = False
        for rel, state in sorted(after.items()):
            before = now.get(rel, dict(NONE))
            if rel.split("/")[0] in NEVER_LANDED or any(
                part in NEVER_LANDED for part in rel.split("/")
            ):
                continue
            if before.get("t") == "d" and state.get("t") == "d":
                if before.get("m") == state.get("m"):
                    continue  # a folder the view copied up for a change below it
            elif same(before, state):
                continue  # copied up for a time stamp or an unchanged rewrite
            found.changes[rel] = (before, state)


def describe(proposal: Proposal, store: Store) -> str:
    """What the person is shown: one line per path, then the diffs, bounded."""
    lines: list[str] = []
    diffs: list[str] = []
    for rel, (before, after) in sorted(proposal.changes.items()):
        kind_b, kind_a = before.get("t"), after.get("t")
        if kind_b == "-":
            what = {"d": "new directory", "l": f"new link -> {after.get('k')}"}.get(
                str(kind_a), "new, executable" if int(after.get("m", 0)) & 0o111 else "new"
            )
        elif kind_a == "-":
            what = "deleted"
        elif kind_b != kind_a:
            what = f"now a {kind_a}"
        elif kind_a == "l":
            what = f"link -> {after.get('k')}"
        elif before.get("h") == after.get("h"):
            what = f"mode {int(before.get('m', 0)):o} -> {int(after.get('m', 0)):o}"
        else:
            what = "modified"
        lines.append(f"  {echo(rel)}: {what}")
        if "f" in (kind_b, kind_a) and before.get("h") != after.get("h"):
            diffs.append(_diff(rel, before, after, store))
    head = f"changes ({len(proposal.changes)} paths):"
    held = [f"  not landed: {echo(why)}" for why in proposal.held]
    if not proposal.complete:
        held.append("  not fully recorded: past the checkpoint bounds; nothing can land")
    text = "\n".join([head, *lines[: COMMAND_CHANGES_SHOWN * 4], *held, *diffs])
    cap = CONFIRM_SUMMARY_MAX_CHARS
    return text if len(text) <= cap else text[:cap] + f"\n… ({len(text) - cap} more chars)"


def _diff(rel: str, before: State, after: State, store: Store) -> str:
    import difflib

    try:
        old = store.get(before["h"], before["s"]).decode() if before.get("t") == "f" else ""
        new = store.get(after["h"], after["s"]).decode() if after.get("t") == "f" else ""
    except UnicodeDecodeError:
        return f"{echo(rel)}: binary"
    except (WorkspaceError, KeyError):
        return f"{echo(rel)}: (content not available)"
    plus, minus = line_counts(old.splitlines(), new.splitlines())
    body = difflib.unified_diff(
        old.splitlines(), new.splitlines(), f"a/{rel}", f"b/{rel}", lineterm=""
    )
    return "\n".join(body) or f"{echo(rel)}: +{plus} -{minus}"


def land(
    ws: Workspace, store: Store, locks: PathLocks, proposal: Proposal
) -> dict[str, tuple[State, State]]:
    """Apply a proposal to the real tree, under the paths' locks, if every path still
    holds what the person saw as its state before; else nothing lands, naming them."""
    with locks.hold(ws, (absolute(ws, rel) for rel in proposal.changes)):
        return _land(ws, store, proposal)


def landed(changes: dict[str, tuple[State, State]], store: Store) -> str:
    """`changed 3 files: ...`, as a command's recorded changes are said."""
    from .effects import summary

    return summary(Effect(changes, complete=True, overlapped=False), store)


def _land(ws: Workspace, store: Store, proposal: Proposal) -> dict[str, tuple[State, State]]:
    if not proposal.landable:
        raise WorkspaceError(
            "the staged changes cannot land: "
            + "; ".join([*proposal.held, *([] if proposal.complete else ["not fully recorded"])])
        )
    budget = Budget()
    current: dict[str, State] = {}
    for rel in proposal.changes:
        current.update(capture(ws, rel, recursive=False, store=store, budget=budget))
    moved = [
        rel
        for rel, (before, _) in proposal.changes.items()
        if not _same_entry(current.get(rel, dict(NONE)), before)
    ]
    if moved:
        raise WorkspaceError(
            f"the staged changes did not land: {', '.join(echo(r) for r in sorted(moved)[:5])} "
            f"changed since the command ran{' (and more)' if len(moved) > 5 else ''}; run it again"
        )
    targets = {rel: after for rel, (_, after) in proposal.changes.items()}
    try:
        apply(ws, targets, dict(current), store)
    except WorkspaceError as exc:  # all or nothing: what landed goes back (content stored)
        try:
            now: dict[str, State] = {}
            for rel in current:
                now.update(capture(ws, rel, recursive=False, store=None, budget=Budget()))
            apply(ws, current, now, store)
        except WorkspaceError as again:
            raise WorkspaceError(
                f"the staged changes did not land: {exc}; putting files back also failed "
                f"({again}); check the tree with git_status or list_files"
            ) from None
        raise WorkspaceError(
            f"the staged changes did not land: {exc}; every file was put back as it was"
        ) from None
    return {rel: (current.get(rel, dict(NONE)), after) for rel, after in targets.items()}


def _same_entry(now: State, before: State) -> bool:
    if before.get("t") == "d":
        return now.get("t") == "d"
    return same(now, before)


def store_proposal(store: Store, proposal: Proposal) -> str:
    digest, _ = store.put(proposal.encode())
    return digest


def load_proposal(store: Store, digest: str) -> Proposal:
    try:
        return Proposal.decode(store.get(digest))
    except WorkspaceError:
        raise WorkspaceError(
            "the staged changes are no longer in the checkpoint store (kept an hour); "
            "nothing landed: run the command again"
        ) from None
