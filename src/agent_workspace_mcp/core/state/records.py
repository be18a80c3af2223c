"""Whole-file state records: JSON and text, read bounded, replaced atomically."""

from __future__ import annotations

import json
import os
import re
import stat
from typing import Any

from .. import safejson
from ..containment import Located
from ..errors import (
    WorkspaceError,
)
from ..limits import STATE_DIR_NAME
from ..textio import atomic_write
from ..workspaces import Workspace
from .files import (
    ABSENT,
    Held,
    discard,
    existing,
    locate_state,
    open_held,
    open_state,
    read_state,
    read_whole,
    unsafe,
)


def read_json(ws: Workspace, *parts: str) -> Any:
    """Parsed JSON, None if the file is missing; a one-sentence error naming it if corrupt."""
    held = open_held(ws, parts, os.O_RDONLY)
    if held is ABSENT:
        data = None
    elif isinstance(held, Held):
        data = read_whole(held.fd, "/".join(parts))
    else:
        with existing(ws, *parts) as loc:
            data = None if loc is None else read_state(loc)
    if data is None:
        return None
    try:
        return safejson.loads(data)
    except ValueError:
        raise WorkspaceError(
            f"{STATE_DIR_NAME}/{'/'.join(parts)} is corrupted (not valid JSON)"
        ) from None


def replace_record(loc: Located, data: bytes, durable: bool = True) -> None:
    """Atomic replace; whatever unsafe thing sits at the name is discarded first."""
    st = loc.lstat()
    if st is not None and not stat.S_ISDIR(st.st_mode):
        problem = "a symlink" if stat.S_ISLNK(st.st_mode) else unsafe(st)
        if problem:
            discard(loc, problem)
    atomic_write(loc, data, durable=durable)


# Characters a JSON state line must not hold raw: U+2028/U+2029 are legal JSON, but
# line-splitting readers (Python's str.splitlines, some log shippers) break a record in
# two there; a lone surrogate (from a non-UTF-8 file name, or a library caller) cannot
# be encoded as UTF-8 at all. Escaped, each reads back as the same character.
_UNSAFE_IN_LINES = re.compile("[\u2028\u2029\ud800-\udfff]")


# Made once: json.dumps builds an encoder per call when given any option (a fifth of a
# record line's cost; a write encodes five).
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def dumps(value: Any, indent: int | None = None) -> str:
    """JSON for a state file: readable (non-ASCII kept), one record per line, always UTF-8."""
    if indent:
        text = json.dumps(value, indent=indent, ensure_ascii=False)
    else:
        text = _COMPACT.encode(value)
    return _UNSAFE_IN_LINES.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def write_json(ws: Workspace, value: Any, *parts: str, hint: bool = False) -> None:
    """`hint`: a cache that is only ever a hint (the symbol index): written compactly and
    without fsync, since a torn copy after a crash reads as damaged and costs only time."""
    data = (dumps(value, indent=None if hint else 2) + "\n").encode("utf-8")
    with locate_state(ws, *parts, create_parents=True) as loc:
        replace_record(loc, data, durable=not hint)


def write_text(ws: Workspace, text: str, *parts: str) -> None:
    with locate_state(ws, *parts, create_parents=True) as loc:
        replace_record(loc, text.encode("utf-8"))


def file_size(ws: Workspace, *parts: str) -> int | None:
    with existing(ws, *parts) as loc:
        if loc is None:
            return None
        fd = open_state(loc, os.O_RDONLY, create=False)
        if fd is None:
            return None
        try:
            return os.fstat(fd).st_size
        finally:
            os.close(fd)


def read_text(ws: Workspace, *parts: str) -> str | None:
    with existing(ws, *parts) as loc:
        data = None if loc is None else read_state(loc)
    return None if data is None else data.decode("utf-8", "replace")
