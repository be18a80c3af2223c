"""Bytes in and out of located files: sniffing, decoding, line endings, atomic writes.

Reads open the final name relative to the checked directory fd with O_NOFOLLOW and
O_NONBLOCK, then `fstat` what was actually opened: a FIFO, socket or device is refused
before a single byte is read (opening a FIFO for reading would otherwise block the
server until a writer appears).

Writes never truncate in place. They go to a temp file in the same directory fd,
are fsynced, take the old file's mode (and owner, when we may), and replace the
target with `renameat` inside that fd, so a crash or a full disk leaves the old file
whole and a concurrent reader sees either the old or the new content.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import secrets
import stat
from dataclasses import dataclass

from .containment import Located
from .errors import (
    BinaryFileError,
    EncodingError,
    TooLargeError,
    WorkspaceError,
    WrongTypeError,
    describe_os_error,
)
from .fdread import read_capped
from .limits import BINARY_SNIFF_BYTES, MAX_FILE_BYTES, MIB
from .osflags import READ_FLAGS

UTF8_BOM = codecs.BOM_UTF8


def _umask() -> int:
    # Reading the umask means setting it; do it once at import, before any threads.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _umask()
DEFAULT_FILE_MODE = 0o666 & ~_UMASK


def kind_of(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


def open_regular(loc: Located) -> tuple[int, os.stat_result]:
    """Open the located regular file for reading; refuse anything else with one sentence."""
    if loc.is_root:
        raise WrongTypeError(f"{loc.display}: is a directory, not a regular file")
    try:
        fd = os.open(loc.name, READ_FLAGS, dir_fd=loc.dir_fd)
    except FileNotFoundError:
        from .nearmiss import not_found

        raise not_found(loc) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            # locate() resolved the link; a link here means it was swapped in since.
            raise WorkspaceError(f"{loc.display}: changed while being opened; retry") from None
        if exc.errno == errno.ENXIO:  # a socket, or a FIFO opened for writing
            raise WrongTypeError(
                f"{loc.display}: is a socket or FIFO, not a regular file"
            ) from None
        raise WorkspaceError(describe_os_error(exc, loc.display)) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise WrongTypeError(f"{loc.display}: is a {kind_of(st.st_mode)}, not a regular file")
    return fd, st


def read_bytes(loc: Located, max_bytes: int = MAX_FILE_BYTES) -> tuple[bytes, os.stat_result]:
    """The whole file, refusing files over `max_bytes` (checked on the opened file)."""
    fd, st = open_regular(loc)
    try:
        if st.st_size > max_bytes:
            raise TooLargeError(
                f"{loc.display}: file is too large ({format_size(st.st_size)}; "
                f"the limit is {format_size(max_bytes)})"
            )
        data = read_capped(fd, max_bytes + 1)  # a file that grows while read stays bounded
        if len(data) > max_bytes:
            raise TooLargeError(
                f"{loc.display}: file grew past {format_size(max_bytes)} while being read"
            )
        return data, st
    finally:
        os.close(fd)


def read_range(loc: Located, offset: int, length: int) -> tuple[bytes, os.stat_result]:
    fd, st = open_regular(loc)
    try:
        return os.pread(fd, length, offset), st
    finally:
        os.close(fd)


def is_binary(data: bytes) -> bool:
    """The seed's rule: a NUL byte in the first 8 KiB."""
    return b"\x00" in data[:BINARY_SNIFF_BYTES]


@dataclass(frozen=True)
class TextDoc:
    """Decoded text with the file's conventions, so an edit can write them back."""

    text: str  # with "\n" line endings whatever the file uses
    newline: str  # "\n" or "\r\n": the dominant one, used for new lines
    bom: bool
    trailing_newline: bool
    # For a file that mixes CRLF and LF: the original ending after each line of `text`,
    # so an edit changes only the lines it replaced (empty for a consistent file).
    endings: tuple[str, ...] = ()

    def encode(self, text: str | None = None) -> bytes:
        body = self.text if text is None else text
        if self.bom and body.startswith("\ufeff"):
            body = body[1:]  # the agent echoed the BOM it read; write it once
        if self.endings:
            body = self._with_original_endings(body.replace("\r\n", "\n"))
        elif self.newline != "\n":
            body = body.replace("\r\n", "\n").replace("\n", self.newline)
        data = body.encode("utf-8")
        return UTF8_BOM + data if self.bom else data

    def _with_original_endings(self, body: str) -> str:
        """Lines kept from the original keep their ending; a replaced block keeps the
        endings of the lines it replaced, position by position; added lines get the
        dominant one."""
        from difflib import SequenceMatcher

        old = self.text.split("\n")
        new = body.split("\n")
        out: list[str] = []
        matcher = SequenceMatcher(None, old, new, autojunk=False)
        for _tag, i1, i2, j1, j2 in matcher.get_opcodes():
            for k in range(j2 - j1):
                j = j1 + k
                if j == len(new) - 1:
                    out.append(new[j])  # the piece after the last newline has none
                    continue
                i = i1 + k
                ending = self.endings[i] if i < i2 and i < len(self.endings) else self.newline
                out.append(new[j] + ending)
        return "".join(out)


def detect_newline(text: str) -> str:
    if "\r" not in text:  # the usual text: one scan in C instead of two counts
        return "\n"
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    return "\r\n" if crlf > lf else "\n"


def decode_text(data: bytes, display: str) -> TextDoc:
    """UTF-8 text (BOM allowed); binary or undecodable files get a sentence with the fix."""
    if is_binary(data):
        raise BinaryFileError(f"{display}: binary file; use read_binary_file")
    bom = data.startswith(UTF8_BOM)
    if bom:
        data = data[len(UTF8_BOM) :]
    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EncodingError(
            f"{display}: not valid UTF-8 text (bad byte at offset {exc.start}); "
            "use read_binary_file"
        ) from None
    if "\r" not in raw:  # LF only, as most files: nothing to count or convert
        return TextDoc(raw, "\n", bom, raw.endswith("\n"))
    newline = detect_newline(raw)
    crlf = raw.count("\r\n")
    if crlf and crlf != raw.count("\n"):
        pieces = raw.split("\n")
        endings = tuple("\r\n" if piece.endswith("\r") else "\n" for piece in pieces[:-1])
        text = raw.replace("\r\n", "\n")
        return TextDoc(text, newline, bom, raw.endswith("\n"), endings)
    text = raw.replace("\r\n", "\n") if newline == "\r\n" else raw
    return TextDoc(text, newline, bom, raw.endswith("\n"))


def format_size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    if n < MIB:
        return f"{n / 1024:.1f} KiB"
    return f"{n / MIB:.1f} MiB"


def atomic_write(
    loc: Located, data: bytes, *, mode: int | None = None, durable: bool = True
) -> bool:
    """Replace (or create) the located file with `data`. Returns True if it existed.

    `durable=False` skips the fsyncs, for data that checks itself when read back
    (checkpoint objects are named by their digest).

    Keeps the existing file's permission bits and, when running with the privilege to,
    its owner. A symlink at the final name is never written through here: `locate()`
    already resolved links, so finding one now means it was swapped in, and the
    rename replaces the link itself rather than following it.
    """
    if loc.is_root:
        raise WrongTypeError(f"{loc.display}: is a directory")
    existing = loc.lstat()
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        raise WrongTypeError(f"{loc.display}: is a directory")
    if (
        existing is not None
        and not stat.S_ISREG(existing.st_mode)
        and not stat.S_ISLNK(existing.st_mode)
    ):
        raise WrongTypeError(f"{loc.display}: is a {kind_of(existing.st_mode)}, not a regular file")
    keep_regular = existing is not None and stat.S_ISREG(existing.st_mode)
    if mode is None:
        mode = (
            stat.S_IMODE(existing.st_mode)
            if existing is not None and keep_regular
            else DEFAULT_FILE_MODE
        )
    tmp = f".{loc.name[:200]}.{secrets.token_hex(4)}.awm-tmp"
    try:
        fd = os.open(
            tmp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
            dir_fd=loc.dir_fd,
        )
    except OSError as exc:
        raise WorkspaceError(describe_os_error(exc, loc.display)) from None
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fchmod(fd, mode)
            if keep_regular and existing is not None and os.geteuid() == 0:
                os.fchown(fd, existing.st_uid, existing.st_gid)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, loc.name, src_dir_fd=loc.dir_fd, dst_dir_fd=loc.dir_fd)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=loc.dir_fd)
        if isinstance(exc, OSError):
            raise WorkspaceError(describe_os_error(exc, loc.display)) from None
        raise
    # Some file systems refuse fsync on directories; the rename is done either way.
    if durable:
        with contextlib.suppress(OSError):
            os.fsync(loc.dir_fd)
    return existing is not None
