"""`agent-workspace-mcp config CLIENT [server options]`: a ready-to-paste client entry.

The entry names the absolute path of the executable that is running now (a checkout's
venv, pipx, uvx alike) and the given options with every directory made absolute, so it
works as pasted. The options are checked like a real start first: a snippet for a
configuration that cannot start is never printed. With `--http` the entry is the
client's remote form instead: the server's URL and an Authorization header that the
client reads from an environment variable at connect time (a token never goes into a
config file), and stderr says how to start the server it talks to.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from typing import Any

from .configuration import PROG, base_url, is_wildcard, preflight, settings_from_sources
from .core.errors import ConfigError
from .core.nearmiss import closest
from .core.operator import say
from .settings import Settings, options

CLIENTS = ("claude-desktop", "cursor", "claude-code", "opencode", "codex", "vscode")


def server_command() -> list[str]:
    """How to start this installation: its console script, else `python -m`."""
    script = os.path.join(os.path.dirname(sys.executable), PROG)
    if os.path.isfile(script) and os.access(script, os.X_OK):
        return [script]
    return [sys.executable, "-m", "agent_workspace_mcp"]


PATH_METAVARS = ("FILE", "DIR")  # options whose value is a path: absolute in a config


def _absolute(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))


def server_args(settings: Settings) -> list[str]:
    """Flags that reproduce `settings` (every path absolute: the client starts the server
    in a directory of its own), from the declaration."""
    args: list[str] = []
    if settings.root is not None:
        args += ["--root", _absolute(settings.root)]
    for name, path in settings.workspaces:
        args += ["--workspace", f"{name}={_absolute(path)}"]
    for name, (opt, info) in options().items():
        value = getattr(settings, name)
        if name in ("root", "workspaces") or value == info.default or opt.secret:
            continue  # secrets never go into a client's config file
        const = next((flag for flag, v, _ in opt.consts if v == value), None)
        if const:
            args.append(const)
        elif opt.flag is None:
            continue  # environment-only settings stay in the environment
        elif isinstance(value, bool):
            args.append(opt.flag)
        elif isinstance(value, tuple):
            for item in value:
                args += [opt.flag, "=".join(item) if isinstance(item, tuple) else item]
        elif opt.metavar in PATH_METAVARS:
            args += [opt.flag, _absolute(str(value))]
        else:
            args += [opt.flag, str(value)]
    return args


def unwritable(args: list[str]) -> str | None:
    """Why these arguments cannot go into a client's config file, or None.

    A name that is not UTF-8 reaches Python as lone surrogates; JSON would carry them as
    `\\udcXX`, which the client then decodes to other bytes, and TOML cannot hold them."""
    for arg in args:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            return (
                f"{shown} is not valid UTF-8, so no client config file can name it; rename "
                "it, or point a symlink with a UTF-8 name at it"
            )
    return None


def toml_string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, except that TOML also forbids a
    raw DEL (U+007F)."""
    return json.dumps(text).replace("\x7f", "\\u007f")


# Claude Code reserves the name `workspace` ("Cannot add MCP server: this name is
# reserved"), so every snippet and the README use this one; `--name` picks another.
DEFAULT_NAME = "agent-workspace"
NAME_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_-]{0,63}\Z")  # valid in every client's syntax


def snippet(client: str, command: list[str], args: list[str], name: str = DEFAULT_NAME) -> str:
    entry: dict[str, Any]
    if client in ("claude-desktop", "cursor"):
        entry = {"command": command[0], "args": [*command[1:], *args]}
        return json.dumps({"mcpServers": {name: entry}}, indent=2)
    if client == "vscode":  # .vscode/mcp.json (VS Code's own "servers" key and "type")
        entry = {"type": "stdio", "command": command[0], "args": [*command[1:], *args]}
        return json.dumps({"servers": {name: entry}}, indent=2)
    if client == "opencode":
        entry = {"type": "local", "command": [*command, *args], "enabled": True}
        config = {"$schema": "https://opencode.ai/config.json", "mcp": {name: entry}}
        return json.dumps(config, indent=2)
    if client == "codex":  # a bare TOML key: NAME_RE keeps it one
        rest = ", ".join(toml_string(a) for a in [*command[1:], *args])
        return f"[mcp_servers.{name}]\ncommand = {toml_string(command[0])}\nargs = [{rest}]"
    return shlex.join(["claude", "mcp", "add", name, "--", *command, *args])


# The variable a remote entry reads its bearer token from (`--token-env` picks another).
TOKEN_ENV = "AGENT_WORKSPACE_TOKEN"
ENV_RE = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]{0,63}\Z")
# VS Code does not expand ${env:...} in an http server's headers; its own way to keep a
# secret out of mcp.json is an input it prompts for once and stores.
VSCODE_INPUT = "agent-workspace-token"


def remote_snippet(client: str, url: str, token_env: str | None, name: str) -> str:
    """The client's entry for a server it reaches at `url`; `token_env` is None when the
    server takes no credentials (--no-auth)."""
    if client == "codex":
        lines = [f"[mcp_servers.{name}]", f"url = {toml_string(url)}"]
        if token_env:
            lines.append(f"bearer_token_env_var = {toml_string(token_env)}")
        return "\n".join(lines)
    if client == "claude-code":
        argv = ["claude", "mcp", "add", "--transport", "http", name, url]
        if token_env:  # single-quoted: Claude Code expands ${VAR} itself, at connect time
            argv += ["--header", f"Authorization: Bearer ${{{token_env}}}"]
        return shlex.join(argv)
    reference = {
        "cursor": f"${{env:{token_env}}}",
        "opencode": f"{{env:{token_env}}}",
        "vscode": f"${{input:{VSCODE_INPUT}}}",
    }[client]
    headers = {"headers": {"Authorization": f"Bearer {reference}"}} if token_env else {}
    if client == "cursor":
        return json.dumps({"mcpServers": {name: {"url": url, **headers}}}, indent=2)
    if client == "opencode":
        entry = {"type": "remote", "url": url, **headers, "enabled": True}
        return json.dumps(
            {"$schema": "https://opencode.ai/config.json", "mcp": {name: entry}}, indent=2
        )
    vscode: dict[str, Any] = {"servers": {name: {"type": "http", "url": url, **headers}}}
    if token_env:
        prompt = {
            "type": "promptString",
            "id": VSCODE_INPUT,
            "password": True,
            "description": f"bearer token for {name}",
        }
        vscode["inputs"] = [prompt]
    return json.dumps(vscode, indent=2)


def _take(argv: list[str], flag: str) -> tuple[str | None, list[str]]:
    """`FLAG VALUE` (or `FLAG=VALUE`) taken out of the server options."""
    value, rest, i = None, [], 0
    while i < len(argv):
        arg = argv[i]
        if arg == flag:
            if i + 1 >= len(argv):
                raise ConfigError(f"{flag} needs a value")
            value, i = argv[i + 1], i + 2
            continue
        if arg.startswith(flag + "="):
            value = arg.split("=", 1)[1]
        else:
            rest.append(arg)
        i += 1
    return value, rest


def take_name(argv: list[str]) -> tuple[str, list[str]]:
    """`--name NAME` taken out of the server options."""
    name, rest = _take(argv, "--name")
    name = DEFAULT_NAME if name is None else name
    if not NAME_RE.match(name) or name == "workspace":
        raise ConfigError(
            f"--name {name!r}: use letters, digits, - and _ (at most 64), and not "
            "'workspace', which Claude Code reserves"
        )
    return name, rest


def take_remote(argv: list[str]) -> tuple[str | None, str | None, list[str]]:
    """`--url URL` and `--token-env VAR` (remote entries only) taken out of the options."""
    url, argv = _take(argv, "--url")
    token_env, argv = _take(argv, "--token-env")
    if url is not None and not re.match(r"\Ahttps?://[^/\s]+\S*\Z", url):
        raise ConfigError(f"--url must be an http(s) URL such as https://host/mcp, got {url!r}")
    if token_env is not None and not ENV_RE.match(token_env):
        raise ConfigError(f"--token-env {token_env!r}: give an environment variable name")
    return url, token_env, argv


def remote(client: str, settings: Settings, url: str | None, token_env: str, name: str) -> str:
    """The remote entry for a server started with these settings; stderr says how to
    start that server and where the client's token comes from."""
    if client == "claude-desktop":
        raise ConfigError(
            "Claude Desktop's config file starts local (stdio) servers only; drop --http "
            "for that entry, or add the URL under Settings > Connectors"
        )
    if url is None:
        if is_wildcard(settings.host) and not settings.public_url:
            raise ConfigError(
                f"--host {settings.host} is where the server listens, not an address a "
                "client can reach: give --url http://HOST:PORT/mcp"
            )
        url = base_url(settings) + "/mcp"
    token = None if settings.no_auth else token_env
    start = [*server_command(), *server_args(settings)]
    if settings.token:
        start += ["--token", f"${token_env}"]
    auth = "" if settings.token or token is None else " with your --api-key or JWT options"
    shown = shlex.join(start).replace(f"'${token_env}'", f'"${token_env}"')
    say(f"start the server with: {shown}{auth}")
    if token and client == "vscode":
        say("VS Code asks for the token once and keeps it in its secret storage")
    elif token:
        say(f"the client reads its token from {token_env} in its environment")
    return remote_snippet(client, url, token, name)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in CLIENTS:
        choices = ", ".join(CLIENTS)
        if not argv or argv[0].startswith("-"):
            say(f"error: config needs a client first: {choices} (then the server's options)")
        else:
            close = closest(argv[0], CLIENTS, n=2)
            hint = f"; did you mean {' or '.join(close)}?" if close else f"; choose {choices}"
            say(f"error: unknown client {argv[0]!r}{hint}")
        return 2
    try:
        name, options = take_name(argv[1:])
        url, token_env, options = take_remote(options)
        # Only what was given here: the caller's environment (tokens included) stays out.
        settings = settings_from_sources(options, environ={}, dotenv_path=os.devnull)
        preflight(settings)
        if settings.http:
            entry = remote(argv[0], settings, url, token_env or TOKEN_ENV, name)
        elif url is not None or token_env is not None:
            raise ConfigError("--url and --token-env describe a server started with --http")
    except ConfigError as exc:
        say(f"error: {exc}")
        return 2
    if settings.http:
        sys.stdout.write(entry + "\n")
        return 0
    command, args = server_command(), server_args(settings)
    problem = unwritable([*command, *args])
    if problem:
        say(f"error: {problem}")
        return 2
    sys.stdout.write(snippet(argv[0], command, args, name) + "\n")
    return 0
