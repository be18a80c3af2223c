"""The console's web application (Starlette, server-sent events, a Jinja2 page).

Safe to open: the URL printed at start carries a one-time token that becomes an
HttpOnly, SameSite=Strict session cookie; every other route needs that cookie, every
action (POST) also needs the page's CSRF token in a header, and a request whose Host or
Origin is not this console's is refused (DNS rebinding, cross-site posts). The page
puts agent-provided text in as text, never as HTML.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from typing import Any

import anyio
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from ..core import limits
from ..core.errors import WorkspaceError
from .state import ConsoleState, as_dicts

COOKIE = "awm_console"


def cookie_name(request: Request) -> str:
    """One cookie per port: browsers scope cookies by host, not port, so two consoles on
    127.0.0.1 (or a local one and an HTTP one) would otherwise overwrite each other."""
    port = request.headers.get("host", "").rpartition(":")[2]
    return f"{COOKIE}_{port}" if port.isdigit() else COOKIE


CSRF_HEADER = "x-csrf-token"


class Secrets:
    """The sign-in credential, the session cookie value and the CSRF token.

    Locally the credential is a one-time token printed with the URL; over HTTP it is
    the operator token (`--operator-token`), which also authorizes API calls as a
    bearer token and is never spent."""

    def __init__(
        self,
        operator: str | None = None,
        operator_jwt: Callable[[str], Awaitable[bool]] | None = None,
    ) -> None:
        self.operator = operator
        # Over HTTP with JWT auth: a token carrying the operator scope (OPERATOR_SCOPE).
        self.operator_jwt = operator_jwt
        remote = operator is not None or operator_jwt is not None
        self.login: str | None = (
            None if remote else secrets.token_urlsafe(limits.CONSOLE_TOKEN_BYTES)
        )
        self.session = secrets.token_urlsafe(limits.CONSOLE_TOKEN_BYTES)
        self.csrf = secrets.token_urlsafe(limits.CONSOLE_TOKEN_BYTES)

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

    async def signed_in(request: Request) -> bool:
        cookie = request.cookies.get(cookie_name(request), "")
        if cookie and hmac.compare_digest(cookie.encode(), keys.session.encode()):
            return True
        return await keys.bearer(request.headers.get("authorization", ""))

    def foreign_host(request: Request) -> bool:
        host = request.headers.get("host", "")
        return allowed_hosts is not None and host not in allowed_hosts

    async def guard(request: Request, *, action: bool) -> Response | None:
        if foreign_host(request):
            return _error("this console answers only at its own address", 403)
        origin = request.headers.get("origin")
        if origin is not None and origin.split("://", 1)[-1] != request.headers.get("host"):
            return _error("cross-site requests are refused", 403)
        if not await signed_in(request):
            how = ("sign in at /console/login?token=<operator credential>" if keys.remote
                   else "open the URL the console printed")  # fmt: skip
            return _error(f"not signed in: {how}", 401)
        # A bearer client (a script) sends no cookie a browser could be tricked into.
        bearer = await keys.bearer(request.headers.get("authorization", ""))
        csrf = request.headers.get(CSRF_HEADER, "").encode()
        if action and not bearer and not hmac.compare_digest(csrf, keys.csrf.encode()):
            return _error("missing or wrong CSRF token", 403)
        return None

    async def off_loop(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))

    async def login(request: Request) -> Response:
        if foreign_host(request):
            return _error("this console answers only at its own address", 403)
        if not await keys.take_login(request.query_params.get("token", "")):
            if keys.remote:
                return _error("not an operator credential", 401)
            return _error("this sign-in link was already used or is wrong; restart the "
                          "console for a new one", 401)  # fmt: skip
        response = RedirectResponse(f"{base_path}/", status_code=303)
        response.set_cookie(cookie_name(request), keys.session, httponly=True, samesite="strict",
                            path=base_path or "/")  # fmt: skip
        return response

    async def page(request: Request) -> Response:
        refused = await guard(request, action=False)
        if refused:
            return refused
        nonce = secrets.token_urlsafe(16)
        html = templates.get_template("console.html").render(
            csrf=keys.csrf,
            base=base_path,
            nonce=nonce,
            workspaces=[ws.name for ws in state.registry],
        )
        return Response(html, media_type="text/html; charset=utf-8",
                        headers={"content-security-policy": CSP.format(nonce=nonce),
                                 "x-content-type-options": "nosniff",
                                 "referrer-policy": "no-referrer"})  # fmt: skip

    def query(request: Request, name: str) -> str | None:
        value = request.query_params.get(name)
        return value or None

    async def entries(request: Request) -> Response:
        refused = await guard(request, action=False)
        if refused:
            return refused
        try:
            found = await off_loop(
                state.entries, query(request, "workspace"), limit=limits.CONSOLE_ENTRIES,
                tool=query(request, "tool"), path=query(request, "path"),
                outcome=query(request, "outcome"), by=query(request, "by"),
                session=query(request, "session"), since=query(request, "since"),
            )  # fmt: skip
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
            found, cursor = await off_loop(state.older, query(request, "workspace"), before,
                                           limit=limits.CONSOLE_ENTRIES, **filters)  # fmt: skip
        except WorkspaceError as exc:
            return _error(str(exc))
        return _json({"entries": found, "cursor": cursor})

    async def diff(request: Request) -> Response:
        refused = await guard(request, action=False)
        if refused:
            return refused
        try:
            raw = request.query_params.get("offset", "0")
            diffs = await off_loop(state.diff, query(request, "workspace"),
                                   request.query_params.get("id", ""), path=query(request, "path"),
                                   offset=int(raw) if raw.isdigit() else 0)  # fmt: skip
        except WorkspaceError as exc:
            return _error(str(exc))
        return _json({"files": as_dicts(diffs)})

    async def listing(request: Request) -> Response:
        refused = await guard(request, action=False)
        if refused:
            return refused
        what = request.path_params["what"]
        source = {"notes": state.notes, "changes": state.changes, "jobs": state.jobs,
                  "sessions": state.live_sessions}.get(what)  # fmt: skip
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
                state.undo, text("workspace"), entry=text("entry"), to=text("to"),
                change=text("change"), session=text("session"),
                dry_run=bool(args.get("dryRun")),
                force=bool(args.get("force")),
            )  # fmt: skip
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
            return _json({"answer": await off_loop(state.restore, workspace, path, before)})
        except WorkspaceError as exc:
            return _error(str(exc), 409)

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

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"cache-control": "no-store"})  # fmt: skip

    routes = [
        Route("/login", login),
        Route("/", page),
        Route("/api/entries", entries),
        Route("/api/older", older),
        Route("/api/diff", diff),
        Route("/api/list/{what}", listing),
        Route("/api/undo", undo, methods=["POST"]),
        Route("/api/restore", restore, methods=["POST"]),
        Route("/api/jobs/kill", kill, methods=["POST"]),
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
