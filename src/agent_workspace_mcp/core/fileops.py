"""Directory-level operations on located paths: mkdir, delete, move, describe.

Like reads and writes, each acts relative to the directory fd that `locate()` opened,
never by re-resolving a path string. Recursive deletion walks by fd too and never
follows a symlink (it removes the link), so a link planted inside the tree cannot
turn `delete_path` into a deletion outside the workspace.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass

from .containment import Located
from .errors import (
    AlreadyExistsError,
    InvalidArgumentError,
    WorkspaceError,
    WrongTypeError,
    describe_os_error,
)
from .limits import BINARY_SNIFF_BYTES, MAX_FILE_BYTES, MIB
from .nearmiss import not_found
from .osflags import DIR_FLAGS
from .textio import is_binary, kind_of, open_regular


def make_directory(loc: Located) -> bool:
    """Create the directory; True if created, False if it was already there."""
    if loc.is_root:
        return False
    st = loc.lstat()
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            return False
        raise AlreadyExistsError(f"{loc.display}: already exists as a {kind_of(st.st_mode)}")
    try:
        os.mkdir(loc.name, 0o777, dir_fd=loc.dir_fd)
    except FileExistsError:
        return False
    except OSError as exc:
        raise WorkspaceError(describe_os_error(exc, loc.display)) from None
    return True


def remove_tree(parent_fd: int, name: str) -> int:
    """Delete the directory `name` under `parent_fd` and everything in it; return entries removed.

    Iterative (a tree deeper than Python's recursion limit is still removed) and
    fd-relative at every level with O_NOFOLLOW, so symlinks are unlinked, not entered.
    """
    removed = 0
    root_fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    stack: list[tuple[int, str]] = [(root_fd, name)]  # (fd of dir, its name in parent)
    try:
        while stack:
            fd, _ = stack[-1]
            descended = False
            with os.scandir(fd) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        child = os.open(entry.name, DIR_FLAGS, dir_fd=fd)
                        stack.append((child, entry.name))
                        descended = True
                        break
                    os.unlink(entry.name, dir_fd=fd)
                    removed += 1
            if descended:
                continue
            fd, dir_name = stack.pop()
            os.close(fd)
            holder = stack[-1][0] if stack else parent_fd
            os.rmdir(dir_name, dir_fd=holder)
            removed += 1
    finally:
        for fd, _ in stack:
            os.close(fd)
    return removed


def delete(loc: Located, *, recursive: bool) -> str:
    """Delete a file, symlink or directory. Returns what was deleted, for the answer."""
    if loc.is_root:
        raise InvalidArgumentError("refusing to delete the workspace root itself")
    st = loc.lstat()
    if st is None:
        raise not_found(loc)
    try:
        if stat.S_ISDIR(st.st_mode):
            if not recursive:
                try:
                    os.rmdir(loc.name, dir_fd=loc.dir_fd)
                except OSError as exc:
                    if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                        hint = "directory is not empty; pass recursive=true to delete it"
                        raise WorkspaceError(f"{loc.display}: {hint}") from None
                    raise
                return "directory"
            count = remove_tree(loc.dir_fd, loc.name)
            return f"directory with {count - 1} entries"
        os.unlink(loc.name, dir_fd=loc.dir_fd)
        return kind_of(st.st_mode)
    except OSError as exc:
        raise WorkspaceError(describe_os_error(exc, loc.display)) from None


def move(src: Located, dst: Located, *, overwrite: bool) -> None:
    """Rename `src` to `dst` (both already contained). No silent overwrite."""
    if src.is_root:
        raise InvalidArgumentError("refusing to move the workspace root itself")
    if dst.is_root:
        raise AlreadyExistsError(f"{dst.display}: is the workspace root")
    src_st = src.lstat()
    if src_st is None:
        raise not_found(src)
    dst_st = dst.lstat()
    if dst_st is not None:
        if os.path.samestat(src_st, dst_st):
            return  # same entry (e.g. case-only rename on a case-insensitive FS): nothing to do
        if not overwrite:
            raise AlreadyExistsError(
                f"{dst.display}: already exists; pass overwrite=true to replace it"
            )
        if stat.S_ISDIR(dst_st.st_mode) and not stat.S_ISDIR(src_st.st_mode):
            raise WrongTypeError(f"{dst.display}: is a directory; cannot replace it with a file")
    try:
        os.rename(src.name, dst.name, src_dir_fd=src.dir_fd, dst_dir_fd=dst.dir_fd)
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            raise InvalidArgumentError(
                f"cannot move {src.display} into itself ({dst.display})"
            ) from None
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
            raise WorkspaceError(
                f"{dst.display}: is a non-empty directory; cannot replace it"
            ) from None
        raise WorkspaceError(describe_os_error(exc, src.display)) from None


@dataclass(frozen=True)
class FileInfo:
    kind: str
    size: int
    mtime: float
    mode: int
    link_target: str | None = None
    binary: bool | None = None
    lines: int | None = None
    sha256: str | None = None


def describe(loc: Located) -> FileInfo:
    """Metadata for the located entry; for regular files also binary flag, lines and sha256."""
    st = loc.lstat()
    if st is None:
        raise not_found(loc)
    kind = kind_of(st.st_mode)
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(loc.name, dir_fd=loc.dir_fd)
        return FileInfo(kind, st.st_size, st.st_mtime, stat.S_IMODE(st.st_mode), link_target=target)
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
        return FileInfo(kind, st.st_size, st.st_mtime, stat.S_IMODE(st.st_mode))
    fd, st = open_regular(loc)
    digest = hashlib.sha256()
    head = b""
    newlines = 0
    last = b""
    try:
        while True:
            chunk = os.read(fd, MIB)
            if not chunk:
                break
            if len(head) < BINARY_SNIFF_BYTES:
                head += chunk[: BINARY_SNIFF_BYTES - len(head)]
            digest.update(chunk)
            newlines += chunk.count(b"\n")
            last = chunk[-1:]
    finally:
        os.close(fd)
    binary = is_binary(head)
    lines = None if binary else newlines + (1 if last and last != b"\n" else 0)
    return FileInfo(
        kind,
        st.st_size,
        st.st_mtime,
        stat.S_IMODE(st.st_mode),
        binary=binary,
        lines=lines,
        sha256=digest.hexdigest(),
    )
