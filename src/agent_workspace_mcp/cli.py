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

from .console import say
from .core.errors import ConfigError
from .settings import Settings, layered_env, parse_api_keys, parse_workspace_flag, truthy

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
    http = parser.add_argument_group("Streamable HTTP")
    http.add_argument(
        "--http", action="store_true", default=None, help="serve Streamable HTTP at /mcp"
    )
    http.add_argument("--host", metavar="HOST", help="bind host (default 127.0.0.1)")
    http.add_argument("--port", type=int, metavar="N", help="bind port (default 3333)")
    http.add_argument("--token", metavar="T", help="one bearer token (env MCP_TOKEN)")
    http.add_argument(
        "--api-key",
        metavar="SUBJECT=TOKEN",
        action="append",
        default=[],
        help="a per-subject API key, also accepted as x-api-key (repeatable; env "
        "WORKSPACE_MCP_API_KEYS=a=t1,b=t2)",
    )
    http.add_argument(
        "--jwt-secret", metavar="S", help="HS256 shared secret (env WORKSPACE_MCP_JWT_SECRET)"
    )
    http.add_argument("--jwt-public-key", metavar="FILE", help="PEM public key (RS*/ES*/EdDSA)")
    http.add_argument("--jwks-url", metavar="URL", help="JWKS endpoint of the token issuer")
    http.add_argument("--jwt-issuer", metavar="ISS", help="required `iss` claim")
    http.add_argument(
        "--jwt-audience", metavar="AUD", help="required `aud` claim (mandatory with JWT)"
    )
    http.add_argument(
        "--jwt-algorithm", metavar="ALG", help="override the algorithm the key implies"
    )
    http.add_argument(
        "--auth-server",
        metavar="URL",
        help="authorization server to advertise (RFC 9728 metadata at "
        "/.well-known/oauth-protected-resource)",
    )
    http.add_argument("--public-url", metavar="URL", help="this server's external base URL")
    http.add_argument(
        "--no-auth",
        action="store_true",
        default=None,
        help="serve without auth (loopback only; prints a warning)",
    )
    http.add_argument(
        "--allowed-host",
        metavar="HOST",
        action="append",
        default=[],
        help="accept this Host header too (repeatable)",
    )
    http.add_argument(
        "--cors-origin",
        metavar="ORIGIN",
        action="append",
        default=[],
        help="allow this browser origin, with CORS headers (repeatable)",
    )
    http.add_argument(
        "--stateless",
        action="store_true",
        default=None,
        help="no sessions: every POST is handled on its own",
    )
    http.add_argument(
        "--allow-remote-exec",
        action="store_true",
        default=None,
        help="let --shell/--shell-any/--tasks apply over HTTP too",
    )
    http.add_argument(
        "--rate-limit",
        type=float,
        metavar="N",
        help="at most N requests per second per subject (off by default)",
    )
    ex = parser.add_argument_group("command execution (off unless asked for)")
    ex.add_argument(
        "--shell",
        action="store_true",
        default=None,
        help="enable run_command, start_job, job_status, job_kill, run_task (allowlist: "
        "pnpm, npm, npx, node)",
    )
    ex.add_argument(
        "--shell-any",
        action="store_true",
        default=None,
        help="the same tools plus bash, any executable (prints a warning)",
    )
    ex.add_argument(
        "--shell-allow",
        metavar="LIST",
        action="append",
        default=[],
        help="add executables to the allowlist (comma-separated, repeatable)",
    )
    ex.add_argument("--tasks", action="store_true", default=None, help="enable run_task only")
    ex.add_argument(
        "--pass-env",
        metavar="NAME",
        action="append",
        default=[],
        help="pass this variable to commands although its name looks like a secret (repeatable)",
    )
    ws.add_argument(
        "--allow-git-writes",
        action="store_true",
        default=None,
        help="let file tools write under .git (refused by default: hooks and config there "
        "run as you)",
    )
    ex.add_argument(
        "--sandbox",
        choices=["bwrap"],
        help="run every command under bubblewrap (workspace writable, rest read-only, no network)",
    )
    ex.add_argument(
        "--promote-after-ms",
        type=int,
        metavar="MS",
        help="move a command still running after MS to a background job (default 45000)",
    )
    parser.add_argument(
        "--audit-log",
        metavar="FILE",
        help="append one JSON line per tool call to FILE (default: stderr; rotated like the "
        "journal)",
    )
    parser.add_argument(
        "--no-audit", action="store_true", default=None, help="do not write audit lines"
    )
    parser.add_argument(
        "--search-engine",
        choices=["auto", "rg", "python"],
        help="grep/list_files engine: ripgrep when found (auto), or force one",
    )
    parser.add_argument(
        "--tools",
        metavar="A,B",
        action="append",
        default=[],
        help="register only these tools (comma-separated, repeatable)",
    )
    parser.add_argument(
        "--disable-tools",
        metavar="A,B",
        action="append",
        default=[],
        help="do not register these tools (comma-separated, repeatable)",
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
    shell_mode = _shell_mode(args, env)
    allow_raw = args.shell_allow or [env.get("WORKSPACE_MCP_SHELL_ALLOW", "")]
    shell_allow = tuple(a.strip() for item in allow_raw for a in item.split(",") if a.strip())
    tasks = args.tasks if args.tasks is not None else truthy(env.get("WORKSPACE_MCP_TASKS"))
    sandbox = args.sandbox or env.get("WORKSPACE_MCP_SANDBOX") or None
    if sandbox not in (None, "bwrap"):
        raise ConfigError(f'WORKSPACE_MCP_SANDBOX must be "bwrap", got "{sandbox}"')
    promote = args.promote_after_ms or _int_env(env, "WORKSPACE_MCP_PROMOTE_AFTER_MS", 45_000)
    max_timeout = _int_env(env, "WORKSPACE_SHELL_MAX_TIMEOUT", 600)
    journal_max = _int_env(env, "WORKSPACE_MCP_JOURNAL_MAX_BYTES", 5 * 1024 * 1024)
    scrub = tuple(p.strip() for p in env.get("WORKSPACE_MCP_SCRUB_ENV", "").split(",") if p.strip())
    pass_env = _names(args.pass_env, env.get("WORKSPACE_MCP_PASS_ENV"))
    allow_git_writes = (
        args.allow_git_writes
        if args.allow_git_writes is not None
        else truthy(env.get("WORKSPACE_MCP_ALLOW_GIT_WRITES"))
    )
    api_keys = parse_api_keys(
        list(args.api_key)
        or [k.strip() for k in env.get("WORKSPACE_MCP_API_KEYS", "").split(",") if k.strip()]
    )
    http = args.http if args.http is not None else truthy(env.get("WORKSPACE_MCP_HTTP"))
    port = args.port if args.port is not None else _int_env(env, "WORKSPACE_MCP_PORT", 3333)
    if not 0 < port < 65536:
        raise ConfigError(f"--port must be between 1 and 65535, got {port}")
    return Settings(
        root=root,
        http=http,
        host=args.host or env.get("WORKSPACE_MCP_HOST") or "127.0.0.1",
        port=port,
        token=args.token or env.get("MCP_TOKEN") or None,
        api_keys=api_keys,
        jwt_secret=args.jwt_secret or env.get("WORKSPACE_MCP_JWT_SECRET") or None,
        jwt_public_key=args.jwt_public_key or env.get("WORKSPACE_MCP_JWT_PUBLIC_KEY") or None,
        jwks_url=args.jwks_url or env.get("WORKSPACE_MCP_JWKS_URL") or None,
        jwt_issuer=args.jwt_issuer or env.get("WORKSPACE_MCP_JWT_ISSUER") or None,
        jwt_audience=args.jwt_audience or env.get("WORKSPACE_MCP_JWT_AUDIENCE") or None,
        jwt_algorithm=args.jwt_algorithm or None,
        auth_server=args.auth_server or env.get("WORKSPACE_MCP_AUTH_SERVER") or None,
        public_url=args.public_url or env.get("WORKSPACE_MCP_PUBLIC_URL") or None,
        no_auth=bool(args.no_auth) or truthy(env.get("WORKSPACE_MCP_NO_AUTH")),
        allowed_hosts=tuple(args.allowed_host),
        cors_origins=tuple(args.cors_origin)
        or tuple(
            o.strip() for o in env.get("WORKSPACE_MCP_CORS_ORIGINS", "").split(",") if o.strip()
        ),
        stateless=bool(args.stateless) or truthy(env.get("WORKSPACE_MCP_STATELESS")),
        allow_remote_exec=bool(args.allow_remote_exec)
        or truthy(env.get("WORKSPACE_MCP_ALLOW_REMOTE_EXEC")),
        rate_limit=args.rate_limit,
        workspaces=tuple(workspaces),
        unconfined=unconfined,
        cwd=env.get("WORKSPACE_CWD") or None,
        read_only=read_only,
        tools=_names(args.tools, env.get("WORKSPACE_MCP_TOOLS")),
        disable_tools=_names(args.disable_tools, env.get("WORKSPACE_MCP_DISABLE_TOOLS")),
        log_level=log_level,
        search_engine=search_engine,
        shell_mode=shell_mode,
        shell_allow=shell_allow,
        tasks=tasks,
        sandbox=sandbox,
        promote_after_ms=promote,
        shell_max_timeout_seconds=max_timeout,
        scrub_env=scrub,
        pass_env=pass_env,
        allow_git_writes=allow_git_writes,
        job_dir=env.get("WORKSPACE_MCP_JOB_DIR") or None,
        journal_max_bytes=journal_max,
        skills_dir=env.get("WORKSPACE_SKILLS_DIR") or ".agents/skills",
        audit_log=args.audit_log or env.get("WORKSPACE_MCP_AUDIT_LOG") or None,
        audit=not (
            args.no_audit
            if args.no_audit is not None
            else truthy(env.get("WORKSPACE_MCP_NO_AUDIT"))
        ),
    )


def _names(flags: list[str], fallback: str | None) -> tuple[str, ...]:
    raw = flags or [fallback or ""]
    return tuple(n.strip() for item in raw for n in item.split(",") if n.strip())


def _int_env(env: dict[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None
    if value < 1:
        raise ConfigError(f"{name} must be positive, got {raw!r}")
    return value


def _shell_mode(args: argparse.Namespace, env: dict[str, str]) -> str | None:
    """--shell-any > --shell > WORKSPACE_MCP_SHELL_MODE > WORKSPACE_MCP_SHELL."""
    if args.shell_any:
        return "any"
    if args.shell:
        return "allowlist"
    mode = env.get("WORKSPACE_MCP_SHELL_MODE", "").strip().lower()
    if mode:
        if mode not in ("allowlist", "any"):
            raise ConfigError(
                f'WORKSPACE_MCP_SHELL_MODE must be "allowlist" or "any", got "{mode}"'
            )
        return mode
    return "allowlist" if truthy(env.get("WORKSPACE_MCP_SHELL")) else None


def _warn(message: str) -> None:
    say(f"WARNING: {message}")


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
        say(f"error: {exc}")
        return 2
    if settings.shell_mode == "any":
        _warn(
            "--shell-any: the connected agent can run any program as this user (bash "
            "included). This is not a sandbox."
        )
    if settings.http and settings.no_auth:
        _warn(
            f"--no-auth: anyone who can reach {settings.host}:{settings.port} can read and "
            "write the workspace."
        )
    if settings.unconfined:
        _warn(
            "--unconfined: every path on this machine that this user can reach is readable "
            "and writable by the connected agent. There is no workspace boundary."
        )
    if settings.http:
        from .transports.http import run_http

        return run_http(app, services)
    from .transports.stdio import run_stdio

    return run_stdio(app, services)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
