"""The audit trail: one JSON line per tool call, to stderr or an operator-chosen file.

Records who (authenticated subject), where (workspace), what (tool, paths), how it
went (outcome, error sentence, duration) and the caller's `_meta` correlation ids.
Never file contents, never argument values that carry content or secrets: the record is
built from an allowlist of fields. A file sink is appended with O_APPEND and rotated to
`<file>.1` past the size limit; a failure to write is reported once and never breaks
a call.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Any, TextIO

from .limits import AUDIT_FIELD_CHARS, AUDIT_PATHS_LISTED
from .state.records import dumps

log = logging.getLogger("agent_workspace_mcp")


def _clipped(value: Any) -> Any:
    """A field held to AUDIT_FIELD_CHARS, a list (the paths) to AUDIT_PATHS_LISTED items."""
    if isinstance(value, str):
        return value[:AUDIT_FIELD_CHARS]
    if isinstance(value, list):
        kept = [_clipped(item) for item in value[:AUDIT_PATHS_LISTED]]
        more = len(value) - len(kept)
        return [*kept, f"... and {more} more"] if more > 0 else kept
    return value


class AuditLog:
    def __init__(self, path: str | None, max_bytes: int, stream: TextIO | None = None) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._stream = stream
        self._lock = threading.Lock()
        self._failed = False

    def write(self, record: dict[str, Any]) -> None:
        clean = {k: _clipped(v) for k, v in record.items() if v is not None}
        line = dumps(clean) + "\n"
        with self._lock:
            try:
                if self.path is None:
                    stream = self._stream or sys.stderr
                    stream.write("audit: " + line)
                    stream.flush()
                    return
                fd = os.open(
                    self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600
                )
                try:
                    os.write(fd, line.encode("utf-8"))
                    size = os.fstat(fd).st_size
                finally:
                    os.close(fd)
                if size > self.max_bytes:
                    os.replace(self.path, self.path + ".1")
            except OSError as exc:
                if not self._failed:
                    self._failed = True
                    log.error("audit log %s cannot be written: %s", self.path, exc.strerror)
