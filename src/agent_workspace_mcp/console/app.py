"""The console's web application (Starlette, server-sent events, Jinja2 pages):
its routes (console/routes.py) behind its one guard (console/guard.py), with sign-in and
sessions from console/sessions.py. The page puts agent-provided text in as text, never
as HTML, and shows hidden characters visibly.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.middleware import Middleware

from .guard import ConsoleGuard
from .routes import routes
from .sessions import KEY_HEADER, Secrets
from .state import ConsoleState

__all__ = ["KEY_HEADER", "Secrets", "build_console"]


def build_console(
    state: ConsoleState,
    keys: Secrets,
    *,
    allowed_hosts: set[str] | None,
    base_path: str = "",
) -> Starlette:
    """The console app. `allowed_hosts`: the Host values it answers (its own address;
    None when the HTTP server's Host guard in front of it already decided)."""
    return Starlette(
        routes=routes(state, keys, base_path),
        middleware=[Middleware(ConsoleGuard, keys=keys, allowed_hosts=allowed_hosts)],
    )
