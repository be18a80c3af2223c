"""`agent-workspace-mcp config CLIENT [server options]`: a ready-to-paste client entry.

The entry names the absolute path of the executable that is running now (a checkout's
venv, pipx, uvx alike) and the given options with every directory made absolute, so it
works as pasted. The options are checked like a real start first: a snippet for a
configuration that cannot start is never printed.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import sys

from .configuration import PROG, preflight, settings_from_sources
from .console import say
from .core.errors import ConfigError
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


def take_name(argv: list[str]) -> tuple[str, list[str]]:
    """`--name NAME` (or `--name=NAME`) taken out of the server options."""
    name, rest, i = DEFAULT_NAME, [], 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--name":
            if i + 1 >= len(argv):
                raise ConfigError("--name needs a value")
            name, i = argv[i + 1], i + 2
            continue
        if arg.startswith("--name="):
            name = arg.split("=", 1)[1]
        else:
            rest.append(arg)
        i += 1
    if not NAME_RE.match(name) or name == "workspace":
        raise ConfigError(
            f"--name {name!r}: use letters, digits, - and _ (at most 64), and not "
            "'workspace', which Claude Code reserves"
        )
    return name, rest


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in CLIENTS:
        choices = ", ".join(CLIENTS)
        if not argv or argv[0].startswith("-"):
            say(f"error: config needs a client first: {choices} (then the server's options)")
        else:
            close = difflib.get_close_matches(argv[0], CLIENTS, n=2, cutoff=0.6)
            hint = f"; did you mean {' or '.join(close)}?" if close else f"; choose {choices}"
            say(f"error: unknown client {argv[0]!r}{hint}")
        return 2
    try:
        name, options = take_name(argv[1:])
        # Only what was given here: the caller's environment (tokens included) stays out.
        settings = settings_from_sources(options, environ={}, dotenv_path=os.devnull)
        preflight(settings)
    except ConfigError as exc:
        say(f"error: {exc}")
        return 2
    if settings.http:
        # A client starts a stdio entry itself; `--http` in its arguments would start a
        # server the client never talks to (and a token must not go into its config).
        say(
            "error: config prints entries a client starts itself (stdio); for a server "
            f"running with --http, give the client its URL http://{settings.host}:"
            f"{settings.port}/mcp and an 'Authorization: Bearer <token>' header (README: "
            "Streamable HTTP)"
        )
        return 2
    command, args = server_command(), server_args(settings)
    problem = unwritable([*command, *args])
    if problem:
        say(f"error: {problem}")
        return 2
    sys.stdout.write(snippet(argv[0], command, args, name) + "\n")
    return 0
