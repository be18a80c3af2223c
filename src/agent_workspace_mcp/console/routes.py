"""The console's routes: each a plain handler over ConsoleState. Who may reach them is
decided once, before any of them runs, by console/guard.py (its Host and Origin, its
sign-in and page key); the handlers only read arguments and shape answers."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator, Callable
from importlib import resources
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..core import handoff, limits
from ..core.errors import WorkspaceError
from .sessions import CSP, Secrets, cookie_name
from .state import ConsoleState, as_dicts


def _json(value: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(value, status_code=status)


def _error(message: str, status: int = 400) -> JSONResponse:
    return _json({"error": message}, status)


def routes(state: ConsoleState, keys: Secrets, base_path: str = "") -> list[Route]:
    """The console's pages and API, bound to one state and one set of secrets."""
    templates = Environment(
        loader=FileSystemLoader(str(resources.files(__package__) / "templates")),
        autoescape=select_autoescape(["html"]),
    )

    def cookie_key(request: Request) -> str | None:
        cookie = request.cookies.get(cookie_name(request), "")
        return keys.page_key(cookie) if cookie else None

    async def off_loop(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await handoff.run_sync(lambda: fn(*args, **kwargs))

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
        return html("login.html")

    async def login(request: Request) -> Response:
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
        bearer = await keys.bearer(request.headers.get("authorization", ""))
        if not bearer and cookie_key(request) is None:
            return html("login.html", 401)
        return html("console.html")

    def query(request: Request, name: str) -> str | None:
        value = request.query_params.get(name)
        return value or None

    async def entries(request: Request) -> Response:
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
        what = request.path_params["what"]
        source = {
            "notes": state.notes,
            "changes": state.changes,
            "jobs": state.jobs,
            "sessions": state.live_sessions,
            "approvals": state.approvals,
            "grants": state.grants,
            "oversight": state.oversight,
            "workspaces": lambda: [ws.name for ws in state.views()],
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
        args = await body(request)
        approval_id, approve = args.get("id"), args.get("approve")
        if not isinstance(approval_id, str) or not isinstance(approve, bool):
            return _error("give the approval's id and approve: true or false")
        workspace = args.get("workspace") if isinstance(args.get("workspace"), str) else None
        grant, edit, note = args.get("grant"), args.get("edit"), args.get("note")
        if grant is not None and not isinstance(grant, dict):
            return _error("a grant is an object: kind, and minutes or under")
        if (edit is not None and not isinstance(edit, dict)) or not isinstance(note, str | None):
            return _error("an edit is an object of the changed arguments, a note is text")
        try:
            answer = await off_loop(
                lambda: state.decide(
                    workspace, approval_id, approve=approve, grant=grant, edit=edit, note=note
                )
            )
        except WorkspaceError as exc:
            return _error(str(exc), 409)
        return _json({"answer": answer})

    async def revoke(request: Request) -> Response:
        args = await body(request)
        grant_id = args.get("id")
        if not isinstance(grant_id, str):
            return _error("give the grant's id")
        workspace = args.get("workspace") if isinstance(args.get("workspace"), str) else None
        try:
            answer = await off_loop(state.revoke, workspace, grant_id)
        except WorkspaceError as exc:
            return _error(str(exc), 409)
        return _json({"answer": answer})

    async def job_log(request: Request) -> Response:
        try:
            text = await off_loop(state.job_log, request.query_params.get("id", ""))
        except WorkspaceError as exc:
            return _error(str(exc), 404)
        return _json({"log": text})

    async def kill(request: Request) -> Response:
        job_id = (await body(request)).get("id")
        if not isinstance(job_id, str):
            return _error("give the job's id")
        try:
            return _json({"answer": await off_loop(state.kill, job_id)})
        except WorkspaceError as exc:
            return _error(str(exc), 409)

    async def events(request: Request) -> Response:

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

    return [
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
        Route("/api/grants/revoke", revoke, methods=["POST"]),
        Route("/api/jobs/log", job_log),
        Route("/events", events),
    ]
