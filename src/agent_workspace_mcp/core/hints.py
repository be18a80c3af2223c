"""Near-miss hints: when a path does not exist, name the closest entry that does.

An agent that typed `src/utlis.py` fixes its call in one step when the answer says
`did you mean src/utils.py?` (a missing parent directory gets the same from the walk
itself, see containment). Only the directory the caller already named is looked at.
"""

from __future__ import annotations

import posixpath

from .containment import Located
from .errors import NotFoundError
from .nearmiss import closest_entry


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
