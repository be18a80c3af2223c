"""The run loop every command tool shares: spawn a resolved program in the checked
working directory (by fd; under bubblewrap with the root bound by fd and `.git` plus the
state directory read-only), wait with progress, promote a run that outlasts
`promoteAfterMs` to a background job instead of killing it (clients give up on a call
after about 60 s), and answer with the output and how it ended. A cancelled call kills
the process group. No FastMCP here: progress is a callback, the owner an argument.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import stat
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio

from .. import features, handoff, limits
from ..containment import locate, open_dir, parts_below
from ..errors import WorkspaceError, WrongTypeError
from ..limits import STATE_DIR_NAME
from ..state.files import ensure_state_dir
from ..state.journal import activity
from ..workspaces import Workspace
from . import effects, repoguard, staging
from .commands import bwrap_prefix, hidden_homes, toolchains_in
from .jobs import Job, JobRegistry, command_answer
from .process import Child, describe_exit

# (seconds elapsed, seconds allowed, the command shown): reported while a call runs.
Progress = Callable[[float, float, str], Awaitable[None]]


@dataclass(frozen=True)
class Confinement:
    """How children run: under this bubblewrap (None: unsandboxed), with or without
    network, with `.git` writable or not, tied to our life (not under --workers, where
    the supervisor outlives a worker and reaps its jobs)."""

    bwrap: str | None
    network: bool = False
    allow_git_writes: bool = False
    die_with_parent: bool = True
    # The server's own directories no command may read (the job directory with the
    # workers' shared key, the approval key's directory): hidden in the sandbox.
    private: tuple[str, ...] = ()
    # `--confirm exec`: nothing starts unless the approval gate cleared this very call.
    needs_clearance: bool = False
    # `--stage-commands`: the fuse-overlayfs binary; every command runs against a
    # copy-on-write view made in `stage_dir` (private to the server) and its changes wait
    # for the approval gate (core.exec.staging).
    stage: str | None = None
    stage_dir: str = ""


STAGED_FOREGROUND = (
    "not run: with --stage-commands a command's changes wait for a person's approval, so "
    "it runs within its call (no background jobs); call run_command without background"
)


def shown_command(argv: list[str]) -> str:
    text = shlex.join(argv)
    return (
        text
        if len(text) <= limits.COMMAND_SHOWN_CHARS
        else text[: limits.COMMAND_SHOWN_CHARS - 3] + "..."
    )


def _job_started(job: Job, remote: bool) -> str:
    """Over HTTP the log's host path is not shown: it means nothing to a remote agent and
    tells it about the host (job_status reads the log)."""
    when = job.started_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    log = "" if remote else f"; log: {job.log.path}"
    return f"Started job {job.id} (pid {job.pid}) at {when}{log}; poll job_status"


class Runner:
    """Shared by every executing tool: spawn in the checked cwd (sandboxed when asked),
    wait with progress, promote a long run to a background job, answer."""

    def __init__(
        self,
        jobs: JobRegistry,
        confinement: Confinement,
        *,
        env: Callable[[], dict[str, str]],
        path_dirs: Callable[[], list[str]],
        promote_after_ms: int,
        remote: bool,
        recording: effects.Recording | None = None,
    ) -> None:
        self.jobs, self.confinement = jobs, confinement
        self.recording = recording  # None: commands' changes are not recorded
        self.env, self.path_dirs = env, path_dirs  # per call: a session sees its own roots
        self.promote_after_ms, self.remote = promote_after_ms, remote

    def cwd(self, ws: Workspace, cwd: str | None) -> str:
        with locate(ws, cwd or ".") as loc:
            st = loc.lstat()
            if st is None or not stat.S_ISDIR(st.st_mode):
                raise WrongTypeError(f"cwd is not a directory: {loc.display}")
            return loc.real_abs

    def spawn(self, ws: Workspace, argv: list[str], executable: str, cwd: str) -> Child:
        """Start the child in the checked cwd (by fd); under bwrap, bind the checked root
        by fd and `.git` plus the state directory read-only (unless --allow-git-writes)."""
        confinement = self.confinement
        if confinement.needs_clearance and not activity.exec_cleared():
            raise WorkspaceError(
                "not run: --confirm exec asks a person before any program runs, and this call "
                "was not approved (it reached the runner around the approval gate)"
            )
        box = activity.staged_box()
        if confinement.stage is not None and box is None:
            raise WorkspaceError(
                "not run: --stage-commands runs every command against a staged view for a "
                "person to approve, and this call reached the runner around the approval gate"
            )
        env = self.env()
        watch = (
            None
            if self.recording is None or box is not None  # staged: the real tree is untouched
            else effects.begin(self.recording, ws, shown_command(argv))
        )
        child = self._spawn(ws, argv, executable, cwd, env, watch)
        if watch is not None and self.recording is not None:
            memory = self.recording.memory
            child.watch = watch
            child.on_job_end = lambda job_id, how: effects.as_job_end(watch, job_id, memory, how)
        return child

    def _spawn(
        self,
        ws: Workspace,
        argv: list[str],
        executable: str,
        cwd: str,
        env: dict[str, str],
        watch: effects.Watch | None,
    ) -> Child:
        confinement = self.confinement
        with contextlib.ExitStack() as fds:
            cwd_fd = open_dir(ws, parts_below(ws, cwd))
            fds.callback(os.close, cwd_fd)
            fd_cwd = features.fd_path(cwd_fd, cwd)
            top = ws.root if ws.confined else ws.base
            top_parts = () if ws.confined else parts_below(ws, top)
            guarded = ws.confined
            if guarded:
                # The state directory exists before any command, so it is bound read-only
                # (a command must not make the first one, with records of its choosing).
                with contextlib.suppress(WorkspaceError):
                    ensure_state_dir(ws)
                names = (STATE_DIR_NAME,) if confinement.allow_git_writes else repoguard.NAMES
                index = None if watch is None else (watch.index, watch.store)
                before = repoguard.survey(
                    ws, top_parts, marks=confinement.bwrap is None, names=names, index=index
                )
            if confinement.bwrap is None:
                child = Child(argv, executable=executable, cwd=fd_cwd, env=env, pass_fds=(cwd_fd,))
                if guarded:
                    child.after = lambda: repoguard.settle(ws, top_parts, before, index)
                return child
            top_fd = open_dir(ws, top_parts)
            fds.callback(os.close, top_fd)
            stage = None
            if confinement.stage is not None:
                # The command sees the view at the root's own path; the real root is only
                # the view's read-only lower layer, opened by the fd checked above.
                stage = staging.Stage.make(confinement.stage, top_fd, confinement.stage_dir)
                fds.callback(lambda: stage.close() if stage.doomed else None)
                view_fd = stage.open_merged()
                fds.callback(os.close, view_fd)
            read_only = []
            if guarded:
                for fd, dest in repoguard.protected_fds(ws, top_parts, before, top):
                    fds.callback(os.close, fd)
                    read_only.append((fd, dest))
            hidden = hidden_homes(env)
            # Even below a hidden home: a toolchain given back (`~/.local` for
            # `~/.local/bin`) would show `~/.local/state` again. The sandbox's /tmp is
            # its own already.
            private = [
                real
                for real in map(os.path.realpath, confinement.private)
                if os.path.isdir(real) and not (real + "/").startswith("/tmp/")
            ]
            prefix = bwrap_prefix(
                confinement.bwrap,
                top,
                cwd,
                root_fd=top_fd if stage is None else view_fd,
                read_only=read_only,
                network=confinement.network,
                hidden=hidden,
                toolchains=toolchains_in(hidden, self.path_dirs()),
                private=private,
                die_with_parent=confinement.die_with_parent,
            )
            passed = (cwd_fd, top_fd, *(fd for fd, _ in read_only))
            if stage is not None:
                passed = (*passed, view_fd)
            child = Child(
                [*prefix, executable, *argv[1:]],
                executable=None,
                cwd=fd_cwd,
                env=env,
                pass_fds=passed,
            )
            if stage is not None:
                child.stage, stage.doomed = stage, False
            if guarded:
                child.after = lambda: repoguard.settle(ws, top_parts, before, index)
            return child

    async def run(
        self,
        ws: Workspace,
        argv: list[str],
        executable: str,
        cwd: str,
        timeout_ms: int,
        background: bool,
        *,
        owner: str | None,
        progress: Progress | None = None,
        promote_after_ms: int | None = None,
        became_job: Callable[[Job], None] | None = None,
    ) -> str:
        """Run `argv` (its program already resolved to `executable`) and answer with its
        output and exit; `owner` owns the job it may become, `became_job` hears of it
        (a task client is answered with the job as its task)."""
        registry = self.jobs
        box = activity.staged_box() if self.confinement.stage is not None else None
        if box is not None and background:
            raise WorkspaceError(STAGED_FOREGROUND)
        child = await handoff.run_sync(lambda: self.spawn(ws, argv, executable, cwd))
        command = shown_command(argv)
        activity.record(detail=command)
        activity.ran_command()
        if background:
            job = registry.adopt(
                child,
                command=command,
                cwd=cwd,
                owner=owner,
                name=None,
                max_runtime_ms=timeout_ms,
                replay=True,
            )
            activity.record(result=f"started ({job.id})")
            if became_job is not None:
                became_job(job)
            return _job_started(job, self.remote)
        promote_after = min(promote_after_ms or self.promote_after_ms, self.promote_after_ms) / 1000
        if box is not None:
            promote_after = float("inf")  # its changes wait for a person: it ends in this call
        started = time.monotonic()
        next_progress = started + limits.PROGRESS_INTERVAL_SECONDS
        pause = 0.002
        try:
            while not child.finished.is_set():
                await anyio.sleep(pause)
                pause = min(pause * 2, 0.05)
                now = time.monotonic()
                if now - started >= timeout_ms / 1000:
                    child.timed_out = True
                    await handoff.run_sync(child.kill)
                    break
                if now - started >= promote_after:
                    remaining = int(timeout_ms - (now - started) * 1000)
                    job = registry.adopt(
                        child,
                        command=command,
                        cwd=cwd,
                        owner=owner,
                        name=None,
                        max_runtime_ms=max(remaining, 1),
                        replay=False,
                    )
                    activity.record(result=f"moved to background ({job.id})")
                    if became_job is not None:
                        became_job(job)
                    so_far = child.buffer.text().rstrip("\n") or "(no output yet)"
                    waited = int(promote_after * 1000)
                    return (
                        f"$ {command}\n{so_far}\n[still running after {waited} ms: moved to "
                        f"background job {job.id}; poll job_status, stop with job_kill]"
                    )
                if progress is not None and now >= next_progress:
                    next_progress = now + limits.PROGRESS_INTERVAL_SECONDS
                    await progress(now - started, timeout_ms / 1000, command)
        except BaseException:
            # Cancelled (or the server is going down): the command must not outlive us.
            with anyio.CancelScope(shield=True):
                await handoff.run_sync(child.kill)
                if child.stage is not None:
                    await handoff.run_sync(child.stage.close)
                if (watching := child.watch) is not None:
                    await handoff.run_sync(lambda: effects.into_call(watching))
            raise
        outcome = child.outcome()
        status = describe_exit(outcome, timeout_ms)
        code = outcome.exit_code
        notes = await handoff.run_sync(child.settle)
        changed = ""
        if (watch := child.watch) is not None:
            changed = await handoff.run_sync(lambda: effects.into_call(watch))
        activity.record(
            result=(
                f"timed out ({outcome.duration_ms}ms)"
                if outcome.timed_out
                else f"exit {code} ({outcome.duration_ms}ms)"
            )
            + "".join(f"; {note}" for note in notes)
        )
        answer = command_answer(command, child.buffer.text(), status)
        answer += "".join(f"\n[the command {note}]" for note in notes)
        if box is not None and (stage := child.stage) is not None:
            box.answer = answer
            box.proposal = await handoff.run_sync(lambda: self._collect(ws, stage))
            box.proposal.answer = answer
        return answer + (f"\n{changed}" if changed else "")

    def _collect(self, ws: Workspace, stage: staging.Stage) -> staging.Proposal:
        """The staged command's change set, its view unmounted and removed."""
        try:
            if self.recording is None:
                raise WorkspaceError("--stage-commands needs the checkpoint store")
            return stage.proposal(ws, self.recording.store(ws))
        finally:
            stage.close()

    async def start(
        self,
        ws: Workspace,
        argv: list[str],
        executable: str,
        cwd: str,
        *,
        owner: str | None,
        name: str | None,
        max_runtime_ms: int,
    ) -> str:
        """Start `argv` as a background job at once; the answer names the job."""
        if self.confinement.stage is not None:
            raise WorkspaceError(STAGED_FOREGROUND)
        child = await handoff.run_sync(lambda: self.spawn(ws, argv, executable, cwd))
        shown = shown_command(argv)
        job = self.jobs.adopt(
            child,
            command=shown,
            cwd=cwd,
            owner=owner,
            name=name,
            max_runtime_ms=max_runtime_ms,
            replay=True,
        )
        activity.record(detail=shown, result=f"started ({job.id})")
        activity.ran_command()
        return _job_started(job, self.remote)
