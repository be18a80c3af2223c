"""The server's configuration, as one plain value.

`Settings` is what `create_server()` takes, so a test or another program can build
the server without a command line. `settings_from_sources()` is how the CLI fills it:
flags over environment over `.env` over defaults. Nothing here imports FastMCP, so
`--help` and usage errors stay fast.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .core.errors import ConfigError


@dataclass(frozen=True)
class Settings:
    """Everything that shapes one server instance.

    root: primary workspace (`--root`); None means the cwd when no workspaces are given.
    workspaces: extra named roots, in order (`--workspace NAME=DIR`).
    unconfined: use paths exactly as given (persona mode); `cwd` is chdir'd first.
    read_only: register only tools that do not modify anything.
    """

    root: str | None = None
    workspaces: Sequence[tuple[str, str]] = ()
    unconfined: bool = False
    cwd: str | None = None
    read_only: bool = False
    tools: Sequence[str] = ()  # only these tools (empty: all that the mode enables)
    disable_tools: Sequence[str] = ()
    log_level: str = "WARNING"
    search_engine: str = "auto"  # "auto" (ripgrep when found), "rg" or "python"
    journal_max_bytes: int = 5 * 1024 * 1024  # WORKSPACE_MCP_JOURNAL_MAX_BYTES
    skills_dir: str = ".agents/skills"  # WORKSPACE_SKILLS_DIR: relative to each root, or absolute
    audit_log: str | None = None  # None: audit lines go to stderr
    audit: bool = True
    # execution (all off unless asked for)
    shell_mode: str | None = None  # None, "allowlist" or "any"
    shell_allow: Sequence[str] = ()  # added to the default allowlist
    tasks: bool = False  # run_task without the shell tools
    sandbox: str | None = None  # None or "bwrap"
    promote_after_ms: int = 45_000
    shell_max_timeout_seconds: int = 600
    scrub_env: Sequence[str] = ()  # extra variable-name globs removed from children
    pass_env: Sequence[str] = ()  # variables passed to children although secret-shaped
    allow_git_writes: bool = False  # file tools may write under .git (and bwrap binds it rw)
    job_dir: str | None = None
    # credentials (HTTP); also scrubbed from every child environment
    token: str | None = None
    api_keys: Sequence[tuple[str, str]] = ()
    jwt_secret: str | None = None

    def secret_values(self) -> tuple[str, ...]:
        values = [self.token, self.jwt_secret, *(key for _, key in self.api_keys)]
        return tuple(v for v in values if v)

    # HTTP transport (create_server uses them for auth, /health and exec gating)
    http: bool = False
    host: str = "127.0.0.1"
    port: int = 3333
    no_auth: bool = False
    jwt_public_key: str | None = None
    jwks_url: str | None = None
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    jwt_algorithm: str | None = None
    auth_server: str | None = None  # RFC 9728 metadata points clients here
    public_url: str | None = None  # this server's external base URL (for the metadata)
    allowed_hosts: Sequence[str] = ()
    cors_origins: Sequence[str] = ()
    stateless: bool = False
    allow_remote_exec: bool = False
    rate_limit: float | None = None  # requests per second per subject


def parse_workspace_flag(value: str) -> tuple[str, str]:
    """`NAME=DIR` as the backbone document spells it; a missing `=` aborts start-up."""
    if "=" not in value:
        raise ConfigError(f'--workspace expects NAME=DIR, got "{value}"')
    name, path = value.split("=", 1)
    if not path:
        raise ConfigError(f'--workspace "{name}" has an empty path')
    return name, path


def truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def read_dotenv(path: str = ".env") -> dict[str, str]:
    """Values from a `.env` file in the cwd, without touching `os.environ`.

    Loaded into a separate mapping so the real environment keeps precedence.
    """
    if not os.path.isfile(path):
        return {}
    from dotenv import dotenv_values

    return {k: v for k, v in dotenv_values(path).items() if v is not None}


def layered_env(
    environ: Mapping[str, str] | None = None, dotenv_path: str = ".env"
) -> dict[str, str]:
    env = read_dotenv(dotenv_path)
    env.update(os.environ if environ is None else environ)
    return env


def parse_api_keys(values: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """`SUBJECT=TOKEN` pairs; a malformed one aborts start-up."""
    pairs = []
    for value in values:
        if "=" not in value:
            raise ConfigError("--api-key expects SUBJECT=TOKEN")
        subject, token = value.split("=", 1)
        if not subject or not token:
            raise ConfigError("--api-key expects a non-empty SUBJECT and TOKEN")
        pairs.append((subject.strip(), token.strip()))
    return tuple(pairs)
