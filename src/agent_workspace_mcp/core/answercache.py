"""Answers kept for the next start: the bytes FastMCP wrote for `initialize`,
`server/discover` and the first `tools/list`, under a key of everything they depend on.

Why: Python and FastMCP take about a second here (2.5-5.5 s on slow machines and
Windows) to import, and a client waits for `initialize` before it does anything. The
answers to these requests follow from the code, the settings and the request alone,
so a start whose key matches can answer them while FastMCP is still loading
(transports/early.py), and the server, once loaded, checks each one against its own.

The key: this package's files (name, size, mtime: an editable checkout changes it
on every edit), FastMCP's and the SDK's (their `__init__` and directory), the Python
build, every setting, the method and its params, and, for a request after
`initialize`, that initialize's params (the client's capabilities change tools/list).
The process id, time and the request id are not in it: the id is written in when
an answer is sent.

Trust: an agent must not be able to put words in the next start's mouth. The cache is
used only when its directory lies outside every workspace root; each file must be a
regular file of this user, not writable by others, opened without following a link,
at most STARTUP_CACHE_ENTRY_BYTES, and a JSON-RPC result. Writes are atomic. At most
STARTUP_CACHE_ENTRIES are kept; the least recently written go.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

from . import safejson
from .limits import STARTUP_CACHE_ENTRIES, STARTUP_CACHE_ENTRY_BYTES

# Requests whose answer depends only on the key (and so may be answered early).
METHODS = frozenset({"initialize", "server/discover", "tools/list"})
_PACKAGE = Path(__file__).resolve().parents[1]
_FORMAT = "1"  # bump when what is stored changes shape


def cache_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("agent-workspace-mcp", appauthor=False)) / "answers"


def _tree_stamp(root: Path) -> list[Any]:
    stamp: list[Any] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            st = os.stat(os.path.join(dirpath, name))
            stamp.append(
                (os.path.relpath(os.path.join(dirpath, name), root), st.st_size, st.st_mtime_ns)
            )
    return stamp


def _package_stamp(name: str) -> list[Any]:
    """A dependency's `__init__` and directory, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin:
        return [name, None]
    init = os.stat(spec.origin)
    folder = os.stat(os.path.dirname(spec.origin))
    return [name, init.st_size, init.st_mtime_ns, init.st_ino, folder.st_mtime_ns]


def request_key(method: str, params: Any, init_params: Any) -> str:
    """The part of a key that comes from the client."""
    text = json.dumps([method, params, init_params], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class AnswerCache:
    """One server's view of the cache: `base` keys everything but the request."""

    def __init__(self, directory: Path, settings_json: str) -> None:
        self.directory = directory
        stamp = [
            _FORMAT,
            sys.version,
            sys.executable,
            _tree_stamp(_PACKAGE),
            *(_package_stamp(name) for name in ("fastmcp", "mcp", "mcp_types", "pydantic")),
            settings_json,
        ]
        text = json.dumps(stamp, separators=(",", ":"), default=str)
        self.base = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]

    @classmethod
    def for_settings(cls, settings: Any, roots: list[str]) -> AnswerCache | None:
        """The cache for these settings, or None when it must not be used: switched off,
        or inside a workspace root (where an agent could write it)."""
        if not settings.startup_cache:
            return None
        try:
            directory = cache_dir()
            real = Path(os.path.realpath(directory))
        except Exception:  # no home directory, say: start as before
            return None
        for root in roots:
            top = Path(os.path.realpath(root))
            if real == top or top in real.parents:
                return None
        return cls(directory, settings.model_dump_json())

    def _path(self, key: str) -> Path:
        return self.directory / f"{self.base}-{key[:32]}.json"

    def get(self, key: str) -> bytes | None:
        """The answer line kept for `key` (its id as it was first sent), or None."""
        try:
            # O_NONBLOCK: a FIFO planted as an entry must not block the open (the type
            # check comes after it), or the server never answers initialize.
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
            fd = os.open(self._path(key), flags)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if (
                not stat.S_ISREG(st.st_mode)
                or st.st_uid != os.geteuid()
                or st.st_mode & 0o022
                or st.st_size > STARTUP_CACHE_ENTRY_BYTES
            ):
                return None
            data = os.read(fd, STARTUP_CACHE_ENTRY_BYTES + 1)
        except OSError:
            return None
        finally:
            os.close(fd)
        return data if _is_result(data) else None

    def put(self, key: str, line: bytes) -> None:
        """Keep `line` (one JSON-RPC result) for `key`; best effort, never raises."""
        if len(line) > STARTUP_CACHE_ENTRY_BYTES or not _is_result(line):
            return
        with contextlib.suppress(OSError):
            self.directory.mkdir(parents=True, mode=0o700, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(line)
                os.replace(temp, self._path(key))
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
            self._prune()

    def _prune(self) -> None:
        entries = []
        for entry in os.scandir(self.directory):
            if entry.name.endswith(".json") and entry.is_file(follow_symlinks=False):
                entries.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.path))
        entries.sort()
        for _, path in entries[: max(0, len(entries) - STARTUP_CACHE_ENTRIES)]:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _is_result(line: bytes) -> bool:
    try:
        value = safejson.loads(line)
    except ValueError:
        return False
    return (
        isinstance(value, dict)
        and value.get("jsonrpc") == "2.0"
        and "result" in value
        and "error" not in value
        and "id" in value
    )


def with_id(line: bytes, request_id: Any) -> bytes:
    """`line` answering `request_id`: the kept line is FastMCP's, whose first member
    after `jsonrpc` is the id, so only that member is rewritten."""
    head, sep, rest = line.partition(b',"result":')
    if not sep or not head.startswith(b'{"jsonrpc":"2.0","id":'):
        raise ValueError("not a line FastMCP wrote")
    new_id = json.dumps(request_id, separators=(",", ":")).encode()
    return b'{"jsonrpc":"2.0","id":' + new_id + sep + rest
