"""What the current MCP request carries that tools and middleware both need.

A neutral module: tools, middleware and transports import it, it imports none of them.
"""

from __future__ import annotations

import hashlib
import secrets
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from .core import containment, limits
from .core.echo import echo
from .core.errors import WorkspaceError
from .core.workspaces import Subpath, Workspace

# The header that confines an HTTP session (or one sessionless request) to a directory.
SUBPATH_HEADER = "x-workspace-subpath"

# Tool tags: what a tool does, for --read-only filtering and for the journal.
READ_TAG = "read"
WRITE_TAG = "write"
JOURNAL_TAG = "journal"  # middleware.journal writes an entry for these


@dataclass
class TaskCall:
    """A `tools/call` whose client negotiated the tasks extension (transports.tasks): a
    command tool that runs on as a job names it here, and the call is answered with
    the job as its task."""

    job_id: str | None = None


TASK_CALL: ContextVar[TaskCall | None] = ContextVar("task_call", default=None)

# Where a transport guard puts the session it verified for this request (the request
# scope's `state`): an id the server issued on this transport and checked against the
# caller (SessionGuard on /mcp, LegacySessionGuard on /messages/). Calls are attributed
# to it alone, never to a session header the client chose (issue 43).
VERIFIED_SESSION = "awm_session"


def current_subject() -> str | None:
    """The authenticated subject of this request (HTTP), or None (stdio, no auth)."""
    from fastmcp.server.dependencies import get_access_token

    try:
        token = get_access_token()
    except RuntimeError:
        return None
    return subject_of_token(token)


def subject_of_token(token: Any) -> str | None:
    """Who an access token names: its subject, else its client id (API keys, tokens)."""
    if token is None:
        return None
    return getattr(token, "subject", None) or getattr(token, "client_id", None) or None


def parse_subpath(primary: Workspace, raw: str) -> Subpath:
    """The header's directory below the primary root, resolved once by the containment
    walk; a bad one is a WorkspaceError naming the header."""
    try:
        return containment.resolve_subpath(primary, raw)
    except WorkspaceError as exc:
        raise WorkspaceError(f"{SUBPATH_HEADER}: {exc}") from None


# The id of this process's stdio (or in-memory) connection, for the journal's `session`.
LOCAL_SESSION = "local-" + secrets.token_hex(4)


def session_and_client(ctx: Any) -> tuple[str, str | None]:
    """Which agent a call came from and the client's name: an HTTP session's id, this
    process's id over stdio, else the sessionless agent; the name from `initialize` or
    the request's `_meta`."""
    from fastmcp.server.dependencies import get_http_request

    name = _client_info(ctx, "name")
    try:
        request = get_http_request()
    except RuntimeError:
        return LOCAL_SESSION, name
    state = request.scope.get("state") or {}
    session = state.get(VERIFIED_SESSION) if isinstance(state, dict) else None
    if not isinstance(session, str) or not session:
        session = sessionless_agent(current_subject(), name, client_version(ctx))
    return session, name


def sessionless_agent(subject: str | None, name: str | None, version: str | None) -> str:
    """What names the agent of a request without a session (the 2026-07-28 protocol,
    `--workers`, `--stateless`): the same caller, client and version on every request,
    so its work can be told apart, listed and undone like a session's. Agents that share
    a credential and a client are one agent here: give each its own API key."""
    seed = "\0".join(part or "" for part in (subject, name, version))
    return "a-" + hashlib.sha256(seed.encode()).hexdigest()[:12]


def history_subject(shared: bool) -> str | None:
    """Whose history this request sees and undoes: over HTTP the caller's own (another
    subject's work is neither listed nor reverted), everything with `--share-history`,
    and everything where nobody is authenticated (stdio)."""
    return None if shared else current_subject()


def client_version(ctx: Any) -> str | None:
    """The client's version from `initialize` (or the request's `_meta`), if it said."""
    return _client_info(ctx, "version")


def _client_info(ctx: Any, field: str) -> str | None:
    """One field of the client's `clientInfo`: from `initialize`, else (2026-07-28,
    sessionless) from the request's `_meta`."""
    try:
        params = ctx.session.client_params if ctx is not None else None
        info = getattr(params, "client_info", None) or getattr(params, "clientInfo", None)
        value = getattr(info, field, None)
        if value is None and ctx is not None and ctx.request_context is not None:
            meta = ctx.request_context.meta
            extra = (getattr(meta, "model_extra", None) or {}) if meta is not None else {}
            found = extra.get("io.modelcontextprotocol/clientInfo")
            value = found.get(field) if isinstance(found, dict) else None
    except (RuntimeError, AttributeError):
        return None
    # Shown as data wherever it appears (workspace_list, refusals, the journal, the
    # console): a newline, U+2028 or ESC in a name would forge lines or reach a
    # terminal, a bidi control would reorder what a person reads (issue 43).
    return echo(value, limits.CLIENT_NAME_CHARS) if isinstance(value, str) else None
