"""The rules both engines implement, written once.

- Globs (`include`, `pattern`): `**`, `*`, `?`, `{a,b}`, `[abc]`, `[!abc]`; a pattern
  without `/` matches the file name at any depth (the backbone document's syntax).
- Ignore files: only `.gitignore` files, from the workspace root downward (never above
  it, whatever git would do in a parent repository; never global or `.git/info/exclude`
  rules, which differ per machine). When a subdirectory is searched, the `.gitignore`
  files of its ancestors inside the workspace are rebased into one rule list relative
  to the root (`ancestor_rules`), which both engines apply with the lowest precedence.
- Regex: the common subset of Python's and Rust's syntax. Look-around, backreferences,
  atomic groups and possessive quantifiers are refused by both engines, because
  ripgrep's default engine has none of them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from re import _constants as sre_constants  # type: ignore[attr-defined]  # the stdlib parser
from re import _parser as sre_parse  # type: ignore[attr-defined]  # (Python 3.11+; no stubs)
from typing import Any

from ..echo import echo
from ..errors import InvalidArgumentError
from ..limits import GLOB_MAX_EXPANSIONS, IGNORED_DIRS

IGNORED_DIR_NAMES = frozenset(IGNORED_DIRS)


@dataclass(frozen=True)
class Glob:
    """A compiled glob; `basename` globs (no `/`) match the file name at any depth."""

    text: str
    basename: bool
    _matcher: object

    def matches(self, rel_path: str) -> bool:
        target = rel_path.rsplit("/", 1)[-1] if self.basename else rel_path
        return bool(self._matcher.match(target))  # type: ignore[attr-defined]


def compile_glob(text: str | None) -> Glob | None:
    if text is None or text == "":
        return None
    if "\x00" in text:
        raise InvalidArgumentError("glob contains a NUL byte")
    pattern = text.lstrip("/") if text.startswith("/") else text
    if pattern.startswith("./"):
        pattern = pattern[2:]
    from wcmatch import glob as wcglob  # lazily: only searches with a glob need it
    from wcmatch._wcparse import PatternLimitException  # documented, exported only here

    flags = wcglob.GLOBSTAR | wcglob.BRACE | wcglob.DOTGLOB
    try:
        matcher = wcglob.compile(pattern, flags=flags, limit=GLOB_MAX_EXPANSIONS)
    except PatternLimitException:
        raise InvalidArgumentError(
            f"glob expands to more than {GLOB_MAX_EXPANSIONS} patterns (braces multiply); "
            "use fewer {a,b} groups"
        ) from None
    except (ValueError, re.error) as exc:
        raise InvalidArgumentError(f"invalid glob '{echo(text)}': {echo(str(exc))}") from None
    return Glob(text, "/" not in pattern, matcher)


def rebase_gitignore_line(line: str, directory: str) -> str | None:
    """One `.gitignore` line from `directory` (root-relative) as a root-relative rule."""
    line = line.rstrip("\n").rstrip("\r")
    if not line.endswith("\\ "):
        line = line.rstrip(" ")
    if not line or line.startswith("#"):
        return None
    if not directory:
        return line
    negated = line.startswith("!")
    body = line[1:] if negated else line
    core = body.rstrip("/")
    # With a slash (other than a trailing one) a pattern is anchored to its directory;
    # without one it matches at any depth below it.
    rebased = f"/{directory}/{body.lstrip('/')}" if "/" in core else f"/{directory}/**/{body}"
    return ("!" if negated else "") + rebased


def ancestor_rules(root_fd_reader: Any, search_parts: tuple[str, ...]) -> list[str]:
    """Rebased rules of the `.gitignore` files in the search dir's ancestors (root included).

    `root_fd_reader(rel_dir)` returns a `.gitignore`'s text or None; it reads through
    the containment layer, so this module never opens paths itself.
    """
    rules: list[str] = []
    for depth in range(len(search_parts)):
        directory = "/".join(search_parts[:depth])
        text = root_fd_reader(directory)
        if not text:
            continue
        for line in text.splitlines():
            rebased = rebase_gitignore_line(line, directory)
            if rebased is not None:
                rules.append(rebased)
    return rules


_REFUSED = {
    "ASSERT": "look-around is",
    "ASSERT_NOT": "look-around is",
    "GROUPREF": "backreferences are",
    "GROUPREF_EXISTS": "conditional backreferences are",
    "ATOMIC_GROUP": "atomic groups are",
    "POSSESSIVE_REPEAT": "possessive quantifiers are",
}


def _walk_regex(parsed: Any) -> str | None:
    for op, arg in parsed:
        name = str(op)
        if name in _REFUSED:
            return _REFUSED[name]
        items = arg if isinstance(arg, (list, tuple)) else (arg,)
        for item in items:
            if isinstance(item, sre_parse.SubPattern):
                found = _walk_regex(item)
                if found:
                    return found
            elif isinstance(item, (list, tuple)):
                for sub in item:
                    if isinstance(sub, sre_parse.SubPattern):
                        found = _walk_regex(sub)
                        if found:
                            return found
    return None


def validate_regex(pattern: str) -> None:
    """Refuse patterns one engine would treat differently from the other."""
    if pattern == "":
        raise InvalidArgumentError("pattern must not be empty")
    if "\x00" in pattern:
        raise InvalidArgumentError("pattern contains a NUL byte")
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, sre_constants.error, RecursionError, OverflowError) as exc:
        message = getattr(exc, "msg", None) or str(exc)
        position = getattr(exc, "pos", None)
        where = f" at position {position}" if position is not None else ""
        raise InvalidArgumentError(f"invalid regex: {message}{where}") from None
    refused = _walk_regex(parsed)
    if refused:
        raise InvalidArgumentError(
            f"invalid regex: {refused} not supported (ripgrep syntax); "
            "rewrite the pattern without them"
        )


def is_ignored_dir_name(name: str) -> bool:
    return name in IGNORED_DIR_NAMES


def fs_sort_key(name: str) -> bytes:
    """ripgrep's `--sort path` order: per directory, by the name's bytes."""
    return os.fsencode(name)
