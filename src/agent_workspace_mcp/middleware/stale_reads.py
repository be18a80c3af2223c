"""Bind each tool call to its agent for the stale-read guard (core.state.stale_reads, issue 34).

The agent is the session the journal names (requestctx.session_and_client): what a call
reads is remembered for that session, and what it writes is checked against it. A call
naming a workspace that does not exist runs unbound (the tool reports the name itself),
and so does every call under `--read-only`.
"""

from fastmcp.server.middleware import Middleware, MiddlewareContext

from ..core.errors import WorkspaceError
from ..core.state import stale_reads
from ..core.state.files import state_scope
from ..requestctx import session_and_client
from ..services import Services


class StaleReadMiddleware(Middleware):
    def __init__(self, services: Services) -> None:
        self.services = services

    async def on_call_tool(self, context: MiddlewareContext, call_next):
        if self.services.settings.read_only:
            return await call_next(context)  # nothing is written, so nothing to guard
        arguments = context.message.arguments or {}
        workspace = arguments.get("workspace")
        try:
            ws = self.services.workspaces.get(workspace if isinstance(workspace, str) else None)
        except WorkspaceError:
            return await call_next(context)
        session, client = session_and_client(context.fastmcp_context)
        if session is None:
            return await call_next(context)
        with (
            state_scope(),
            stale_reads.bind(
                ws, stale_reads.Agent(session, client), keep=self.services.settings.checkpoints
            ),
        ):
            return await call_next(context)
