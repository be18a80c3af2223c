"""The one rule behind every "did you mean": paths, symbols, tools, flags, profiles and
clients are all matched alike, so a name one letter off gets a hint wherever it is typed.

`closest_entry` lists only the directory the caller already reached (through its open
fd), so a path hint never reveals anything outside what the caller could list itself.
"""

from __future__ import annotations

import difflib
import os
import posixpath
from collections.abc import Iterable
from typing import Protocol

from .errors import NotFoundError
from .limits import HINT_DIR_ENTRIES, NEAR_MISS_PREFIX_CHARS, NEAR_MISS_RATIO


class Located(Protocol):
    """What of containment.Located a hint reads (containment imports this module)."""

    dir_fd: int
    name: str
    display: str

    @property
    def is_root(self) -> bool: ...


def closest(name: str, candidates: Iterable[str], n: int = 1) -> list[str]:
    """Up to `n` candidates close to `name`, best first: the same name in another case,
    then names that start with it, then those difflib rates at least NEAR_MISS_RATIO."""
    pool = sorted(set(candidates))
    lowered = name.lower()
    found = [c for c in pool if c.lower() == lowered and c != name]
    if len(name) >= NEAR_MISS_PREFIX_CHARS:
        found += sorted((c for c in pool if c.lower().startswith(lowered) and c != name), key=len)
    found += difflib.get_close_matches(name, pool, n=n, cutoff=NEAR_MISS_RATIO)
    return list(dict.fromkeys(c for c in found if c != name))[:n]


def closest_entry(dir_fd: int, name: str) -> str | None:
    """An entry of `dir_fd` close to `name` (`closest`), or None."""
    try:
        names = os.listdir(dir_fd)
    except OSError:
        return None
    if len(names) > HINT_DIR_ENTRIES:
        return None
    match = closest(name, names)
    return match[0] if match else None


# --- a missing path's answer -----------------------------------------------------------
# An agent that typed `src/utlis.py` fixes its call in one step when the answer says
# `did you mean src/utils.py?` (a missing parent directory gets the same from the walk
# itself, see containment). Only the directory the caller already named is looked at.


def not_found(loc: Located) -> NotFoundError:
    """`not found: <path>`, with `(did you mean <path>?)` when a close name exists."""
    message = f"not found: {loc.display}"
    suggestion = closest_sibling(loc)
    if suggestion:
        message += f" (did you mean {suggestion}?)"
    return NotFoundError(message)


def closest_sibling(loc: Located) -> str | None:
    if loc.is_root or loc.dir_fd < 0:
        return None
    match = closest_entry(loc.dir_fd, loc.name)
    if match is None:
        return None
    parent = posixpath.dirname(loc.display)
    return posixpath.join(parent, match) if parent and parent != "." else match
