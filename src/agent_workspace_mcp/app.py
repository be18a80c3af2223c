"""The FastMCP application class: FastMCP whose session-state store is made on first use.

FastMCP reads the session's visibility rules from its state store on every list and
call, and makes that store (importing py-key-value and beartype: ~330 ms of CPU, 15% of
a server start here) on the first read. This server stores no session state (no tool
sets any, no component is shown per session), so every read before a write finds
nothing: reads answer so without making the store, and the first write or any other use
makes FastMCP's own, as it would have. `tests/test_app.py` holds both halves.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

from fastmcp import FastMCP


class _MadeOnFirstWrite:
    """Stands in for FastMCP's state adapter (`get`, `put`, `delete`, ...) until a write."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._store: Any = None

    async def get(self, key: str, *, collection: str | None = None, default: Any = None) -> Any:
        if self._store is None:  # nothing was ever put: FastMCP's in-memory store is empty
            return default
        return await self._store.get(key=key, collection=collection, default=default)

    def __getattr__(self, name: str) -> Any:
        if self._store is None:
            self._store = self._make()
        return getattr(self._store, name)


class WorkspaceApp(FastMCP):
    """FastMCP, its session-state store made on first write. Only for a server made
    without `session_state_store=` (FastMCP's in-memory default, empty at start)."""

    @cached_property
    def _state_store(self) -> Any:  # FastMCP's is a property making the store on first read
        return _MadeOnFirstWrite(lambda: FastMCP._state_store.fget(self))  # type: ignore[attr-defined]
