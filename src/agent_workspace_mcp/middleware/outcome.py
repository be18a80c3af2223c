"""How a tool call ended, as the audit trail and the journal both need to know it."""

from dataclasses import dataclass

from fastmcp.exceptions import ToolError
from fastmcp.server.middleware import MiddlewareContext

from .errors import expected_failure


@dataclass
class Outcome:
    ok: bool = True
    error: str | None = None  # the sentence the model saw, or the exception type


async def observed(context: MiddlewareContext, call_next, outcome: Outcome):
    """Run the rest of the chain, recording failure (raised or `isError`) in `outcome`."""
    try:
        result = await call_next(context)
    except ToolError as exc:
        outcome.ok, outcome.error = False, expected_failure(exc) or str(exc)
        raise
    except Exception as exc:
        outcome.ok, outcome.error = False, type(exc).__name__
        raise
    if getattr(result, "is_error", False):
        outcome.ok = False
    return result
