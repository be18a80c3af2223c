"""What the current MCP request carries that tools and middleware both need.

A neutral module: tools, middleware and transports import it, it imports none of them.
"""

from __future__ import annotations

from typing import Any

from .core import containment
from .core.errors import WorkspaceError
from .core.workspaces import Workspace

# The header that confines an HTTP session (or one sessionless request) to a directory.
SUBPATH_HEADER = "x-workspace-subpath"

# Tool tags: what a tool does, for --read-only filtering and for the journal.
READ_TAG = "read"
WRITE_TAG = "write"
JOURNAL_TAG = "journal"  # middleware.journal writes an entry for these


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


def parse_subpath(primary: Workspace, raw: str) -> containment.Subpath:
    """The header's directory below the primary root, resolved once by the containment
    walk; a bad one is a WorkspaceError naming the header."""
    try:
        return containment.resolve_subpath(primary, raw)
    except WorkspaceError as exc:
        raise WorkspaceError(f"{SUBPATH_HEADER}: {exc}") from None


def history_subject(shared: bool) -> str | None:
    """Whose history this request sees and undoes: over HTTP the caller's own (another
    subject's work is neither listed nor reverted), everything with `--share-history`,
    and everything where nobody is authenticated (stdio)."""
    return None if shared else current_subject()
