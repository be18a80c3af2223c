"""Sign-in and sessions of the operator console.

Signing in (the one-time token printed with the URL, or an operator credential over
HTTP) gives the browser two halves of one session: an HttpOnly, SameSite=Strict cookie,
and a page key the sign-in page keeps in the origin's localStorage and the page sends as
a header with every request (it is also the CSRF token). Both are needed: browsers send
a host's cookies to every port of it, so a server an agent runs on another 127.0.0.1
port can receive the cookie, but it cannot read the console origin's storage, and the
pages themselves carry no secret.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Awaitable, Callable

from starlette.requests import Request

from ..core import limits

COOKIE = "awm_console"
KEY_HEADER = "x-console-key"


def cookie_name(request: Request) -> str:
    """One cookie per port: browsers scope cookies by host, not port, so two consoles on
    127.0.0.1 (or a local one and an HTTP one) would otherwise overwrite each other."""
    port = request.headers.get("host", "").rpartition(":")[2]
    return f"{COOKIE}_{port}" if port.isdigit() else COOKIE


class Secrets:
    """Sign-in and sessions.

    Locally the credential is a one-time token printed with the URL; over HTTP it is
    the operator token (`--operator-token`) or a JWT with the operator scope, which
    also authorize API calls as a bearer token and are never spent. Sessions are
    signed, not stored, so every `--workers` process accepts them (`signing_key`: the
    supervisor's, shared through its private directory)."""

    def __init__(
        self,
        operator: str | None = None,
        operator_jwt: Callable[[str], Awaitable[bool]] | None = None,
        signing_key: bytes | None = None,
    ) -> None:
        self.operator = operator
        # Over HTTP with JWT auth: a token carrying the operator scope (OPERATOR_SCOPE).
        self.operator_jwt = operator_jwt
        self.signing = signing_key or secrets.token_bytes(limits.CONSOLE_TOKEN_BYTES)
        self.login: str | None = (
            None if self.remote else secrets.token_urlsafe(limits.CONSOLE_TOKEN_BYTES)
        )

    @property
    def remote(self) -> bool:
        return self.operator is not None or self.operator_jwt is not None

    async def _operator(self, offered: str) -> bool:
        if self.operator is not None and hmac.compare_digest(
            offered.encode(), self.operator.encode()
        ):
            return True
        return self.operator_jwt is not None and bool(offered) and await self.operator_jwt(offered)

    async def take_login(self, offered: str) -> bool:
        """True for an operator credential, or once for the printed token (then spent)."""
        if self.remote:
            return await self._operator(offered)
        if self.login is None or not hmac.compare_digest(offered.encode(), self.login.encode()):
            return False
        self.login = None
        return True

    async def bearer(self, header: str) -> bool:
        """An `Authorization: Bearer <operator credential>` header (scripts, tests)."""
        if not self.remote or not header.lower().startswith("bearer "):
            return False
        return await self._operator(header[7:].strip())

    def _mac(self, purpose: str, body: str) -> str:
        return hmac.new(self.signing, f"{purpose}|{body}".encode(), hashlib.sha256).hexdigest()

    def new_session(self) -> tuple[str, str]:
        """A fresh session: (the cookie's value, the page key)."""
        expires = int(time.time()) + limits.CONSOLE_SESSION_SECONDS
        body = f"{secrets.token_urlsafe(16)}.{expires}"
        return f"{body}.{self._mac('cookie', body)}", self._mac("page", body)

    def page_key(self, cookie: str) -> str | None:
        """The page key of a genuine, unexpired session cookie; None otherwise."""
        body, _, mac = cookie.rpartition(".")
        expires = body.rpartition(".")[2]
        if not expires.isdigit() or not hmac.compare_digest(mac, self._mac("cookie", body)):
            return None
        return self._mac("page", body) if int(expires) > time.time() else None


# Only the page's own script (by nonce) runs: a `<script>` that reached the page through
# agent text could not, even if it were ever inserted as HTML.
CSP = (
    "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; "
    "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
