"""`awm.outcome` on each tool call's span, when traces are exported (telemetry.py)."""

from fastmcp.server.middleware import Middleware, MiddlewareContext

from ..telemetry import mark_outcome
from .outcome import Outcome, observed


class TracingMiddleware(Middleware):
    async def on_call_tool(self, context: MiddlewareContext, call_next):
        outcome = Outcome()
        try:
            return await observed(context, call_next, outcome)
        finally:
            mark_outcome(outcome.ok)
