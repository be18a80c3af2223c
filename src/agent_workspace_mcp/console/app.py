"""The console's web application (Starlette, server-sent events, Jinja2 pages).

Safe to open: signing in (the one-time token printed with the URL, or an operator
credential over HTTP) gives the browser two halves of one session: an HttpOnly,
SameSite=Strict cookie, and a page key the sign-in page keeps in the origin's
localStorage and the page sends as a header with every request (it is also the CSRF
token). Both are needed: browsers send a host's cookies to every port of it, so a server
an agent runs on another 127.0.0.1 port can receive the cookie, but it cannot read the
console origin's storage, and the pages themselves carry no secret. A request whose
Host or Origin is not this console's is refused (DNS rebinding, cross-site posts). The
page puts agent-provided text in as text, never as HTML.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from typing import Any

import anyio
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..core import limits
from ..core.errors import WorkspaceError
from .state import ConsoleState, as_dicts

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


def _json(value: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(value, status_code=status)


def _error(message: str, status: int = 400) -> JSONResponse:
    return _json({"error": message}, status)


def build_console(
    state: ConsoleState,
    keys: Secrets,
    *,
    allowed_hosts: set[str] | None,
    base_path: str = "",
) -> Starlette:
    """The console app. `allowed_hosts`: the Host values it answers (its own address;
    None when the HTTP server's Host guard in front of it already decided)."""
    templates = Environment(
        loader=FileSystemLoader(str(resources.files(__package__) / "templates")),
        autoescape=select_autoescape(["html"]),
    )

    def cookie_key(request: Request) -> str | None:
        cookie = request.cookies.get(cookie_name(request), "")
        return keys.page_key(cookie) if cookie else None

    def foreign_host(request: Request) -> bool:
        host = request.headers.get("host", "")
        return allowed_hosts is not None and host not in allowed_hosts

    def foreign(request: Request) -> Response | None:
        if foreign_host(request):
            return _error("this console answers only at its own address", 403)
        origin = request.headers.get("origin")
        if origin is not None and origin.split("://", 1)[-1] != request.headers.get("host"):
            return _error("cross-site requests are refused", 403)
        return None

    not_signed_in = (
        "not signed in: sign in at /console/login with the operator credential"
        if keys.remote
        else "not signed in: open the URL the console printed"
    )

    async def guard(request: Request, *, action: bool) -> Response | None:
        refused = foreign(request)
        if refused:
            return refused
        # A bearer client (a script) sends no cookie a browser could be tricked into.
        if await keys.bearer(request.headers.get("authorization", "")):
            return None
        expected = cookie_key(request)
        if expected is None:
            return _error(not_signed_in, 401)
        offered = request.headers.get(KEY_HEADER, "")
        if hmac.compare_digest(offered.encode(), expected.encode()):
            return None
        if action:
            return _error("missing or wrong page key (the CSRF token)", 403)
        return _error(f"{not_signed_in} (this browser has no page key for it)", 401)

    async def off_loop(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))

    def html(name: str, status: int = 200, **values: Any) -> Response:
        nonce = secrets.token_urlsafe(16)
        text = templates.get_template(name).render(
            base=base_path, nonce=nonce, remote=keys.remote, **values
        )
        return Response(
            text,
            status_code=status,
            media_type="text/html; charset=utf-8",
            headers={
                "content-security-policy": CSP.format(nonce=nonce),
                "x-content-type-options": "nosniff",
                "referrer-policy": "no-referrer",
                "cache-control": "no-store",
            },
        )

    async def login_page(request: Request) -> Response:
        return foreign(request) or html("login.html")

    async def login(request: Request) -> Response:
        refused = foreign(request)
        if refused:
            return refused
        token = (await body(request)).get("token")
        if not isinstance(token, str) or not await keys.take_login(token):
            if keys.remote:
                return _error("not an operator credential", 401)
            return _error(
                "this sign-in link was already used or is wrong; restart the console for a new one",
                401,
            )
        cookie, page_key = keys.new_session()
        response = _json({"key": page_key})
        response.set_cookie(
            cookie_name(request),
            cookie,
            httponly=True,
            samesite="strict",
            path=base_path or "/",
            max_age=limits.CONSOLE_SESSION_SECONDS,
        )
        return response

    async def page(request: Request) -> Response:
        refused = foreign(request)
        if refused:
            return refused
        bearer = await keys.bearer(request.headers.get("authorization", ""))
        if not bearer and cookie_key(request) is None:
            return html("login.html", 401)
        return html("console.html")

    def query(request: Request, name: str) -> str | None:
        value = request.query_params.get(name)
        return value or None

    async def entries(request: Request) -> Response:
        refused = await guard(request, action=False)
        if refused:
            return refused
        try:
            found = await off_loop(
                state.entries,
                query(request, "workspace"),
                limit=limits.CONSOLE_ENTRIES,
                tool=query(request, "tool"),
                path=query(request, "path"),
                outcome=query(request, "outcome"),
                by=query(request, "by"),
                session=query(request, "session"),
                since=query(request, "since"),
            )
        except WorkspaceError as exc:
            return _error(str(exc))
        return _json({"entries": found})

    async def older(request: Request) -> Response:
        refused = await guard(request, action=False)
        if refused:
            return refused
        raw = request.query_params.get("before", "")
        before = int(raw) if raw.isdigit() else None
        names = ("tool", "path", "outcome", "by", "session", "since")
        filters = {k: query(request, k) for k in names}
        try:
            found, cursor = await off_loop(
                state.older,
                query(request, "workspace"),
                before,
                limit=limits.CONSOLE_ENTRIES,
                **filters,
            )
        except WorkspaceError as exc:
            return _error(str(exc))
        return _json({"entries": found, "cursor": cursor})

    async def history(request: Request) -> Response:
        refused = await guard(request, action=False)
        if refused:
            return refused
        path = query(request, "path")
        if path is None:
            return _error("give the path whose history to show")
        raw = request.query_params.get("before", "")
        try:
            found, cursor = await off_loop(
                state.file_history,
                query(request, "workspace"),
                path,
                int(raw) if raw.isdigit() else None,
            )
        except WorkspaceError as exc:
            return _error(str(exc))
        return _json({"entries": found, "cursor": cursor})

    async def diff(request: Request) -> Response:
        refused = await guard(request, action=False)
        if refused:
            return refused
        try:
            raw = request.query_params.get("offset", "0")
            diffs = await off_loop(
                state.diff,
                query(request, "workspace"),
                request.query_params.get("id", ""),
                path=query(request, "path"),
                offset=int(raw) if raw.isdigit() else 0,
            )
        except WorkspaceError as exc:
            return _error(str(exc))
        return _json({"files": as_dicts(diffs)})

    async def listing(request: Request) -> Response:
        refused = await guard(request, action=False)
        if refused:
            return refused
        what = request.path_params["what"]
        source = {
            "notes": state.notes,
            "changes": state.changes,
            "jobs": state.jobs,
            "sessions": state.live_sessions,
            "approvals": state.approvals,
            "workspaces": lambda: [ws.name for ws in state.registry],
        }.get(what)
        if source is None:
            return _error("unknown listing", 404)
        return _json({what: await off_loop(source)})

    async def body(request: Request) -> dict[str, Any]:
        try:
            value = json.loads(await request.body() or b"{}")
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    async def undo(request: Request) -> Response:
        refused = await guard(request, action=True)
        if refused:
            return refused
        args = await body(request)

        def text(name: str) -> str | None:
            value = args.get(name)
            return value if isinstance(value, str) and value else None

        try:
            answer = await off_loop(
                state.undo,
                text("workspace"),
                entry=text("entry"),
                to=text("to"),
                change=text("change"),
                session=text("session"),
                dry_run=bool(args.get("dryRun")),
                force=bool(args.get("force")),
            )
        except WorkspaceError as exc:
            return _error(str(exc), 409)
        return _json({"answer": answer})

    async def restore(request: Request) -> Response:
        refused = await guard(request, action=True)
        if refused:
            return refused
        args = await body(request)
        path, before = args.get("path"), args.get("before")
        if not isinstance(path, str) or not isinstance(before, str):
            return _error("give the path and the entry id to restore it as before")
        workspace = args.get("workspace") if isinstance(args.get("workspace"), str) else None
        try:
            answer = await off_loop(
                state.restore, workspace, path, before, dry_run=bool(args.get("dryRun"))
            )
            return _json({"answer": answer})
        except WorkspaceError as exc:
            return _error(str(exc), 409)

    async def decide(request: Request) -> Response:
        refused = await guard(request, action=True)
        if refused:
            return refused
        args = await body(request)
        approval_id, approve = args.get("id"), args.get("approve")
        if not isinstance(approval_id, str) or not isinstance(approve, bool):
            return _error("give the approval's id and approve: true or false")
        workspace = args.get("workspace") if isinstance(args.get("workspace"), str) else None
        try:
            answer = await off_loop(state.decide, workspace, approval_id, approve=approve)
        except WorkspaceError as exc:
            return _error(str(exc), 409)
        return _json({"answer": answer})

    async def job_log(request: Request) -> Response:
        refused = await guard(request, action=False)
        if refused:
            return refused
        try:
            text = await off_loop(state.job_log, request.query_params.get("id", ""))
        except WorkspaceError as exc:
            return _error(str(exc), 404)
        return _json({"log": text})

    async def kill(request: Request) -> Response:
        refused = await guard(request, action=True)
        if refused:
            return refused
        job_id = (await body(request)).get("id")
        if not isinstance(job_id, str):
            return _error("give the job's id")
        try:
            return _json({"answer": await off_loop(state.kill, job_id)})
        except WorkspaceError as exc:
            return _error(str(exc), 409)

    async def events(request: Request) -> Response:
        refused = await guard(request, action=False)
        if refused:
            return refused

        async def stream() -> AsyncIterator[bytes]:
            seen = {e.get("id") for e in await off_loop(state.entries)}
            marks = await off_loop(state.marks)
            yield b": connected\n\n"
            while not await request.is_disconnected():
                await asyncio.sleep(limits.CONSOLE_POLL_SECONDS)
                now = await off_loop(state.marks)
                if now == marks:  # nothing appended: a stat, not a read of the journal
                    yield b": keep-alive\n\n"
                    continue
                marks = now
                fresh = [e for e in await off_loop(state.entries) if e.get("id") not in seen]
                for entry in reversed(fresh):  # oldest first, so the page prepends in order
                    seen.add(entry.get("id"))
                    yield f"event: entry\ndata: {json.dumps(entry)}\n\n".encode()
                yield b": keep-alive\n\n"

        return StreamingResponse(
            stream(), media_type="text/event-stream", headers={"cache-control": "no-store"}
        )

    routes = [
        Route("/login", login_page, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/", page),
        Route("/api/entries", entries),
        Route("/api/older", older),
        Route("/api/diff", diff),
        Route("/api/history", history),
        Route("/api/list/{what}", listing),
        Route("/api/undo", undo, methods=["POST"]),
        Route("/api/restore", restore, methods=["POST"]),
        Route("/api/jobs/kill", kill, methods=["POST"]),
        Route("/api/approvals/decide", decide, methods=["POST"]),
        Route("/api/jobs/log", job_log),
        Route("/events", events),
    ]
    return Starlette(routes=routes)


# Only the page's own script (by nonce) runs: a `<script>` that reached the page through
# agent text could not, even if it were ever inserted as HTML.
CSP = (
    "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; "
    "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
