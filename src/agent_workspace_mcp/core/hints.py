"""Near-miss hints: when a path does not exist, name the closest entry that does.

An agent that typed `src/utlis.py` fixes its call in one step when the answer says
`did you mean src/utils.py?`. Only the directory the caller already named is looked at
(through its open fd), so a hint never reveals anything outside what it could list.
"""

from __future__ import annotations

import difflib
import os
import posixpath

from .containment import Located
from .errors import NotFoundError
from .limits import HINT_DIR_ENTRIES


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
    try:
        names = os.listdir(loc.dir_fd)
    except OSError:
        return None
    if len(names) > HINT_DIR_ENTRIES:
        return None
    lowered = {n.lower(): n for n in names}
    if loc.name.lower() in lowered:  # only the case differs
        match = lowered[loc.name.lower()]
    else:
        close = difflib.get_close_matches(loc.name, names, n=1, cutoff=0.75)
        if not close:
            return None
        match = close[0]
    parent = posixpath.dirname(loc.display)
    return posixpath.join(parent, match) if parent and parent != "." else match
