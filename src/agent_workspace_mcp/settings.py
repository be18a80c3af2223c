"""Every setting, declared once: type, default, flag, environment variables and help.

`Settings` is what `create_server()` takes, so a test or another program builds the
server without a command line (constructing it reads no environment). The CLI's parser,
`--help`, the README's configuration table and the environment loader are all
generated from the `Opt` attached to each field (`configuration.py`); nothing else
may read a flag or an environment variable. Nothing here imports FastMCP, so `--help`
and configuration errors stay fast.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .core import limits
from .core.risk import RuleName


@dataclass(frozen=True)
class Opt:
    """How one setting is given on the command line and in the environment.

    `flag` is the canonical flag; `consts` are extra flags that set a fixed value
    (`--shell` sets shell_mode "allowlist"). `env` lists the variables read (the first is
    canonical, the others are accepted aliases); `env_consts` are variables whose true
    value sets a fixed value. `negate` inverts a boolean (`--no-audit` sets audit off).
    A repeatable setting takes the flag several times and comma-separated values.
    """

    help: str
    group: str
    flag: str | None = None
    env: tuple[str, ...] = ()
    metavar: str | None = None
    consts: tuple[tuple[str, Any, str], ...] = ()  # (flag, value, help)
    env_consts: tuple[tuple[str, Any], ...] = ()
    negate: bool = False
    secret: bool = False  # never shown as a default and scrubbed from children
    extra: dict[str, Any] = field(default_factory=dict)


WORKSPACES = "workspaces"
TOOLS = "tools and state"
EXECUTION = "command execution (off unless asked for)"
HTTP = "Streamable HTTP"
GROUPS = (WORKSPACES, TOOLS, EXECUTION, HTTP)

NameDir = tuple[str, str]


class Settings(BaseModel):
    """The configuration of one server instance."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # One compact block per setting reads better than the formatter's layout.
    # fmt: off
    # --- workspaces ---------------------------------------------------------------
    profile: Annotated[Literal["workspace-mcp", "persona", "coding-agent"], Opt(
        "tool surface and defaults of a source document's server (see --list-profiles); "
        "flags given explicitly still win",
        WORKSPACES, "--profile", ("WORKSPACE_MCP_PROFILE",), "NAME",
    )] = "workspace-mcp"
    root: Annotated[str | None, Opt(
        "primary workspace, named 'default' (default: the current directory)",
        WORKSPACES, "--root", ("WORKSPACE_MCP_ROOT",), "DIR",
    )] = None
    workspaces: Annotated[tuple[NameDir, ...], Opt(
        "another named workspace; repeatable; names match ^[a-z0-9][a-z0-9_-]*$",
        WORKSPACES, "--workspace", ("WORKSPACE_MCP_WORKSPACES",), "NAME=DIR",
        extra={"item": "name=dir"},
    )] = ()
    unconfined: Annotated[bool, Opt(
        "full-machine mode: paths are used exactly as given, no workspace boundary "
        "(prints a warning)",
        WORKSPACES, "--unconfined", ("WORKSPACE_MCP_UNCONFINED",),
    )] = False
    cwd: Annotated[str | None, Opt(
        "directory entered first in --unconfined mode", WORKSPACES, None, ("WORKSPACE_CWD",),
    )] = None
    read_only: Annotated[bool, Opt(
        "register only tools that change nothing", WORKSPACES, "--read-only",
        ("WORKSPACE_MCP_READ_ONLY",),
    )] = False
    allow_git_writes: Annotated[bool, Opt(
        "let file tools write under .git, and bind it writable in the command sandbox "
        "(refused by default: hooks and config there run as you)",
        WORKSPACES, "--allow-git-writes", ("WORKSPACE_MCP_ALLOW_GIT_WRITES",),
    )] = False

    # --- tools and state --------------------------------------------------------------
    tools: Annotated[tuple[str, ...], Opt(
        "serve only these of the profile's tools, under our names or the profile's "
        "(comma-separated, repeatable; an unknown name is an error)",
        TOOLS, "--tools", ("WORKSPACE_MCP_TOOLS",), "A,B",
    )] = ()
    disable_tools: Annotated[tuple[str, ...], Opt(
        "do not register these tools (comma-separated, repeatable)",
        TOOLS, "--disable-tools", ("WORKSPACE_MCP_DISABLE_TOOLS",), "A,B",
    )] = ()
    search_engine: Annotated[Literal["auto", "rg", "python"], Opt(
        "grep/list_files engine: ripgrep when found (auto), or force one",
        TOOLS, "--search-engine", ("WORKSPACE_MCP_SEARCH_ENGINE",), "ENGINE",
    )] = "auto"
    skills_dir: Annotated[str, Opt(
        "Agent Skills directory, relative to each root (or absolute)",
        TOOLS, None, ("WORKSPACE_SKILLS_DIR",),
    )] = ".agents/skills"
    tool_search: Annotated[bool, Opt(
        "list only the core file tools plus search_tools/call_tool (BM25 search over the "
        "rest), for clients that pay for every listed tool",
        TOOLS, "--tool-search", ("WORKSPACE_MCP_TOOL_SEARCH",),
    )] = False
    builtin_skills: Annotated[bool, Opt(
        "do not offer the skills that ship with the package (a project's own skills still "
        "replace them by name)",
        TOOLS, "--no-builtin-skills", ("WORKSPACE_MCP_NO_BUILTIN_SKILLS",), negate=True,
    )] = True
    journal_max_bytes: Annotated[int, Field(ge=1), Opt(
        "journal, notes and audit files rotate past this size (bytes)",
        TOOLS, None, ("WORKSPACE_MCP_JOURNAL_MAX_BYTES",),
    )] = limits.JOURNAL_MAX_BYTES_DEFAULT
    confirm: Annotated[tuple[str, ...], Opt(
        "ask a person before these run: tool names or the classes exec (commands), "
        "destructive (deletes, overwriting moves, patches that delete, forced undo), "
        "write (every change) and risky (only what executes or escapes review later: "
        "CI, build and dependency files, secrets, mass deletes, commands with network, "
        "forced undo; see --risky-rules); comma-separated, repeatable",
        TOOLS, "--confirm", ("WORKSPACE_MCP_CONFIRM",), "WHAT",
    )] = ()
    confirm_path: Annotated[tuple[str, ...], Opt(
        "ask a person before any change to a path matching these globs (gitignore "
        "syntax; comma-separated, repeatable)",
        TOOLS, "--confirm-path", ("WORKSPACE_MCP_CONFIRM_PATH",), "GLOB",
    )] = ()
    risky_rules: Annotated[tuple[RuleName, ...], Opt(
        "the rules --confirm risky applies (default: all; the README's table lists what "
        "each asks about)",
        TOOLS, "--risky-rules", ("WORKSPACE_MCP_RISKY_RULES",), "RULE,...",
    )] = ()
    confirm_hook: Annotated[str | None, Opt(
        "a reviewer program asked before a person: gets the request as JSON on stdin and "
        "answers approve, deny or ask on stdout within 10 s; any failure denies "
        "(README: Approvals)",
        TOOLS, "--confirm-hook", ("WORKSPACE_MCP_CONFIRM_HOOK",), "CMD",
    )] = None
    confirm_notify: Annotated[str | None, Opt(
        "POST each pending approval to this webhook as a small JSON (id, tool, workspace, "
        "rule, who asked, the console link; never contents or tokens): ntfy, Slack, Teams",
        TOOLS, "--confirm-notify", ("WORKSPACE_MCP_CONFIRM_NOTIFY",), "URL",
    )] = None
    confirm_via: Annotated[tuple[Literal["console", "client"], ...], Opt(
        "who may answer: the operator console, and/or the client (elicitation, "
        "input_required; a client may answer on its own)",
        TOOLS, "--confirm-via", ("WORKSPACE_MCP_CONFIRM_VIA",), "console,client",
    )] = ("console",)
    confirm_timeout: Annotated[float, Field(gt=0, le=limits.CONFIRM_TIMEOUT_MAX), Opt(
        "seconds a request for approval waits for an answer; then the call is refused",
        TOOLS, "--confirm-timeout", ("WORKSPACE_MCP_CONFIRM_TIMEOUT",), "SECONDS",
    )] = limits.CONFIRM_TIMEOUT_DEFAULT
    confirm_wait: Annotated[float | None, Field(gt=0, le=limits.CONFIRM_WAIT_SECONDS), Opt(
        "seconds a call waits for a person before it answers 'pending' (at most 20: clients "
        "give up at about 60)",
        TOOLS, "--confirm-wait", ("WORKSPACE_MCP_CONFIRM_WAIT",), "SECONDS",
    )] = None
    checkpoints: Annotated[bool, Opt(
        "do not record what each write replaces (undo and restore_file then have nothing "
        "to restore)",
        TOOLS, "--no-checkpoints", ("WORKSPACE_MCP_NO_CHECKPOINTS",), negate=True,
    )] = True
    checkpoint_max_bytes: Annotated[int, Field(ge=1), Opt(
        "checkpoint store size; past it the oldest checkpoints are pruned (bytes)",
        TOOLS, None, ("WORKSPACE_MCP_CHECKPOINT_MAX_BYTES",),
    )] = limits.CHECKPOINT_STORE_MAX_BYTES
    audit_log: Annotated[str | None, Opt(
        "append one JSON line per tool call to FILE (default: stderr; rotated like the "
        "journal)",
        TOOLS, "--audit-log", ("WORKSPACE_MCP_AUDIT_LOG",), "FILE",
    )] = None
    audit: Annotated[bool, Opt(
        "do not write audit lines", TOOLS, "--no-audit", ("WORKSPACE_MCP_NO_AUDIT",),
        negate=True,
    )] = True
    log_level: Annotated[Literal["DEBUG", "INFO", "WARNING", "ERROR"], Opt(
        "stderr log level", TOOLS, "--log-level", ("WORKSPACE_MCP_LOG_LEVEL",), "LEVEL",
        extra={"upper": True},
    )] = "WARNING"
    startup_cache: Annotated[bool, Opt(
        "over stdio, do not answer initialize and tools/list from the answers the server "
        "wrote on an earlier start while it loads (kept in the user's cache directory, "
        "never inside a root)",
        TOOLS, "--no-startup-cache", ("WORKSPACE_MCP_NO_STARTUP_CACHE",), negate=True,
    )] = True

    # --- command execution ------------------------------------------------------------
    shell_mode: Annotated[Literal["allowlist", "any"] | None, Opt(
        "enable the command tools: allowlist (pnpm, npm, npx, node + --shell-allow) or any "
        "program plus bash",
        EXECUTION, None, ("WORKSPACE_MCP_SHELL_MODE",), "MODE",
        consts=(
            ("--shell", "allowlist", "enable run_command, start_job, job_status, job_kill, "
             "run_task (allowlist: pnpm, npm, npx, node)"),
            ("--shell-any", "any", "the same tools plus bash, any executable (prints a "
             "warning)"),
        ),
        env_consts=(("WORKSPACE_MCP_SHELL", "allowlist"),),
    )] = None
    shell_allow: Annotated[tuple[str, ...], Opt(
        "add executables to the allowlist (comma-separated, repeatable)",
        EXECUTION, "--shell-allow", ("WORKSPACE_MCP_SHELL_ALLOW",), "LIST",
    )] = ()
    tasks: Annotated[bool, Opt(
        "enable run_task only", EXECUTION, "--tasks", ("WORKSPACE_MCP_TASKS",),
    )] = False
    sandbox: Annotated[Literal["auto", "bwrap", "none"], Opt(
        "how commands run: auto (under bubblewrap where it works: workspace writable "
        "except .git, rest read-only, home directories hidden, no network), bwrap "
        "(required: start-up fails without it) or none",
        EXECUTION, "--sandbox", ("WORKSPACE_MCP_SANDBOX",), "MODE",
    )] = "auto"
    sandbox_network: Annotated[bool, Opt(
        "let sandboxed commands use the network (npm install, pip install need it)",
        EXECUTION, "--sandbox-network", ("WORKSPACE_MCP_SANDBOX_NETWORK",),
    )] = False
    stage_commands: Annotated[bool, Opt(
        "run each command in the sandbox against a copy-on-write view of the workspace; "
        "with --confirm exec what it changed lands only when a person approves, with "
        "--confirm risky or --confirm-path only when it meets a rule (needs bubblewrap and "
        "fuse-overlayfs; no --sandbox-network)",
        EXECUTION, "--stage-commands", ("WORKSPACE_MCP_STAGE_COMMANDS",),
    )] = False
    state_not_shared: Annotated[bool, Opt(
        "no other machine mounts the workspace: allow a filesystem whose locks hold within "
        "one machine (FUSE, 9p; docs/DEPLOY.md)",
        EXECUTION, "--state-not-shared", ("WORKSPACE_MCP_STATE_NOT_SHARED",),
    )] = False
    promote_after_ms: Annotated[int, Field(ge=1), Opt(
        "move a command still running after MS to a background job",
        EXECUTION, "--promote-after-ms", ("WORKSPACE_MCP_PROMOTE_AFTER_MS",), "MS",
    )] = limits.PROMOTE_AFTER_DEFAULT_MS
    shell_max_timeout_seconds: Annotated[int, Field(ge=1), Opt(
        "the bash tool's timeout cap (seconds)",
        EXECUTION, None, ("WORKSPACE_SHELL_MAX_TIMEOUT",),
    )] = limits.SHELL_MAX_TIMEOUT_DEFAULT_SECONDS
    scrub_env: Annotated[tuple[str, ...], Opt(
        "more variable-name globs removed from children's environment (comma-separated)",
        EXECUTION, None, ("WORKSPACE_MCP_SCRUB_ENV",),
    )] = ()
    pass_env: Annotated[tuple[str, ...], Opt(
        "pass this variable to commands although its name looks like a secret (repeatable)",
        EXECUTION, "--pass-env", ("WORKSPACE_MCP_PASS_ENV",), "NAME",
    )] = ()
    job_dir: Annotated[str | None, Opt(
        "where job logs go (default: a private workspace-mcp-jobs in the temp directory)",
        EXECUTION, None, ("WORKSPACE_MCP_JOB_DIR",),
    )] = None

    # --- Streamable HTTP ---------------------------------------------------------------
    http: Annotated[bool, Opt(
        "serve Streamable HTTP at /mcp", HTTP, "--http", ("WORKSPACE_MCP_HTTP",),
    )] = False
    host: Annotated[str, Opt(
        "bind host", HTTP, "--host", ("WORKSPACE_MCP_HOST",), "HOST",
    )] = "127.0.0.1"
    port: Annotated[int, Field(ge=1, le=65535), Opt(
        "bind port", HTTP, "--port", ("WORKSPACE_MCP_PORT",), "N",
    )] = 3333
    token: Annotated[str | None, Opt(
        "one bearer token (subject 'token')", HTTP, "--token", ("MCP_TOKEN",), "T", secret=True,
    )] = None
    operator_token: Annotated[str | None, Opt(
        "serve the operator console at /console to this token (agents' credentials get 401 "
        "there; without it /console does not exist)",
        HTTP, "--operator-token", ("WORKSPACE_MCP_OPERATOR_TOKEN",), "T", secret=True,
    )] = None
    api_keys: Annotated[tuple[NameDir, ...], Opt(
        "a per-subject API key, also accepted as x-api-key (repeatable)",
        HTTP, "--api-key", ("WORKSPACE_MCP_API_KEYS", "CODING_AGENT_MCP_API_KEYS"),
        "SUBJECT=TOKEN", secret=True,
        extra={"item": "subject=token"},
    )] = ()
    jwt_secret: Annotated[str | None, Opt(
        "HS256 shared secret", HTTP, "--jwt-secret", ("WORKSPACE_MCP_JWT_SECRET",), "S",
        secret=True,
    )] = None
    jwt_public_key: Annotated[str | None, Opt(
        "PEM public key file (RS*/ES*/EdDSA)",
        HTTP, "--jwt-public-key", ("WORKSPACE_MCP_JWT_PUBLIC_KEY",), "FILE",
    )] = None
    jwks_url: Annotated[str | None, Opt(
        "JWKS endpoint of the token issuer", HTTP, "--jwks-url", ("WORKSPACE_MCP_JWKS_URL",),
        "URL",
    )] = None
    jwt_issuer: Annotated[str | None, Opt(
        "required `iss` claim", HTTP, "--jwt-issuer", ("WORKSPACE_MCP_JWT_ISSUER",), "ISS",
    )] = None
    jwt_audience: Annotated[str | None, Opt(
        "required `aud` claim (mandatory with JWT)",
        HTTP, "--jwt-audience", ("WORKSPACE_MCP_JWT_AUDIENCE",), "AUD",
    )] = None
    jwt_algorithm: Annotated[str | None, Opt(
        "override the algorithm the key implies",
        HTTP, "--jwt-algorithm", ("WORKSPACE_MCP_JWT_ALGORITHM",), "ALG",
    )] = None
    auth_server: Annotated[str | None, Opt(
        "authorization server to advertise (RFC 9728 metadata at "
        "/.well-known/oauth-protected-resource)",
        HTTP, "--auth-server", ("WORKSPACE_MCP_AUTH_SERVER",), "URL",
    )] = None
    public_url: Annotated[str | None, Opt(
        "this server's external base URL (for the metadata)",
        HTTP, "--public-url", ("WORKSPACE_MCP_PUBLIC_URL",), "URL",
    )] = None
    no_auth: Annotated[bool, Opt(
        "serve without auth (loopback only; prints a warning)",
        HTTP, "--no-auth", ("WORKSPACE_MCP_NO_AUTH",),
    )] = False
    allowed_hosts: Annotated[tuple[str, ...], Opt(
        "accept this Host header too (repeatable)",
        HTTP, "--allowed-host", ("WORKSPACE_MCP_ALLOWED_HOSTS",), "HOST",
    )] = ()
    cors_origins: Annotated[tuple[str, ...], Opt(
        "allow this browser origin, with CORS headers (repeatable)",
        HTTP, "--cors-origin", ("WORKSPACE_MCP_CORS_ORIGINS", "CODING_AGENT_MCP_CORS_ORIGINS"),
        "ORIGIN",
    )] = ()
    stateless: Annotated[bool, Opt(
        "no sessions: every POST is handled on its own",
        HTTP, "--stateless", ("WORKSPACE_MCP_STATELESS",),
    )] = False
    share_history: Annotated[bool, Opt(
        "every subject sees and undoes every subject's work_log and checkpoints "
        "(default: its own only)",
        HTTP, "--share-history", ("WORKSPACE_MCP_SHARE_HISTORY",),
    )] = False
    metrics_public: Annotated[bool, Opt(
        "serve /metrics (Prometheus) without credentials; by default it takes the same "
        "token, API key or JWT as /mcp",
        HTTP, "--metrics-public", ("WORKSPACE_MCP_METRICS_PUBLIC",),
    )] = False
    allow_remote_exec: Annotated[bool, Opt(
        "let --shell/--shell-any/--tasks apply over HTTP too",
        HTTP, "--allow-remote-exec", ("WORKSPACE_MCP_ALLOW_REMOTE_EXEC",),
        extra={"env_values": {"CODING_AGENT_MCP_EXECUTION_BACKEND": {"local": True}}},
    )] = False
    workers: Annotated[int, Field(ge=1, le=limits.WORKERS_MAX), Opt(
        "serve HTTP with N processes on one port (stateless; jobs, state and metrics "
        "shared through the state and job directories)",
        HTTP, "--workers", ("WORKSPACE_MCP_WORKERS",), "N",
    )] = 1
    rate_limit: Annotated[float | None, Field(gt=0), Opt(
        "at most N requests per second per subject (per worker)",
        HTTP, "--rate-limit", ("WORKSPACE_MCP_RATE_LIMIT",), "N",
    )] = None
    session_idle_timeout: Annotated[float, Field(ge=1, le=7 * 86400), Opt(
        "close an HTTP session idle this many seconds",
        HTTP, "--session-idle-timeout", ("WORKSPACE_MCP_SESSION_IDLE_TIMEOUT",), "S",
    )] = 1800.0
    sessions_per_credential: Annotated[int, Field(ge=1, le=100_000), Opt(
        "open HTTP sessions (and legacy SSE streams) one credential may hold; past it 503",
        HTTP, "--sessions-per-credential", ("WORKSPACE_MCP_SESSIONS_PER_CREDENTIAL",), "N",
    )] = limits.HTTP_SESSIONS_PER_SUBJECT
    sessions_max: Annotated[int, Field(ge=1, le=1_000_000), Opt(
        "open HTTP sessions (and legacy SSE streams) one server process holds; past it 503",
        HTTP, "--sessions-max", ("WORKSPACE_MCP_SESSIONS_MAX",), "N",
    )] = limits.HTTP_SESSIONS_MAX
    # fmt: on

    @property
    def execution_allowed(self) -> bool:
        """Commands may run: always over stdio; over HTTP only with --allow-remote-exec
        (the coding-agent document). The one place this rule lives."""
        return not self.http or self.allow_remote_exec

    @property
    def commands_enabled(self) -> bool:
        """Some command tool is served (run_command, bash, start_job or run_task)."""
        asked = self.shell_mode is not None or self.tasks or self.unconfined
        return asked and self.execution_allowed and not self.read_only

    def secret_values(self) -> tuple[str, ...]:
        """The server's own credentials: scrubbed by value from every child environment."""
        values = [
            self.token,
            self.jwt_secret,
            self.operator_token,
            *(key for _, key in self.api_keys),
        ]
        return tuple(v for v in values if v)


def options() -> dict[str, tuple[Opt, Any]]:
    """Each setting's name -> (its Opt, its field info), in declaration order."""
    found = {}
    for name, info in Settings.model_fields.items():
        opt = next((m for m in info.metadata if isinstance(m, Opt)), None)
        if opt is not None:
            found[name] = (opt, info)
    return found
