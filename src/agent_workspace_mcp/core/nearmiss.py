"""The closest entry name in one directory, for "did you mean" hints.

Only the directory the caller already reached is listed (through its open fd), so a hint
never reveals anything outside what the caller could list itself.
"""

from __future__ import annotations

import difflib
import os

from .limits import HINT_DIR_ENTRIES

CLOSE_ENOUGH = 0.75  # difflib ratio: "utlis" ~ "utils", "sc" ~ "src", not "a" ~ "b"


def closest_entry(dir_fd: int, name: str) -> str | None:
    """An entry of `dir_fd` that differs from `name` only by case, or is close to it."""
    try:
        names = os.listdir(dir_fd)
    except OSError:
        return None
    if len(names) > HINT_DIR_ENTRIES:
        return None
    lowered = {n.lower(): n for n in names}
    if name.lower() in lowered:
        return lowered[name.lower()]
    close = difflib.get_close_matches(name, names, n=1, cutoff=CLOSE_ENOUGH)
    return close[0] if close else None
