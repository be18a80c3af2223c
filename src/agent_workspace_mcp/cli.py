"""The `agent-workspace-mcp` command: parse flags, build settings, run a transport.

FastMCP is imported only after the flags are valid: `--help`, `--version` and usage
errors answer in a few milliseconds, and a client that launches us with a typo gets
one clear line on stderr (exit code 2) instead of a slow start and a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .core.errors import ConfigError
from .settings import Settings, layered_env, parse_workspace_flag, truthy

PROG = "agent-workspace-mcp"


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(PROG)
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{PROG}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog=PROG,
        description=(
            "A safe, fast MCP workspace for coding agents. Serves files under --root "
            "(and named --workspace roots) over stdio, or Streamable HTTP with --http."
        ),
        epilog=(
            "Environment: WORKSPACE_MCP_ROOT, WORKSPACE_MCP_WORKSPACES (name=dir,...), "
            "WORKSPACE_MCP_UNCONFINED, WORKSPACE_CWD, WORKSPACE_MCP_READ_ONLY, "
            "WORKSPACE_MCP_LOG_LEVEL; a .env file in the cwd is read too (flags win, then "
            "the environment, then .env)."
        ),
    )
    parser.add_argument("-v", "--version", action="version", version=f"{PROG} {package_version()}")
    ws = parser.add_argument_group("workspaces")
    ws.add_argument(
        "--root", metavar="DIR", help="primary workspace, named 'default' (default: cwd)"
    )
    ws.add_argument(
        "--workspace",
        metavar="NAME=DIR",
        action="append",
        default=[],
        help="add a named workspace (repeatable); names match ^[a-z0-9][a-z0-9_-]*$",
    )
    ws.add_argument(
        "--unconfined",
        action="store_true",
        default=None,
        help="full-machine mode: paths are used exactly as given (no workspace boundary)",
    )
    ws.add_argument(
        "--read-only",
        action="store_true",
        default=None,
        help="register only tools that change nothing",
    )
    parser.add_argument(
        "--search-engine",
        choices=["auto", "rg", "python"],
        help="grep/list_files engine: ripgrep when found (auto), or force one",
    )
    parser.add_argument(
        "--log-level",
        metavar="LEVEL",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="stderr log level (default WARNING)",
    )
    return parser


def settings_from_sources(
    argv: Sequence[str] | None = None, environ: dict[str, str] | None = None
) -> Settings:
    """Flags over environment over `.env` over defaults."""
    args = build_parser().parse_args(argv)
    env = layered_env(environ)
    root = args.root if args.root is not None else env.get("WORKSPACE_MCP_ROOT") or None
    workspace_flags = list(args.workspace)
    if not workspace_flags and env.get("WORKSPACE_MCP_WORKSPACES"):
        workspace_flags = [
            w.strip() for w in env["WORKSPACE_MCP_WORKSPACES"].split(",") if w.strip()
        ]
    workspaces = [parse_workspace_flag(w) for w in workspace_flags]
    unconfined = (
        args.unconfined
        if args.unconfined is not None
        else truthy(env.get("WORKSPACE_MCP_UNCONFINED"))
    )
    read_only = (
        args.read_only if args.read_only is not None else truthy(env.get("WORKSPACE_MCP_READ_ONLY"))
    )
    if unconfined and (root is not None or workspaces):
        raise ConfigError("--unconfined cannot be combined with --root or --workspace")
    log_level = args.log_level or env.get("WORKSPACE_MCP_LOG_LEVEL", "WARNING").upper()
    search_engine = args.search_engine or env.get("WORKSPACE_MCP_SEARCH_ENGINE", "auto")
    return Settings(
        root=root,
        workspaces=tuple(workspaces),
        unconfined=unconfined,
        cwd=env.get("WORKSPACE_CWD") or None,
        read_only=read_only,
        log_level=log_level,
        search_engine=search_engine,
    )


def main(argv: Sequence[str] | None = None) -> int:
    try:
        settings = settings_from_sources(argv)
        if settings.unconfined and settings.cwd:
            try:
                os.chdir(settings.cwd)
            except OSError as exc:
                raise ConfigError(
                    f"WORKSPACE_CWD cannot be entered: {settings.cwd} ({exc.strerror})"
                ) from None
        from .server import build

        app, services = build(settings)
    except ConfigError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    if settings.unconfined:
        print(
            f"{PROG}: WARNING: --unconfined: every path on this machine that this user can reach "
            "is readable and writable by the connected agent. There is no workspace boundary.",
            file=sys.stderr,
        )
    from .transports.stdio import run_stdio

    return run_stdio(app, services)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
