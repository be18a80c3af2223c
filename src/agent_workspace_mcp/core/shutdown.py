"""Cleanup that must run exactly once however the server stops.

The lifespan exit, a SIGTERM/SIGINT handler and stdin EOF all call `run()`; the
first caller runs every registered callback (newest first, like a context stack),
later callers return at once. A failing callback is logged and the rest still run,
so one stuck resource never leaves background processes orphaned.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("agent_workspace_mcp")


class Shutdown:
    def __init__(self) -> None:
        self._callbacks: list[tuple[str, Callable[[], None]]] = []
        self._lock = threading.Lock()
        self._done = False

    def register(self, label: str, callback: Callable[[], None]) -> None:
        with self._lock:
            self._callbacks.append((label, callback))

    @property
    def done(self) -> bool:
        return self._done

    def run(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
            callbacks = list(reversed(self._callbacks))
        for label, callback in callbacks:
            try:
                callback()
            except Exception:
                log.exception("cleanup step %r failed", label)
