"""Answer a stdio client before FastMCP has loaded, then hand everything to the server.

A client waits for `initialize` (and usually `tools/list`) before it does anything
else, and FastMCP takes about a second to import (issue 36). So the CLI claims stdin
and stdout right after the settings are checked (`Wire`) and, while the server is
built, a thread (`EarlyReader`) reads what the client sends and answers those requests
from answers the server itself wrote on an earlier start (core.answercache).

Nothing is taken away from the server: every byte read is handed over, in order,
`initialize` included, so the server initializes exactly as it would have. Its own
answers to the requests already answered are compared byte for byte with what was
sent and dropped (`Handover.drop`); a difference means the key missed something: it
is logged, the kept answer is replaced, and for tools/list the client is told that
the list changed, so it asks again. The thread stops reading when the server takes
over, so a running server reads stdin exactly as before.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import select
import sys
import threading
from typing import Any

from ..core.answercache import METHODS, AnswerCache, request_key, with_id
from ..core.limits import (
    STARTUP_EARLY_LINE_BYTES,
    STARTUP_EARLY_READ_BYTES,
    STARTUP_KEYED_FRAMES,
)
from ..core.operator import say

LIST_CHANGED = b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n'


class Wire:
    """fd 0 and 1 claimed for the protocol: private duplicates carry the frames while the
    standard descriptors point at /dev/null and stderr, so a child process or a stray
    print can neither eat a frame nor tear one; both are restored on `release`."""

    def __init__(self) -> None:
        sys.stdout.flush()
        try:
            self.stdin_fd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
            self.stdout_fd = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.close(null)
            os.dup2(2, 1)
            self.claimed = True
        except OSError:  # no descriptors to spare: serve them in place
            self.stdin_fd, self.stdout_fd, self.claimed = 0, 1, False
        # Whole lines only, from the early reader and the server's writer alike.
        self.write_lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self.write_lock:
            view = memoryview(data)
            while view:
                view = view[os.write(self.stdout_fd, view) :]

    def release(self) -> None:
        if self.claimed:
            os.dup2(self.stdin_fd, 0)
            os.dup2(self.stdout_fd, 1)
            self.claimed = False


class Keys:
    """Which requests' answers may be kept: the first initialize (or server/discover)
    and the first tools/list of the connection, keyed with initialize's params."""

    def __init__(self) -> None:
        self.init_params: Any = None
        self.seen: set[str] = set()
        self.looked = 0
        self.done = False

    def of(self, line: bytes) -> tuple[Any, str] | None:
        """(request id, key) when `line` is such a request, else None."""
        if self.done or len(line) > STARTUP_EARLY_LINE_BYTES or b'"method"' not in line:
            return None
        self.looked += 1
        if self.looked > STARTUP_KEYED_FRAMES:
            self.done = True  # a client that never lists its tools: stop looking
            return None
        try:
            message = json.loads(line)
        except ValueError:
            return None
        if not isinstance(message, dict) or "id" not in message:
            return None
        method = message.get("method")
        if method not in METHODS or method in self.seen:
            return None
        self.seen.add(method)
        params = message.get("params")
        if method == "initialize":
            self.init_params = params
        if "tools/list" in self.seen:
            self.done = True  # the tools are listed: nothing later is kept
        return message["id"], request_key(method, params, self.init_params)


class Handover:
    """What the server does with the early reader's work: the bytes it read, the answers
    it sent (checked against the server's own, then dropped) and the keys of requests
    whose answers are to be kept."""

    def __init__(self, wire: Wire, cache: AnswerCache | None) -> None:
        self.wire = wire
        self.cache = cache
        self.keys = Keys()
        self.sent: dict[str, tuple[str, bytes]] = {}  # id (as JSON) -> (key, line sent)
        self.keep: dict[str, str] = {}  # id (as JSON) -> key
        self.prefix = b""
        self._reader: EarlyReader | None = None

    @property
    def pending(self) -> bool:
        """Some answer of the server's is still to be checked or kept."""
        return bool(self.sent or self.keep)

    def start_reader(self) -> None:
        if self.cache is not None:
            self._reader = EarlyReader(self)
            self._reader.start()

    def take_over(self) -> io.BufferedReader:
        """Stop the early reader; stdin as the server reads it: what was read first."""
        if self._reader is not None:
            self.prefix = self._reader.finish()
        raw = _Prefixed(self.prefix, self.wire.stdin_fd)
        return io.BufferedReader(raw, buffer_size=64 * 1024)

    def saw(self, line: bytes) -> None:
        """The server read `line`: note the key when its answer is to be kept."""
        if self.cache is None or self.keys.done:
            return
        found = self.keys.of(line)
        if found is not None:
            request_id, key = found
            self.keep[_id_text(request_id)] = key

    def drop(self, message: Any, line: bytes) -> bool:
        """The server's answer `line`: True when it was sent early (then checked, not sent
        again); an answer to be kept is kept."""
        request_id = getattr(message, "id", None)
        if request_id is None:
            return False
        ident = _id_text(request_id)
        early = self.sent.pop(ident, None)
        key = early[0] if early else self.keep.pop(ident, None)
        if key is None:
            return False
        if early is None:
            assert self.cache is not None
            self.cache.put(key, line)
            return False
        if early[1] != line:
            say(
                "the answer sent before start-up finished differed from the server's own; "
                "it is replaced for the next start"
            )
            assert self.cache is not None
            self.cache.put(key, line)
            if b'"tools"' in line:
                self.wire.write(LIST_CHANGED)
        return True


class EarlyReader(threading.Thread):
    """Reads stdin until the server takes over, answering what the cache holds."""

    def __init__(self, handover: Handover) -> None:
        super().__init__(name="early-answers", daemon=True)
        self.handover = handover
        self.buffer = bytearray()
        self._wake_r, self._wake_w = os.pipe()

    def run(self) -> None:
        fd = self.handover.wire.stdin_fd
        scanned = 0
        with contextlib.suppress(OSError):
            while len(self.buffer) < STARTUP_EARLY_READ_BYTES:
                ready, _, _ = select.select([fd, self._wake_r], [], [])
                if self._wake_r in ready:
                    return
                chunk = os.read(fd, 64 * 1024)
                if not chunk:
                    return
                self.buffer += chunk
                while (end := self.buffer.find(b"\n", scanned)) >= 0:
                    self._answer(bytes(self.buffer[scanned:end]))
                    scanned = end + 1

    def _answer(self, line: bytes) -> None:
        handover = self.handover
        found = handover.keys.of(line)
        if found is None:
            return
        request_id, key = found
        assert handover.cache is not None
        kept = handover.cache.get(key)
        if kept is None:
            handover.keep[_id_text(request_id)] = key  # the server's answer is kept
            return
        try:
            answer = with_id(kept.rstrip(b"\n"), request_id)
        except ValueError:
            return
        handover.sent[_id_text(request_id)] = (key, answer)
        handover.wire.write(answer + b"\n")

    def finish(self) -> bytes:
        os.write(self._wake_w, b"x")
        self.join()
        os.close(self._wake_r)
        os.close(self._wake_w)
        return bytes(self.buffer)


class _Prefixed(io.RawIOBase):
    """The bytes the early reader took, then the descriptor itself."""

    def __init__(self, prefix: bytes, fd: int) -> None:
        self._prefix = memoryview(prefix)
        self._fd = fd

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._prefix:
            n = min(len(buffer), len(self._prefix))
            buffer[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        data = os.read(self._fd, len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _id_text(request_id: Any) -> str:
    return json.dumps(request_id, separators=(",", ":"))


def begin(settings: Any | None, roots: list[str]) -> Handover:
    """Claim the wire and, when the cache may be used, start answering early (`settings`
    None: never, as unconfined, where an agent can write the cache wherever it is)."""
    wire = Wire()
    cache = None if settings is None else AnswerCache.for_settings(settings, roots)
    handover = Handover(wire, cache)
    handover.start_reader()
    return handover
