"""The `agent-workspace-mcp` command: load settings, check them, run a transport.

The whole configuration is parsed and checked (`configuration.preflight`: roots, auth,
exposure) before FastMCP is imported, so `--help`, `--version` and a bad value answer
in a fraction of a second, with one clear line on stderr and exit code 2 instead of a
slow start and a traceback.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Sequence

from .configuration import (
    PROG,
    ListProfilesRequested,
    build_parser,
    package_version,
    preflight,
    settings_from_sources,
    unknown_environment,
)
from .core.errors import ConfigError
from .core.operator import say

__all__ = ["PROG", "build_parser", "main", "package_version", "settings_from_sources"]


def _warn(message: str) -> None:
    say(f"WARNING: {message}")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # Start-up only allocates what lives as long as the process (modules, models,
    # schemas): collecting cycles meanwhile finds nothing and cost ~100 ms of a cold
    # start (issue 15). Frozen afterwards, later collections also skip it all.
    gc.disable()
    try:
        return _main(args)
    finally:
        gc.enable()


def _started() -> None:
    """The server is built: keep what start-up made out of every later collection."""
    gc.freeze()
    gc.enable()


COMMAND_HELP = {
    "config": (
        "usage: {prog} config CLIENT DIR [--name NAME] [server options]\n"
        "       {prog} config CLIENT --http [--url URL] [--token-env VAR] [server options]\n\n"
        "Print a ready-to-paste entry for CLIENT (claude-desktop, cursor, claude-code, "
        "opencode, codex, vscode)\nthat starts this installation on DIR with the given "
        "server options (checked first; paths made\nabsolute; tokens never copied). "
        "--name NAME names the entry (default agent-workspace).\n\n"
        "With --http it prints the client's remote form instead: the server's URL (--url "
        "for one behind\na proxy) and an Authorization header the client reads from "
        "AGENT_WORKSPACE_TOKEN (--token-env\nVAR) at connect time; stderr says how to "
        "start that server.\n"
    ),
    "console": (
        "usage: {prog} console [DIR...] [--port N] [--no-open] [server options]\n\n"
        "The operator console: a web page on 127.0.0.1 (a free port unless --port) showing "
        "every\nagent call live with its diff, jobs, notes and changes, with undo and job "
        "kill. It reads\nthe workspaces' state on disk, so it works for any server on "
        "these roots, running or not.\nThe printed link signs in once (keep it private).\n"
    ),
    "check": (
        "usage: {prog} check DIR [server options]\n\n"
        "Start the server over stdio as a client would and use it: initialize, list the "
        "tools, list\nfiles, read one. One line per step with its time; exit 1 at the "
        "first step that fails\n(with the server's last lines), 2 for bad options.\n"
    ),
}


def _main(args: list[str]) -> int:
    if args[:1] in (["config"], ["check"], ["console"]) and any(
        a in ("-h", "--help") for a in args[1:]
    ):
        sys.stdout.write(COMMAND_HELP[args[0]].format(prog=PROG))
        return 0
    if args[:1] == ["config"]:
        from .config import main as config_main

        return config_main(args[1:])
    if args[:1] == ["console"]:
        from .console.main import main as console_main

        return console_main(args[1:])
    if args[:1] == ["check"]:
        from .check import main as check_main

        return check_main(args[1:])
    worker = None  # a worker of `--workers N`: how the supervisor hands over (workers.py)
    if args[:1] == ["__worker__"]:
        worker, args = args[1:4], args[4:]
    try:
        try:
            settings = settings_from_sources(args)
        except ListProfilesRequested:
            from .server import describe_surfaces

            sys.stdout.write(describe_surfaces() + "\n")
            return 0
        if settings.unconfined and settings.cwd:
            try:
                os.chdir(settings.cwd)
            except OSError as exc:
                raise ConfigError(
                    f"WORKSPACE_CWD cannot be entered: {settings.cwd} ({exc.strerror})"
                ) from None
        registry = preflight(settings)
        wide = wide_roots(registry)
        handover = None
        if not settings.http:
            # Claim stdin/stdout now: answers the server wrote on an earlier start go out
            # while FastMCP loads (issue 36); everything read is handed to the server.
            from .transports.early import begin

            confined = not settings.unconfined
            handover = begin(settings if confined else None, registry.roots())
        if settings.workers > 1:
            # Any worker may answer any request: sessions held in one worker's memory
            # would break on the next request (see transports/workers.py).
            settings = settings.model_copy(update={"stateless": True})
            if worker is None:
                _say_warnings(settings, wide)
                from .transports.workers import Supervisor

                gc.enable()  # the supervisor runs as long as the server
                return Supervisor(settings, args).run()
        from . import telemetry

        traces_problem = telemetry.configure(os.environ)
        from .server import build

        app, services = build(settings)
        if telemetry.active():
            services.shutdown.register("export traces", telemetry.flush)
    except ConfigError as exc:
        say(f"error: {exc}")
        return 2
    if worker is None:  # the supervisor said them once for all workers
        _say_warnings(settings, [*wide, *([traces_problem] if traces_problem else [])])
    line = ready_line(settings, services, app)
    _started()
    if settings.http:
        from .transports.http import run_http

        return run_http(app, services, line, worker)
    from .transports.stdio import run_stdio

    assert handover is not None
    return run_stdio(app, services, line, handover)


def _say_warnings(settings, more: list[str]) -> None:
    if settings.shell_mode == "any":
        _warn(
            "--shell-any: the connected agent can run any program as this user (bash "
            "included); only the command sandbox, where the start-up line names it, limits "
            "what they reach."
        )
    if settings.http and settings.no_auth:
        _warn(
            f"--no-auth: anyone who can reach {settings.host}:{settings.port} can read and "
            "write the workspace."
        )
    for warning in [*contradictions(settings), *unknown_environment(), *more]:
        _warn(warning)
    if settings.unconfined:
        _warn(
            "--unconfined: every path on this machine that this user can reach is readable "
            "and writable by the connected agent. There is no workspace boundary."
        )


def wide_roots(registry) -> list[str]:
    """A root that is `/` or a home directory is almost never meant (a client started
    the server in `/`, or `--root ~`): said once, naming it."""
    home = os.path.realpath(os.path.expanduser("~"))
    found = []
    for ws in registry:
        if not ws.confined:
            continue
        if ws.root == "/":
            found.append(
                f"workspace {ws.name} is / : the agent can read and write the whole file system"
            )
        elif ws.root == home:
            found.append(
                f"workspace {ws.name} is your home directory ({ws.root}): the agent can read "
                "and write every project, key and token in it"
            )
    return found


def contradictions(settings) -> list[str]:
    """Flags that cancel each other: said once, instead of silently dropping one."""
    found = []
    asked_exec = settings.shell_mode is not None or settings.tasks
    if asked_exec and settings.read_only:
        found.append("--read-only turns off the command tools that --shell/--tasks asked for")
    # (Command tools asked for over HTTP without --allow-remote-exec: server.build says so.)
    if settings.sandbox == "bwrap" and not (asked_exec or settings.unconfined):
        found.append("--sandbox has no effect: no command tool is enabled")
    if settings.sandbox_network and not (asked_exec or settings.unconfined):
        found.append("--sandbox-network has no effect: no command tool is enabled")
    return found


def ready_line(settings, services, app) -> str:
    """One stderr line saying what is served and what the server waits for (issue 14)."""
    import anyio

    # Without middleware: the count is the same, and the listing's schema work (and the
    # jsonref import it brings) waits for a client that asks (issue 15: cold start).
    listed = anyio.run(lambda: app.list_tools(run_middleware=False))
    names = {tool.name for tool in listed}
    # The count tools/list serves a client; a tool only an MCP App calls is named apart
    # (a host without apps never lists it: issue 44).
    app_only = {
        t.name for t in listed if ((t.meta or {}).get("ui") or {}).get("visibility") == ["app"]
    }
    tools = f"{len(names - app_only)} tools" + (
        f" (+{len(app_only)} for hosts with MCP Apps)" if app_only else ""
    )
    roots = ", ".join(
        ws.base if not ws.confined else f"{ws.name}={ws.root}" for ws in services.registry
    )
    mode = "unconfined" if settings.unconfined else "confined"
    # What is served, not what was asked: --tools or a profile may leave a command tool out.
    served = [n for n in ("run_command", "start_job", "bash", "run_task") if n in names]
    if not settings.execution_allowed:
        commands = "commands off over HTTP"
    elif served:
        notes = [{"allowlist": "allowlist", "any": "any command"}.get(settings.shell_mode or "")]
        if services.sandbox_said:
            network = ", network on" if services.bwrap and settings.sandbox_network else ""
            notes.append(services.sandbox_said + network)
        if services.stage is not None:
            notes.append("each against a view, landed as --confirm decides")
        shown = "; ".join(n for n in notes if n)
        commands = f"commands {', '.join(served)}" + (f" ({shown})" if shown else "")
    else:
        commands = "commands off"
    if settings.confirm or settings.confirm_path:  # who decides, said where the operator looks
        asked = ", ".join([*settings.confirm, *settings.confirm_path])
        commands += f", asks a person before {asked} (via {','.join(settings.confirm_via)})"
    if settings.http:
        waits = f"serving http://{settings.host}:{settings.port}/mcp"
    else:
        waits = "waiting for a client on stdin"
    return (
        f"v{package_version()}, {tools}, {mode} ({roots}), {commands}, "
        f"profile {settings.profile}; {waits}"
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
