"""Settings from flags, the environment and `.env`, generated from the one declaration.

Precedence: flags, then the environment, then a `.env` file in the cwd, then the
declared default. Every value from every source is parsed by the same converters, so a
bad value gets the same one-line error naming where it came from
(`WORKSPACE_MCP_READ_ONLY: 'ture' is not a boolean`). The argparse parser, `--help` and
the README's configuration table are built from `settings.options()`.

Why not pydantic-settings' own sources: the flags and variables predate this module
(`--shell`/`--shell-any` for one setting, `--no-audit`, `NAME=DIR` pairs, unprefixed
names such as `MCP_TOKEN` and `WORKSPACE_CWD` from the source documents), and an error
must name the source that supplied the bad value; both are a few lines here and a
fight with its CLI source. pydantic still validates the assembled model.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import ValidationError

from .core import announce, risk
from .core.errors import ConfigError
from .core.limits import OPERATOR_TOKEN_MIN_CHARS
from .core.nearmiss import closest
from .core.workspaces import WorkspaceRegistry
from .settings import GROUPS, Opt, Settings, options

PROG = "agent-workspace-mcp"
TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off", ""}


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(PROG)
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


# --- types ---------------------------------------------------------------------------


def _kind(annotation: Any) -> tuple[str, Any]:
    """('bool'|'int'|'float'|'str'|'choice'|'list'|'pairs', detail) for a field type."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        return _kind(args[0])
    if origin is Literal:
        return "choice", typing.get_args(annotation)
    if origin is tuple:
        item = typing.get_args(annotation)[0]
        if typing.get_origin(item) is Literal:  # a list of choices (--confirm-via)
            return "choices", typing.get_args(item)
        return ("pairs", None) if typing.get_origin(item) is tuple else ("list", None)
    return {bool: "bool", int: "int", float: "float"}.get(annotation, "str"), None


def _convert(name: str, opt: Opt, annotation: Any, raw: Any, source: str) -> Any:
    kind, detail = _kind(annotation)
    if kind == "bool":
        value = raw if isinstance(raw, bool) else _boolean(raw, source)
        return (not value) if opt.negate else value
    if kind in ("int", "float"):
        try:
            return int(raw) if kind == "int" else float(raw)
        except (TypeError, ValueError):
            what = "a whole number" if kind == "int" else "a number"
            raise ConfigError(f"{source}: {raw!r} is not {what}") from None
    if kind == "choice":
        value = raw.strip()
        if opt.extra.get("upper"):
            value = value.upper()
        if value not in detail:
            allowed = ", ".join(str(c) for c in detail)
            raise ConfigError(f"{source}: {raw!r} is not one of {allowed}")
        return value
    if kind in ("list", "pairs", "choices"):
        items = [p.strip() for value in raw for p in value.split(",") if p.strip()]
        if kind == "choices":
            for item in items:
                if item not in detail:
                    allowed = ", ".join(str(c) for c in detail)
                    raise ConfigError(f"{source}: {item!r} is not one of {allowed}")
            return tuple(items)
        if kind == "list":
            return tuple(items)
        return tuple(_pair(item, opt, source) for item in items)
    return raw


def _boolean(raw: str, source: str) -> bool:
    text = str(raw).strip().lower()
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    raise ConfigError(f"{source}: {raw!r} is not a boolean (use true or false)")


def _pair(item: str, opt: Opt, source: str) -> tuple[str, str]:
    left, sep, right = item.partition("=")
    shape = opt.metavar or "NAME=VALUE"
    if not sep:
        shown = "" if opt.secret else f', got "{item}"'  # never echo a credential
        raise ConfigError(f"{source} expects {shape}{shown}")
    if not left.strip() or not right.strip():
        raise ConfigError(f"{source} expects a non-empty {shape.replace('=', ' and ')}")
    return left.strip(), right.strip()


# --- the parser ----------------------------------------------------------------------


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{PROG}: error: {message}{self._suggestion(message)} (see --help)\n")

    def _suggestion(self, message: str) -> str:
        """`; did you mean --read-only?` for a mistyped flag."""

        if not message.startswith("unrecognized arguments: "):
            return ""
        flags = [s for action in self._actions for s in action.option_strings]
        for word in message.removeprefix("unrecognized arguments: ").split():
            if word.startswith("--"):
                close = closest(word.split("=", 1)[0], flags)
                if close:
                    return f"; did you mean {close[0]}?"
        return ""


def _help(opt: Opt, info: Any) -> str:
    text = opt.help
    default = info.default
    if not opt.secret and default not in (None, (), False, True, ""):
        text += f" (default {','.join(default) if isinstance(default, tuple) else default})"
    names = list(opt.env) + [
        f"{var}={'|'.join(mapping)}" for var, mapping in opt.extra.get("env_values", {}).items()
    ]
    if names:
        text += f" [env {', '.join(names)}]"
    return text.replace("%", "%%")


class ListProfilesRequested(Exception):
    """`--list-profiles` was given: the CLI prints each profile's served surface
    (server.describe_surfaces), which needs the tools this module must not import."""


class _ListProfiles(argparse.Action):
    def __init__(self, option_strings, dest, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        raise ListProfilesRequested


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog=PROG,
        description=(
            "A safe, fast MCP workspace for coding agents. Serves files under --root "
            "(and named --workspace roots) over stdio, or Streamable HTTP with --http. "
            f"Commands: `{PROG} config CLIENT DIR [options]` prints a client's config entry; "
            f"`{PROG} check DIR [options]` starts the server as a client would and uses it; "
            f"`{PROG} console DIR [options]` opens the operator console (each has --help)."
        ),
        epilog=(
            "Precedence: flags, then the environment, then a .env file in the cwd. "
            "Settings without a flag: "
            + "; ".join(
                f"{opt.env[0]}: {opt.help}"
                for opt, _ in options().values()
                if opt.flag is None and not opt.consts and opt.env
            )
            + ". --confirm risky asks only about (rules of --risky-rules): "
            + risk.summary()
            + "."
        ).replace("%", "%%"),
    )
    parser.add_argument("-v", "--version", action="version", version=f"{PROG} {package_version()}")
    parser.add_argument(
        "--list-profiles", action=_ListProfiles, help="print each --profile's tools and exit"
    )
    parser.add_argument(
        "dirs",
        nargs="*",
        metavar="DIR",
        help="workspaces to serve (the first is the primary, like --root; each other one is "
        "named after its folder)",
    )
    groups = {name: parser.add_argument_group(name) for name in GROUPS}
    for name, (opt, info) in options().items():
        group = groups[opt.group]
        for index, (flag, value, help_text) in enumerate(opt.consts):
            if index == len(opt.consts) - 1 and opt.env:
                envs = [f"{opt.env[0]}={'|'.join(str(v) for _, v, _ in opt.consts)}"]
                envs += [f"{var}=1" for var, _ in opt.env_consts]
                help_text += f" [env {', '.join(envs)}]"
            group.add_argument(
                flag, dest=f"{name}__{flag}", action="store_const", const=value, help=help_text
            )
        if opt.flag is None:
            continue
        kind = _kind(info.annotation)[0]
        common: dict[str, Any] = {"dest": name, "help": _help(opt, info)}
        if kind == "bool":
            group.add_argument(opt.flag, action="store_const", const=True, **common)
        elif kind in ("list", "pairs", "choices"):
            group.add_argument(opt.flag, action="append", metavar=opt.metavar, **common)
        else:
            group.add_argument(opt.flag, metavar=opt.metavar or name.upper(), **common)
    return parser


# --- loading -------------------------------------------------------------------------


def read_dotenv(path: str = ".env") -> dict[str, str]:
    """Values from a `.env` file, without touching `os.environ`."""
    if not os.path.isfile(path):
        return {}
    from dotenv import dotenv_values

    return {k: v for k, v in dotenv_values(path).items() if v is not None}


def settings_from_sources(
    argv: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    dotenv_path: str = ".env",
) -> Settings:
    """Flags over environment over `.env` over defaults; one-line ConfigError on bad input."""
    args = vars(build_parser().parse_args(argv))
    environment = dict(os.environ if environ is None else environ)
    dotenv = read_dotenv(dotenv_path)
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}

    def from_env(var: str) -> tuple[str, str] | None:
        if var in environment:
            return environment[var], var
        if var in dotenv:
            return dotenv[var], f".env {var}"
        return None

    for name, (opt, info) in options().items():
        const = next(
            ((flag, value) for flag, value, _ in opt.consts if args.get(f"{name}__{flag}")),
            None,
        )
        if const is not None:
            values[name], sources[name] = const[1], const[0]
            continue
        given = args.get(name) if opt.flag else None
        if given is not None:
            values[name] = _convert(name, opt, info.annotation, given, opt.flag or name)
            sources[name] = opt.flag or name
            continue
        for var in opt.env:
            found = from_env(var)
            if found is None or (found[0] == "" and _kind(info.annotation)[0] != "bool"):
                continue
            raw, source = found
            kind = _kind(info.annotation)[0]
            value = [raw] if kind in ("list", "pairs", "choices") else raw
            values[name] = _convert(name, opt, info.annotation, value, source)
            sources[name] = source
            break
        else:
            for var, value in opt.env_consts:
                found = from_env(var)
                if found is not None and _boolean(found[0], found[1]):
                    values[name], sources[name] = value, found[1]
                    break
            for var, mapping in opt.extra.get("env_values", {}).items():
                found = from_env(var)
                if found is None or name in values:
                    continue
                if found[0].strip().lower() not in mapping:
                    allowed = ", ".join(mapping)
                    raise ConfigError(f"{found[1]}: {found[0]!r} is not one of {allowed}")
                values[name], sources[name] = mapping[found[0].strip().lower()], found[1]
    _profile_defaults(values, sources)
    _positional_roots(args.get("dirs") or [], values, sources)
    try:
        settings = Settings(**values)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = str(error["loc"][0]) if error["loc"] else ""
        source = sources.get(field, field)
        raise ConfigError(f"{source}: {error['msg'][0].lower()}{error['msg'][1:]}") from None
    if settings.unconfined and (settings.root is not None or settings.workspaces):
        if sources.get("unconfined", "").endswith(" profile"):
            # The user never typed --unconfined: say it in the profile's own words.
            raise ConfigError(
                f"--profile {settings.profile} serves the whole machine with paths as given, "
                "as its source document does, so it takes no --root or --workspace: drop "
                "them (the agent's cwd is WORKSPACE_CWD), or choose another --profile"
            )
        raise ConfigError("--unconfined cannot be combined with --root or --workspace")
    return settings


def _positional_roots(dirs: list[str], values: dict[str, Any], sources: dict[str, str]) -> None:
    """`agent-workspace-mcp DIR [DIR...]`, the form server-filesystem users type."""
    if not dirs:
        return
    if "root" in values:
        extra = dirs
    else:
        values["root"], sources["root"] = dirs[0], "DIR"
        extra = dirs[1:]
    taken = {name for name, _ in values.get("workspaces", ())} | {"default"}
    pairs = list(values.get("workspaces", ()))
    for raw in extra:
        base = os.path.basename(os.path.normpath(os.path.expanduser(raw))).lower()
        name = re.sub(r"[^a-z0-9_-]+", "-", base).strip("-_") or "ws"
        candidate, n = name, 2
        while candidate in taken:
            candidate, n = f"{name}-{n}", n + 1
        taken.add(candidate)
        pairs.append((candidate, raw))
    values["workspaces"], sources["workspaces"] = tuple(pairs), "DIR"


def _profile_defaults(values: dict[str, Any], sources: dict[str, str]) -> None:
    """A profile's defaults fill what no flag or variable set (explicit input wins). Only
    settings: which tools the profile serves is surface.compute's alone."""
    from .profiles import PROFILES

    profile = PROFILES[values.get("profile", "workspace-mcp")]
    for name, value in profile.defaults.items():
        if name not in sources:
            values[name] = value
            sources[name] = f"the {profile.name} profile"
    if profile.name == "persona" and "port" in sources and "http" not in sources:
        values["http"] = True  # persona: `--port N` means serve HTTP on that port


def unknown_environment(environ: Mapping[str, str] | None = None) -> list[str]:
    """Warnings for our-prefixed variables that no setting reads (likely typos)."""

    known = {
        var
        for opt, _ in options().values()
        for var in (*opt.env, *(v for v, _ in opt.env_consts), *opt.extra.get("env_values", {}))
    }
    warnings = []
    for name in sorted(os.environ if environ is None else environ):
        if name.startswith(("WORKSPACE_MCP_", "CODING_AGENT_MCP_")) and name not in known:
            close = closest(name, known)
            hint = f"; did you mean {close[0]}?" if close else ""
            warnings.append(f"{name} is not a setting and is ignored{hint}")
    return warnings


# --- checks that need no FastMCP ------------------------------------------------------


def is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    return host in ("0.0.0.0", "::", "[::]", "")


def base_url(settings: Settings) -> str:
    """Where clients reach this server: --public-url, else the bind address (an IPv6
    literal in brackets), without a trailing slash."""
    if settings.public_url:
        return settings.public_url.rstrip("/")
    host = settings.host
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{settings.port}"


def has_jwt(settings: Settings) -> bool:
    return any((settings.jwt_secret, settings.jwt_public_key, settings.jwks_url))


def preflight(settings: Settings) -> WorkspaceRegistry:
    """Everything about a configuration that can be wrong, checked before FastMCP loads:
    the roots, and for HTTP the auth options and the exposure rules. Returns the roots."""
    if settings.unconfined:
        registry = WorkspaceRegistry.unconfined(
            os.getcwd(), allow_git_writes=settings.allow_git_writes
        )
    else:
        registry = WorkspaceRegistry.confined(
            settings.root, settings.workspaces, allow_git_writes=settings.allow_git_writes
        )
    if (settings.confirm or settings.confirm_path) and not settings.confirm_via:
        raise ConfigError(
            "--confirm needs someone to answer: --confirm-via console, client or both"
        )
    if settings.confirm_notify:
        announce.check(settings.confirm_notify)
    if settings.confirm_hook and not (settings.confirm or settings.confirm_path):
        raise ConfigError(
            "--confirm-hook reviews the calls --confirm or --confirm-path asks about; add one"
        )
    if settings.http:
        _check_http(settings)
    elif settings.workers > 1:
        raise ConfigError("--workers needs --http: a stdio server has one client")
    return registry


def _check_http(settings: Settings) -> None:
    jwt = has_jwt(settings)
    operator = settings.operator_token
    asks = settings.confirm or settings.confirm_path
    if asks and settings.confirm_via == ("console",) and operator is None and not jwt:
        raise ConfigError(
            "--confirm over HTTP with --confirm-via console needs the console: give "
            "--operator-token (or JWT auth, whose workspace:operate scope opens it), or add "
            "--confirm-via client"
        )
    if operator is not None:
        if len(operator) < OPERATOR_TOKEN_MIN_CHARS:
            raise ConfigError(
                f"--operator-token must be at least {OPERATOR_TOKEN_MIN_CHARS} characters"
            )
        if operator in (settings.token, *(key for _, key in settings.api_keys)):
            raise ConfigError(
                "--operator-token must differ from every agent credential (--token, "
                "--api-key): an agent holding it could undo and stop everything"
            )
    if not settings.no_auth and not (settings.token or settings.api_keys or jwt):
        raise ConfigError(
            "HTTP needs auth: give --token, --api-key or JWT options (or --no-auth, loopback only)"
        )
    if settings.profile == "persona" and not settings.no_auth and not jwt:
        raise ConfigError(
            "the persona profile serves HTTP with JWT auth: give --jwt-secret, --jwt-public-key "
            "or --jwks-url with --jwt-audience (or --no-auth, loopback only)"
        )
    if settings.jwks_url is not None and not re.match(r"^https?://[^/\s]+", settings.jwks_url):
        raise ConfigError(f"--jwks-url must be an http(s) URL, got {settings.jwks_url!r}")
    if jwt:
        sources = (settings.jwt_secret, settings.jwt_public_key, settings.jwks_url)
        if sum(x is not None for x in sources) != 1:
            raise ConfigError("give exactly one of --jwt-secret, --jwt-public-key, --jwks-url")
        if not settings.jwt_audience:
            raise ConfigError(
                "JWT auth needs --jwt-audience (tokens must be issued for this server)"
            )
        if settings.jwt_secret is not None:
            if len(settings.jwt_secret) < 32:
                raise ConfigError("--jwt-secret must be at least 32 characters")
            if settings.jwt_algorithm and not settings.jwt_algorithm.startswith("HS"):
                raise ConfigError("--jwt-secret implies an HS* algorithm")
    has_auth = not settings.no_auth
    if not has_auth and not is_loopback(settings.host):
        raise ConfigError(
            f"refusing to serve {settings.host} without auth; use --token, --api-key or JWT "
            "(or bind 127.0.0.1)"
        )
    if settings.unconfined and not has_auth:
        raise ConfigError("refusing --unconfined over HTTP without auth")


# --- documentation -------------------------------------------------------------------


def markdown_table() -> str:
    """The README's configuration table, generated from the declaration."""
    rows = ["| Flag | Environment | Default | Description |", "| --- | --- | --- | --- |"]
    for _name, (opt, info) in options().items():
        flags = [f"`{opt.flag}" + (f" {opt.metavar}`" if opt.metavar else "`")] if opt.flag else []
        flags += [f"`{flag}`" for flag, _, _ in opt.consts]
        env = [f"`{var}`" for var in opt.env] + [f"`{var}=1`" for var, _ in opt.env_consts]
        env += [
            f"`{var}={'|'.join(mapping)}`"
            for var, mapping in opt.extra.get("env_values", {}).items()
        ]
        default = info.default
        shown = "" if opt.secret or default in (None, ()) else f"`{default}`"
        if isinstance(default, tuple) and default:
            shown = f"`{','.join(map(str, default))}`"
        if isinstance(default, bool):
            shown = "off" if default == opt.negate else "on"  # a --no-X flag defaults to off
        help_text = opt.help.replace("|", "\\|")
        rows.append(f"| {' / '.join(flags)} | {', '.join(env)} | {shown} | {help_text} |")
    return "\n".join(rows)


if __name__ == "__main__":  # pragma: no cover - maintainer command
    # `python -m agent_workspace_mcp.configuration [README.md]` rewrites the README's
    # generated settings, input-limits and risky tables in place (nothing on stdout: this
    # package's stdout is the stdio protocol stream).
    from pathlib import Path

    from .core.bounds import limits_table
    from .toolsdoc import replace_block

    paths = [arg for arg in sys.argv[1:] if not arg.startswith("-")]
    readme = Path(paths[0] if paths else "README.md")
    text = readme.read_text(encoding="utf-8")
    for marker, table in (
        ("settings", markdown_table()),
        ("limits", limits_table()),
        ("risky", risk.markdown_table()),
    ):
        text = replace_block(text, marker, table)
    readme.write_text(text, encoding="utf-8")
