"""Audit every tool call: one middleware, outermost, so it sees the final outcome."""

import time
from datetime import UTC, datetime

from fastmcp.server.middleware import Middleware, MiddlewareContext

from ..core import handoff
from ..core.audit import AuditLog
from ..core.callscope import named_paths
from ..core.state.journal import activity
from ..requestctx import current_subject
from ..services import Services
from .outcome import Outcome, observed

META_FIELDS = ("execution_id", "workspace_id", "project_id")


def _meta(context: MiddlewareContext) -> dict:
    ctx = context.fastmcp_context
    try:
        meta = ctx.request_context.meta if ctx is not None and ctx.request_context else None
    except (AttributeError, RuntimeError, LookupError):
        return {}
    if meta is None:
        return {}
    data = (
        meta if isinstance(meta, dict) else meta.model_dump() if hasattr(meta, "model_dump") else {}
    )
    extra = getattr(meta, "model_extra", None) or {}
    data = {**data, **extra}
    return {k: str(data[k]) for k in META_FIELDS if data.get(k) is not None}


class AuditMiddleware(Middleware):
    def __init__(self, services: Services, sink: AuditLog) -> None:
        self.services = services
        self.sink = sink

    async def on_call_tool(self, context: MiddlewareContext, call_next):
        message = context.message
        arguments = message.arguments or {}
        started = time.perf_counter()
        outcome = Outcome()
        with activity.capture() as act:
            try:
                return await observed(context, call_next, outcome)
            finally:
                workspace = arguments.get("workspace")
                record = {
                    "ts": datetime.now(UTC)
                    .isoformat(timespec="milliseconds")
                    .replace("+00:00", "Z"),
                    "subject": current_subject(),
                    "workspace": workspace
                    if isinstance(workspace, str)
                    else self.services.workspaces.primary.name,
                    "tool": message.name,
                    "paths": act.paths or named_paths(arguments) or None,
                    "outcome": "ok" if outcome.ok else "error",
                    "error": outcome.error,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                    **_meta(context),
                }
                await handoff.run_sync(lambda: self.sink.write(record))
