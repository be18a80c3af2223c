"""The one exception hierarchy of the core.

Every message is a single short sentence written for a model: what went wrong and,
where there is one, the next step. The tool layer turns these into `isError`
results verbatim, so a message here is exactly what the agent reads.
"""

from __future__ import annotations

import errno


class WorkspaceError(Exception):
    """Base class: a failure the caller can act on. `str(exc)` is the whole message;
    `detail`, rarely set, is lines shown after it (the stale-read guard's diff)."""

    detail: str = ""


class ConfigError(WorkspaceError):
    """Bad start-up configuration (flags, environment); the CLI exits with code 2."""


class OutsideWorkspaceError(WorkspaceError):
    def __init__(self, user_path: str) -> None:
        super().__init__(f"path outside workspace root: {user_path}")


class InvalidPathError(WorkspaceError):
    """A path argument that is malformed before any file system access (NUL, empty, too long)."""


class NotFoundError(WorkspaceError):
    pass


class WrongTypeError(WorkspaceError):
    """The path exists but is the wrong kind of thing (directory for a file, FIFO, ...)."""


class AlreadyExistsError(WorkspaceError):
    pass


class TooLargeError(WorkspaceError):
    pass


class BinaryFileError(WorkspaceError):
    pass


class EncodingError(WorkspaceError):
    pass


class UnknownWorkspaceError(WorkspaceError):
    pass


class InvalidArgumentError(WorkspaceError):
    pass


_ERRNO_SENTENCES = {
    errno.ENOENT: "not found",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EISDIR: "is a directory",
    errno.ENOTDIR: "a parent of the path is not a directory",
    errno.EEXIST: "already exists",
    errno.ENOTEMPTY: "directory is not empty",
    errno.EXDEV: "cannot move across file systems",
    errno.ENAMETOOLONG: "file name too long",
    errno.EBUSY: "resource busy",
    errno.EMFILE: "the server has too many open files; retry shortly",
    errno.ELOOP: "too many levels of symbolic links",
    errno.EINVAL: "invalid argument for this operation",
    errno.EFBIG: "file too large",
}


def describe_os_error(exc: OSError, display_path: str | None = None) -> str:
    """One sentence for an OSError, without errno numbers or absolute paths."""
    reason = _ERRNO_SENTENCES.get(exc.errno or 0, exc.strerror or "input/output error")
    reason = reason[0].lower() + reason[1:] if reason else "input/output error"
    return f"{display_path}: {reason}" if display_path else reason
