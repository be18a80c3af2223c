"""Host and Origin: the one check the HTTP transport and the operator console share.

A request whose Host is not one the server answers at is a DNS-rebinding attempt (a
name that resolved to 127.0.0.1 a moment ago); one whose Origin is another site's is a
cross-site request a browser was tricked into. The transport checks against its
configured hosts and `--cors-origin` allowlist; the console accepts only its own origin.
"""

from __future__ import annotations


def refusal(
    host: str, origin: str | None, *, hosts: set[str] | None, origins: set[str] | None
) -> str | None:
    """ "host", "origin" (what is refused) or None. `hosts` None: any Host (a guard in
    front decided); `origins` None: only the request's own origin (same host and port)."""
    host = host.lower()
    if hosts is not None and host not in {h.lower() for h in hosts}:
        return "host"
    if origin is None:
        return None
    origin = origin.rstrip("/").lower()
    if origins is None:
        return None if origin.split("://", 1)[-1] == host else "origin"
    return None if origin in origins else "origin"
