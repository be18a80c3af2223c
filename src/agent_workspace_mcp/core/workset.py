"""The files one editing call touches: located, locked together, decoded once.

Locking happens after every path is located and before any is read, with all keys
at once (sorted), so two parallel multi-file calls can neither deadlock nor lose an
update. Everything is computed in memory; `changes()` hands the result to
`transaction.commit()` for the all-or-nothing write.
"""

from __future__ import annotations

import hashlib
import re
import stat
from contextlib import ExitStack
from dataclasses import dataclass

from .containment import Located, locate
from .errors import (
    BinaryFileError,
    InvalidArgumentError,
    NotFoundError,
    TooLargeError,
    WorkspaceError,
)
from .limits import MAX_FILE_BYTES, SHA_SHOWN
from .state.locks import PathLocks
from .textio import TextDoc, decode_text, format_size, read_bytes
from .transaction import Change
from .workspaces import Workspace

_SHA_RE = re.compile(r"^[0-9a-f]{8,64}$")


def short_sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:SHA_SHOWN]


def check_sha(display: str, data: bytes | None, expected: str) -> None:
    """Refuse unless `data` (None: no file) has a sha256 starting with `expected`."""
    wanted = expected.strip().lower()
    if not _SHA_RE.match(wanted):
        raise InvalidArgumentError("expectedSha256 must be 8 to 64 hexadecimal digits")
    actual = hashlib.sha256(data or b"").hexdigest()
    if not actual.startswith(wanted):
        raise WorkspaceError(
            f"{display} changed since it was read (sha256 is now {actual[:SHA_SHOWN]}, "
            f"expected {wanted[:SHA_SHOWN]}); read it again"
        )


@dataclass
class FileState:
    loc: Located
    before: bytes | None  # None: does not exist yet
    doc: TextDoc | None
    text: str | None  # current in-memory text; None: deleted (or never existed)
    mode: int | None

    @property
    def display(self) -> str:
        return self.loc.display

    @property
    def original_text(self) -> str:
        return self.doc.text if self.doc else ""

    def check_sha(self, expected: str | None) -> None:
        if expected is not None:
            check_sha(self.display, self.before, expected)

    def encoded(self) -> bytes | None:
        if self.text is None:
            return None
        if self.doc is None:
            return self.text.encode("utf-8")
        return self.doc.encode(self.text)


class LoadError(WorkspaceError):
    """Loading path number `index` of a batch failed; the message is the cause's."""

    def __init__(self, index: int, cause: WorkspaceError) -> None:
        super().__init__(str(cause))
        self.index = index


class Workset:
    def __init__(self, ws: Workspace, locks: PathLocks) -> None:
        self._ws = ws
        self._locks = locks
        self._stack = ExitStack()
        self._by_key: dict[str, FileState] = {}
        self.order: list[FileState] = []

    def __enter__(self) -> Workset:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def load(
        self, paths: list[str], *, may_be_missing: frozenset[str] = frozenset()
    ) -> list[FileState]:
        """Locate, lock and read `paths`; returns one state per path (shared for aliases)."""
        located: list[Located] = []
        for index, path in enumerate(paths):
            try:
                loc = locate(self._ws, path, defer_parents=path in may_be_missing, write=True)
            except WorkspaceError as exc:
                raise LoadError(index, exc) from None
            located.append(self._stack.enter_context(loc))
        self._stack.enter_context(self._locks.hold(self._ws, (loc.real_abs for loc in located)))
        states = []
        for index, (path, loc) in enumerate(zip(paths, located, strict=True)):
            key = loc.real_abs
            if key not in self._by_key:
                try:
                    state = self._read(loc, path in may_be_missing)
                except WorkspaceError as exc:
                    raise LoadError(index, exc) from None
                self._by_key[key] = state
                self.order.append(state)
            states.append(self._by_key[key])
        return states

    def changed(self) -> list[FileState]:
        return [state for state in self.order if state.encoded() != state.before]

    @staticmethod
    def _read(loc: Located, may_be_missing: bool) -> FileState:
        st = loc.lstat()
        if st is None:
            if not may_be_missing:
                from .nearmiss import closest_sibling

                near = closest_sibling(loc)
                hint = f"did you mean {near}?" if near else "use write_file to create a file"
                raise NotFoundError(f"not found: {loc.display} ({hint})")
            return FileState(loc, None, None, None, None)
        if st.st_size > MAX_FILE_BYTES:
            raise TooLargeError(
                f"{loc.display}: file is too large to edit ({format_size(st.st_size)}; "
                f"the limit is {format_size(MAX_FILE_BYTES)})"
            )
        data, st = read_bytes(loc)
        try:
            doc = decode_text(data, loc.display)
        except BinaryFileError:
            raise BinaryFileError(
                f"{loc.display}: binary file; edit tools change text files only"
            ) from None
        return FileState(loc, data, doc, doc.text, stat.S_IMODE(st.st_mode))

    def changes(self) -> list[Change]:
        out = []
        for state in self.order:
            after = state.encoded()
            if after == state.before:
                continue
            if after is not None and len(after) > MAX_FILE_BYTES:
                size = format_size(len(after))
                raise TooLargeError(
                    f"{state.display}: the edited file would be too large ({size}; "
                    f"the limit is {format_size(MAX_FILE_BYTES)})"
                )
            out.append(Change(state.loc, state.before, after, state.mode))
        return out
