"""The one rule behind every "did you mean": paths, symbols, tools, flags, profiles and
clients are all matched alike, so a name one letter off gets a hint wherever it is typed.

`closest_entry` lists only the directory the caller already reached (through its open
fd), so a path hint never reveals anything outside what the caller could list itself.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable

from .limits import HINT_DIR_ENTRIES, NEAR_MISS_PREFIX_CHARS, NEAR_MISS_RATIO


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
