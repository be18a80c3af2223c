"""Every argument bounded before any work (issue 19).

One walk over a call's arguments, without recursion: each string against its
argument's limit (`limits.ARGUMENT_CHARS`, list items under their list's name), each
list and object against an item count, and the nesting against a depth. The answer is
one sentence naming the limit, or None.
"""

from __future__ import annotations

import re
from typing import Any

from .echo import echo
from .limits import (
    ARGUMENT_CHARS,
    ARGUMENT_DEFAULT_CHARS,
    ARGUMENT_MAX_DEPTH,
    ARGUMENT_MAX_ITEMS,
    IDENTIFIER_MAX_CHARS,
)

_SURROGATE = re.compile("[\ud800-\udfff]")


def argument_problem(arguments: dict[str, Any]) -> str | None:
    pending: list[tuple[str, Any, int]] = [("arguments", arguments, 0)]
    while pending:
        name, value, depth = pending.pop()
        if isinstance(value, str):
            limit = ARGUMENT_CHARS.get(name, ARGUMENT_DEFAULT_CHARS)
            if len(value) > limit:
                return f"'{echo(name)}' is {len(value):,} characters long; the limit is {limit:,}"
            if not value.isascii() and (bad := _SURROGATE.search(value)):
                # The wire cannot carry one (frames refuses it); an in-process caller can,
                # and the OS cannot encode it: refused here rather than deep in a tool.
                return (
                    f"'{echo(name)}' holds a lone surrogate ({echo(bad.group())}); "
                    "arguments must be valid Unicode"
                )
        elif isinstance(value, dict | list):
            if depth >= ARGUMENT_MAX_DEPTH:
                return f"'{echo(name)}' nests deeper than {ARGUMENT_MAX_DEPTH} levels"
            if len(value) > ARGUMENT_MAX_ITEMS:
                limit = ARGUMENT_MAX_ITEMS
                return f"'{echo(name)}' holds {len(value):,} items; the limit is {limit:,}"
            if isinstance(value, list):
                pending.extend((name, item, depth + 1) for item in value)
                continue
            for key, item in value.items():
                if not isinstance(key, str) or len(key) > IDENTIFIER_MAX_CHARS:
                    return (
                        f"an argument name is longer than {IDENTIFIER_MAX_CHARS} characters "
                        f"({echo(key)})"
                    )
                pending.append((key, item, depth + 1))
    return None


def _size(n: int) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n:,}"


def limits_table() -> str:
    """The README's input-limits table, generated from the limits module (a test keeps
    the README equal to it: `python -m agent_workspace_mcp.configuration` rewrites it)."""
    from . import limits

    by_limit: dict[int, list[str]] = {}
    for name, limit in limits.ARGUMENT_CHARS.items():
        by_limit.setdefault(limit, []).append(f"`{name}`")
    rows = [
        (", ".join(names), f"{limit:,} characters") for limit, names in sorted(by_limit.items())
    ]
    rows += [
        ("any other string argument", f"{limits.ARGUMENT_DEFAULT_CHARS:,} characters"),
        ("items in one list or object argument", f"{limits.ARGUMENT_MAX_ITEMS:,}"),
        ("nesting of an argument value", f"{limits.ARGUMENT_MAX_DEPTH} levels"),
        ("patterns a glob's `{a,b}` braces expand to", f"{limits.GLOB_MAX_EXPANSIONS}"),
        ("one stdio frame (a line)", f"{_size(limits.STDIO_FRAME_MAX_BYTES)}"),
        ("one HTTP request body", f"{_size(limits.HTTP_FRAME_MAX_BYTES)}"),
        ("a JSON-RPC `id` or `method`", f"{limits.FRAME_ID_MAX_CHARS} characters"),
        ("a resource URI (`resources/read`)", f"{limits.RESOURCE_URI_MAX_CHARS} characters"),
        ("an error sentence", f"{limits.ERROR_MAX_CHARS} characters, one line"),
        ("input quoted in an error", f"{limits.ECHO_CHARS} characters, then its length"),
        ("names listed in an error", f"{limits.ECHO_LISTED}, then `and N more`"),
    ]
    lines = ["| Input | Limit |", "| --- | --- |"]
    lines += [f"| {what} | {limit} |" for what, limit in rows]
    return "\n".join(lines)
