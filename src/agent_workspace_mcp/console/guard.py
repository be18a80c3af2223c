"""The console's one guard (a middleware): every request passes it before any route.

- Host and Origin (origins.refusal, the same check as the HTTP transport's): a request
  at another address (DNS rebinding) or from another site (a cross-site post) is refused.
- Everything but the sign-in page and the page shell needs a signed-in browser (the
  session cookie and its page key in the request's header) or an operator credential as
  a bearer token (a script); the page key is also the CSRF token, so a request that
  changes something without it is 403, one that reads without it 401.
"""

from __future__ import annotations

import hmac

from starlette.requests import Request
from starlette.responses import JSONResponse

from ..origins import refusal
from .sessions import KEY_HEADER, Secrets, cookie_name

PUBLIC = frozenset({"/login", "/"})  # they show the sign-in page to a browser without one


class ConsoleGuard:
    def __init__(self, app, keys: Secrets, allowed_hosts: set[str] | None) -> None:
        self.app, self.keys, self.allowed_hosts = app, keys, allowed_hosts
        self.not_signed_in = (
            "not signed in: sign in at /console/login with the operator credential"
            if keys.remote
            else "not signed in: open the URL the console printed"
        )

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refused = self.foreign(request) or await self.signed_out(request)
        if refused is not None:
            await refused(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def foreign(self, request: Request) -> JSONResponse | None:
        what = refusal(
            request.headers.get("host", ""),
            request.headers.get("origin"),
            hosts=self.allowed_hosts,
            origins=None,
        )
        if what == "host":
            return _error("this console answers only at its own address", 403)
        if what == "origin":
            return _error("cross-site requests are refused", 403)
        return None

    async def signed_out(self, request: Request) -> JSONResponse | None:
        if _route_path(request.scope) in PUBLIC:
            return None
        # A bearer client (a script) sends no cookie a browser could be tricked into.
        if await self.keys.bearer(request.headers.get("authorization", "")):
            return None
        cookie = request.cookies.get(cookie_name(request), "")
        expected = self.keys.page_key(cookie) if cookie else None
        if expected is None:
            return _error(self.not_signed_in, 401)
        offered = request.headers.get(KEY_HEADER, "")
        if hmac.compare_digest(offered.encode(), expected.encode()):
            return None
        if request.method not in ("GET", "HEAD"):
            return _error("missing or wrong page key (the CSRF token)", 403)
        return _error(f"{self.not_signed_in} (this browser has no page key for it)", 401)


def _route_path(scope) -> str:
    """The path below where the console is mounted (/console over HTTP)."""
    path, root = scope.get("path", ""), scope.get("root_path", "")
    rel = path[len(root) :] if root and path.startswith(root) else path
    return rel or "/"


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)
