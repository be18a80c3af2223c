"""Opt-in execution: `run_command`, `bash`, `run_task` and the job tools.

Nothing here is registered unless the operator asked for it (`--shell`,
`--shell-any`, `--tasks`, `--unconfined`). Every command: cwd contained, argv only
(`bash` aside, which exists precisely to run a shell string), scrubbed environment,
its own process group, merged and bounded output. A command still running after
`promoteAfterMs` becomes a background job instead of being killed (clients give up on
a call after about 60 s); `background: true` does that at once. A cancelled request
kills its process group.
"""

import contextlib
from collections.abc import Callable
from typing import Annotated, Any

from fastmcp import Context, FastMCP
from mcp_types import ToolAnnotations
from pydantic import Field

from ..core import limits, proofkey
from ..core.containment import locate
from ..core.errors import InvalidArgumentError
from ..core.exec.commands import (
    DEFAULT_ALLOWLIST,
    Policy,
    task_argv,
    which,
)
from ..core.exec.effects import Recording
from ..core.exec.jobs import Job, JobView
from ..core.exec.runner import Confinement, Runner
from ..core.state.journal import activity
from ..core.workspaces import Workspace
from ..requestctx import TASK_CALL, current_subject
from ..services import Services
from ..settings import Settings
from .base import WorkspaceArg, add_tool, bind, numbers_from_limits

EXECUTES = ToolAnnotations(destructive_hint=True)  # open world: a command can reach anything
JOB_STATUS = ToolAnnotations(read_only_hint=True, open_world_hint=False)

Argv = Annotated[
    list[str],
    Field(
        min_length=1,
        description="Program and arguments, e.g. ['npm', 'test']. No shell: | > && $ are literal.",
    ),
]
Cwd = Annotated[
    str | None, Field(description="Working directory, workspace-relative (default: the root).")
]
TimeoutMs = Annotated[
    int,
    Field(
        ge=limits.RUN_TIMEOUT_MIN_MS,
        le=limits.RUN_TIMEOUT_MAX_MS,
        description="Kill the command after this many milliseconds.",
    ),
]
Background = Annotated[
    bool,
    Field(description="Start as a background job at once and return its jobId (poll job_status)."),
]


class Commands:
    """What every command tool shares: the services, the allowlist policies and the
    core run loop (core/exec/runner.Runner), configured once from the settings."""

    def __init__(self, services: Services) -> None:
        self.services = services
        settings = services.settings
        self.path_dirs = tuple(services.child_path_dirs())
        allow = set(DEFAULT_ALLOWLIST) | set(settings.shell_allow)
        self.policy = Policy(settings.shell_mode or "allowlist", frozenset(allow), self.path_dirs)
        self.any_policy = Policy("any", frozenset(), self.path_dirs)
        confinement = Confinement(
            services.bwrap,
            network=settings.sandbox_network,
            allow_git_writes=settings.allow_git_writes,
            die_with_parent=settings.workers <= 1,
            private=(services.jobs.job_dir, str(proofkey.key_dir())),
            needs_clearance="exec" in settings.confirm,
            stage=services.stage,
        )
        self.runner = Runner(
            services.jobs,
            confinement,
            env=services.child_env,
            path_dirs=services.child_path_dirs,
            promote_after_ms=settings.promote_after_ms,
            remote=bool(settings.http),
            recording=(
                Recording(services.checkpoints, services.memory) if settings.checkpoints else None
            ),
        )

    def cwd(self, ws: Workspace, cwd: str | None) -> str:
        return self.runner.cwd(ws, cwd)

    async def run(
        self,
        ctx: Context | None,
        ws: Workspace,
        argv: list[str],
        executable: str,
        cwd: str,
        timeout_ms: int,
        background: bool,
    ) -> str:
        async def progress(elapsed: float, total: float, command: str) -> None:
            if ctx is not None:
                await _progress(ctx, elapsed, total, command)

        task = TASK_CALL.get()
        promote = limits.TASK_PROMOTE_AFTER_MS if task is not None else None

        def became_job(job: Job) -> None:
            if task is not None:
                task.job_id = job.id

        return await self.runner.run(
            ws,
            argv,
            executable,
            cwd,
            timeout_ms,
            background,
            owner=current_subject(),
            progress=progress,
            promote_after_ms=promote,
            became_job=became_job,
        )


async def _progress(ctx: Context, elapsed: float, total: float, command: str) -> None:
    # A client without progress support must not break the command.
    with contextlib.suppress(Exception):
        await ctx.report_progress(
            progress=round(elapsed, 1), total=total, message=f"running: {command}"
        )


async def run_command(
    runner: Commands,
    command: Argv,
    cwd: Cwd = None,
    timeoutMs: TimeoutMs = limits.RUN_TIMEOUT_DEFAULT_MS,
    background: Background = False,
    workspace: WorkspaceArg = None,
    ctx: Context | None = None,
) -> str:
    """Run a program with arguments (no shell) in the workspace and return its output.

    stdout and stderr are merged; output above {shortened} KiB keeps the first {head} and
    last {tail} KiB. Reports the exit code (or the timeout) and the duration. A command
    still running after ~{promote} s continues as a background job (see job_status).
    """
    ws = runner.services.workspaces.get(workspace)
    cwd_real = runner.cwd(ws, cwd)
    executable = runner.policy.resolve(command[0], cwd_real)
    return await runner.run(ctx, ws, command, executable, cwd_real, timeoutMs, background)


numbers_from_limits(
    run_command,
    shortened=limits.OUTPUT_SHORTENED_ABOVE_BYTES // limits.KIB,
    head=limits.OUTPUT_HEAD_BYTES // limits.KIB,
    tail=limits.OUTPUT_TAIL_BYTES // limits.KIB,
    promote=limits.PROMOTE_AFTER_DEFAULT_MS // 1000,
)


async def bash(
    runner: Commands,
    command: Annotated[
        str, Field(min_length=1, description="A bash command line, run with `bash -c`.")
    ],
    cwd: Cwd = None,
    timeoutMs: Annotated[
        int,
        Field(
            ge=limits.RUN_TIMEOUT_MIN_MS,
            description="Kill after this many milliseconds (capped).",
        ),
    ] = limits.RUN_TIMEOUT_DEFAULT_MS,
    background: Background = False,
    workspace: WorkspaceArg = None,
    ctx: Context | None = None,
) -> str:
    """Run a shell command line with a real bash (pipes, redirection, globs work).

    Output handling, timeout and background behaviour are those of run_command.
    """
    ws = runner.services.workspaces.get(workspace)
    cwd_real = runner.cwd(ws, cwd)
    bash_path = which("bash", runner.path_dirs)
    if bash_path is None:
        raise InvalidArgumentError("bash is not installed on this machine")
    cap = runner.services.settings.shell_max_timeout_seconds * 1000
    timeout = min(timeoutMs, cap)
    return await runner.run(
        ctx, ws, ["bash", "-c", command], bash_path, cwd_real, timeout, background
    )


async def run_task(
    runner: Commands,
    runner_name: Annotated[
        str,
        Field(alias="runner", description="pytest, npm, pnpm, yarn, maven, gradle, go or cargo."),
    ],
    task: Annotated[str, Field(description="test, build or lint (what the runner supports).")],
    paths: Annotated[
        list[str] | None,
        Field(
            max_length=limits.TASK_MAX_PATHS,
            description="Workspace-relative test paths or packages.",
        ),
    ] = None,
    timeoutSeconds: Annotated[
        int,
        Field(
            ge=1,
            le=limits.JOB_MAX_RUNTIME_MAX_MS // 1000,
            description="Kill after this many seconds.",
        ),
    ] = limits.TASK_TIMEOUT_DEFAULT_SECONDS,
    background: Background = False,
    workspace: WorkspaceArg = None,
    ctx: Context | None = None,
) -> str:
    """Run a typed build/test task: a fixed command per runner and task, no free-form flags.

    Unsupported runner/task combinations are refused with the valid ones. Project
    tests still run project code: this is not a sandbox.
    """
    ws = runner.services.workspaces.get(workspace)
    cwd_real = runner.cwd(ws, None)
    rel_paths = []
    for path in paths or []:
        with locate(ws, path) as loc:
            if loc.lstat() is None:
                raise InvalidArgumentError(f"not found: {loc.display}")
            rel_paths.append(loc.real_rel)
    argv = task_argv(runner_name, task, rel_paths)
    executable = runner.any_policy.resolve(argv[0], cwd_real)
    return await runner.run(ctx, ws, argv, executable, cwd_real, timeoutSeconds * 1000, background)


async def start_job(
    runner: Commands,
    command: Argv,
    cwd: Cwd = None,
    name: Annotated[
        str | None, Field(max_length=100, description="A label for job_status.")
    ] = None,
    maxRuntimeMs: Annotated[
        int,
        Field(
            ge=limits.JOB_MAX_RUNTIME_MIN_MS,
            le=limits.JOB_MAX_RUNTIME_MAX_MS,
            description="Kill the job after this many milliseconds.",
        ),
    ] = limits.JOB_MAX_RUNTIME_DEFAULT_MS,
    workspace: WorkspaceArg = None,
) -> str:
    """Start a long-running command detached and return its jobId at once.

    Same allowlist, cwd and no-shell rules as run_command. Output goes to a log file
    outside the workspace; poll job_status, stop with job_kill.
    """
    ws = runner.services.workspaces.get(workspace)
    cwd_real = runner.cwd(ws, cwd)
    executable = runner.policy.resolve(command[0], cwd_real)
    return await runner.runner.start(
        ws,
        command,
        executable,
        cwd_real,
        owner=current_subject(),
        name=name,
        max_runtime_ms=maxRuntimeMs,
    )


def job_status(
    runner: Commands,
    jobId: Annotated[
        str | None,
        Field(description=f"Omit to list your {limits.JOB_LIST_RECENT} most recent jobs."),
    ] = None,
    tailBytes: Annotated[
        int,
        Field(
            ge=0,
            description=f"Bytes of log tail to include (cap {limits.JOB_TAIL_MAX_BYTES}).",
        ),
    ] = limits.JOB_TAIL_DEFAULT_BYTES,
) -> str:
    """A job's status, exit code, duration, log size and log tail; or the recent jobs."""
    owner = current_subject()
    if jobId is None:
        jobs = runner.services.jobs.recent(owner)
        if not jobs:
            return "no jobs yet"
        return "\n".join(
            f"{j.id}  {j.status}  {j.duration_ms // 1000}s  {j.command}"
            + (f"  ({j.name})" if j.name else "")
            for j in jobs
        )
    job = runner.services.jobs.get(jobId, owner)
    clamped = min(tailBytes, limits.JOB_TAIL_MAX_BYTES)
    answer = _describe_job(runner.services, job, clamped)
    if clamped < tailBytes:
        answer += f"\n(tailBytes clamped to {clamped}; the whole log stays on disk)"
    return answer


def job_kill(runner: Commands, jobId: Annotated[str, Field(description="The job to stop.")]) -> str:
    """Stop a job: SIGTERM to its whole process group, SIGKILL after {grace:g} s.

    Killing a job that already finished is not an error.
    """
    activity.record(detail=jobId)
    activity.ran_command()
    job = runner.services.jobs.kill(jobId, current_subject())
    activity.record(result=job.status)
    return _describe_job(runner.services, job, 0)


numbers_from_limits(job_kill, grace=limits.KILL_GRACE_SECONDS)


def _shell(s: Settings) -> bool:
    return s.shell_mode is not None


def _unrestricted(s: Settings) -> bool:
    return s.shell_mode == "any" or s.unconfined


def _any_command(s: Settings) -> bool:
    return _shell(s) or _unrestricted(s) or s.tasks


# Each command tool, the flag that registers it (what an agent and the operator are told
# when it is off, and the README's column) and the condition register() applies: the
# one home of that fact. Over HTTP none registers without --allow-remote-exec.
COMMAND_TOOLS: dict[str, tuple[str, Callable[[Settings], bool]]] = {
    "run_command": ("--shell (or --shell-any)", _shell),
    "start_job": ("--shell (or --shell-any)", _shell),
    "bash": ("--shell-any (or --unconfined)", _unrestricted),
    "run_task": ("--tasks (or --shell)", lambda s: s.tasks or _shell(s)),
    "job_status": ("--shell, --shell-any or --tasks", _any_command),
    "job_kill": ("--shell, --shell-any or --tasks", _any_command),
}
ENABLED_BY = {name: flag for name, (flag, _) in COMMAND_TOOLS.items()}


def register(app: FastMCP, services: Services) -> None:
    settings = services.settings
    if not settings.execution_allowed or not _any_command(settings):
        return
    runner = Commands(services)
    tools: dict[str, tuple[Callable[..., Any], ToolAnnotations, str]] = {
        "run_command": (run_command, EXECUTES, "Run command"),
        "start_job": (start_job, EXECUTES, "Start background job"),
        "bash": (bash, EXECUTES, "Run bash"),
        "run_task": (run_task, EXECUTES, "Run build/test task"),
        "job_status": (job_status, JOB_STATUS, "Job status"),
        "job_kill": (job_kill, EXECUTES, "Kill job"),
    }
    for name, (_flag, enabled) in COMMAND_TOOLS.items():
        if enabled(settings):
            fn, annotations, title = tools[name]
            # Each tool that starts a program says so (and add_tool holds it to the list).
            add_tool(
                app,
                bind(fn, runner),
                annotations=annotations,
                title=title,
                executes=fn in (run_command, start_job, bash, run_task),
            )


def _describe_job(services: Services, job: JobView, tail_bytes: int) -> str:
    code = job.exit_code
    head = f"job {job.id}" + (f" ({job.name})" if job.name else "") + f": {job.status}"
    if job.status != "running" and code is not None:
        head += f", exit code {code}"
    head += f", {job.duration_ms} ms, log {job.log_size} bytes"
    if job.log_capped:
        head += f" (log capped at {limits.JOB_LOG_CAP_BYTES // limits.MIB} MiB)"
    head += f"\n$ {job.command}"
    if tail_bytes:
        tail = services.jobs.tail(job, tail_bytes).rstrip("\n")
        label = (
            "the whole log" if job.log_size <= tail_bytes else f"last {tail_bytes} bytes of the log"
        )
        head += f"\n--- {label} ---\n{tail or '(no output yet)'}"
    return head
