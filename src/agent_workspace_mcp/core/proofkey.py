"""The key that proves a person's decision (issue 43).

An approval record is read from the workspace's state directory, and anything inside a
workspace can be written by the agent (a command of a subpath session, a repository
that ships `.workspace-mcp/approvals.json`). So a record proves nothing by being there:
each request the server makes and each decision a person takes is sealed with an HMAC
by this key, and a record whose seal does not verify decides nothing.

The key lives in the user's private state directory (`$XDG_STATE_HOME/agent-workspace-
mcp/`, 0700, the file 0600 and ours), which must lie outside every workspace root (no
file tool reaches it) and which the sandbox hides from every command (it is a home
directory, or added to the hidden ones: core.exec.runner). A command run with
`--sandbox none` runs as the user and can read it, as it can every file of the user:
SECURITY.md says so.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import hmac
import os
import stat
import threading
from pathlib import Path

from .errors import ConfigError, WorkspaceError

FILE = "decision.key"
KEY_BYTES = 32  # HMAC-SHA256's block-size-independent strength
# Starts with a NUL so every search treats the file as binary (never a match line) even
# where a root holds the directory and no --confirm refused to start.
MAGIC = b"AWM-KEY\0"
_lock = threading.Lock()


def key_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_state_dir("agent-workspace-mcp", appauthor=False))


@functools.lru_cache(maxsize=1)
def private_dir() -> str:
    """The key directory, resolved once: containment refuses every path into it."""
    return os.path.realpath(key_dir())


def check_outside(roots: list[str]) -> None:
    """Refuse a key directory inside a workspace root: the agent could read the key."""
    where = private_dir()
    for root in roots:
        if root == "/":
            continue  # unconfined: the agent reaches every file anyway
        if where == root or where.startswith(root.rstrip("/") + "/"):
            raise ConfigError(
                f"the approval key's directory {where} lies inside the workspace {root}, "
                "where the agent could read it; set XDG_STATE_HOME to a directory outside it"
            )


@functools.lru_cache(maxsize=4)
def _load(where: str) -> bytes:
    with _lock:
        os.makedirs(where, 0o700, exist_ok=True)
        st = os.lstat(where)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise WorkspaceError(
                f"the approval key's directory {where} is not private to this user "
                "(owner, mode 0700); fix it or set XDG_STATE_HOME"
            )
        path = os.path.join(where, FILE)
        with contextlib.suppress(FileExistsError):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, MAGIC + os.urandom(KEY_BYTES))
                os.fsync(fd)
            finally:
                os.close(fd)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as exc:
            why = "a link" if exc.errno == errno.ELOOP else exc.strerror
            raise WorkspaceError(f"the approval key {path} cannot be opened ({why})") from None
        try:
            st = os.fstat(fd)
            if (
                not stat.S_ISREG(st.st_mode)
                or st.st_uid != os.geteuid()
                or st.st_mode & 0o077
                or st.st_nlink != 1
            ):
                raise WorkspaceError(
                    f"the approval key {path} is not a private regular file of this user"
                )
            data = os.read(fd, len(MAGIC) + KEY_BYTES + 1)
        finally:
            os.close(fd)
        key = data[len(MAGIC) :]
        if not data.startswith(MAGIC) or len(key) != KEY_BYTES:
            raise WorkspaceError(f"the approval key {path} is damaged; remove it to make anew")
        return key


def decision_key() -> bytes:
    """This user's key (made on first use)."""
    return _load(str(key_dir()))


def seal(key: bytes, *fields: object) -> str:
    """The HMAC of `fields`, each length-prefixed so no two tuples encode alike."""
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for value in fields:
        data = str(value).encode("utf-8", "surrogatepass")
        mac.update(len(data).to_bytes(8, "big") + data)
    return mac.hexdigest()


def verify(key: bytes, proof: object, *fields: object) -> bool:
    return isinstance(proof, str) and hmac.compare_digest(proof, seal(key, *fields))
