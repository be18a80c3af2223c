"""What the current MCP request carries that tools and middleware both need.

A neutral module: tools, middleware and transports import it, it imports none of them.
"""

from __future__ import annotations

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
    if token is None:
        return None
    return token.subject or token.client_id or None


def history_subject(shared: bool) -> str | None:
    """Whose history this request sees and undoes: over HTTP the caller's own (another
    subject's work is neither listed nor reverted), everything with `--share-history`,
    and everything where nobody is authenticated (stdio)."""
    return None if shared else current_subject()
