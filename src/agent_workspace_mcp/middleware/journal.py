"""The journal, wired once: every journaled tool call appends one entry, success or not.

Tools say what they touched with `core.state.journal.activity.record(paths, detail, result)`; this
middleware opens the capture around the call, then writes `{ts, id, tool, paths?,
detail?, result?, change?}` to the selected workspace's journal: `result` is the tool's own
(e.g. `exit 0 (12ms)`) or `ok`, or `error: <sentence>`. Read-only tools, `job_status`
and `remember` are not journaled (the tag decides). A journal failure is logged and
never changes the answer.

Each entry gets a short id; the call's checkpoint (core.checkpoints, issue 17) is
recorded under the same id, so `undo` and `restore_file` can name it.
"""

import inspect
import logging
import time

from fastmcp.exceptions import ToolError
from fastmcp.server.middleware import Middleware, MiddlewareContext

from ..core import handoff
from ..core.errors import WorkspaceError
from ..core.state.files import state_scope
from ..core.state.journal import calls as journaling
from ..core.state.locks import state_lock, try_state_lock
from ..requestctx import JOURNAL_TAG, client_version, current_subject, session_and_client
from ..services import Services
from .outcome import Outcome, observed

log = logging.getLogger("agent_workspace_mcp")


def _state_usable(ws) -> None:
    """The state lock taken (waited for, boundedly) and let go: the record can be written."""
    with state_lock(ws):
        pass


class JournalMiddleware(Middleware):
    def __init__(self, services: Services) -> None:
        self.services = services
        # tool name -> (journaled, a synchronous body run in a worker thread)
        self._kinds: dict[str, tuple[bool, bool]] = {}

    async def _kind(self, context: MiddlewareContext) -> tuple[bool, bool]:
        name = context.message.name
        if name not in self._kinds:
            ctx = context.fastmcp_context
            tool = await ctx.fastmcp.get_tool(name) if ctx is not None else None
            if tool is None:
                return False, False  # not cached: a client's made-up names must not grow it
            fn = getattr(tool, "fn", None)
            threaded = fn is not None and (
                handoff.is_threaded(fn) or not inspect.iscoroutinefunction(fn)
            )
            self._kinds[name] = (JOURNAL_TAG in (tool.tags or set()), threaded)
        return self._kinds[name]

    @staticmethod
    def _ready_here(ws) -> None:
        """`_ready` in the tool's worker thread, where a held lock can simply be waited for."""
        try:
            _state_usable(ws)
        except WorkspaceError as exc:
            raise WorkspaceError(f"not done: {exc}") from None

    async def _ready(self, ws) -> None:
        """A mutating call never proceeds without its record: the state must be writable
        and its lock obtainable (a held lock is waited for, boundedly, off the loop)."""
        try:
            if not try_state_lock(ws):
                await handoff.run_sync(lambda: _state_usable(ws))
        except WorkspaceError as exc:
            raise ToolError(f"not done: {exc}") from None

    async def on_call_tool(self, context: MiddlewareContext, call_next):
        journaled, threaded = await self._kind(context)
        if not journaled:
            return await call_next(context)
        arguments = context.message.arguments or {}
        try:
            ws = self.services.workspaces.get(arguments.get("workspace"))
        except WorkspaceError:
            return await call_next(context)  # the tool reports the unknown workspace itself
        with state_scope():  # the call's state directories, walked to once
            return await self._journaled_call(context, call_next, ws, threaded)

    async def _journaled_call(self, context: MiddlewareContext, call_next, ws, threaded: bool):
        if not threaded:
            await self._ready(ws)
        outcome = Outcome()
        subject = current_subject()
        settings = self.services.settings
        store = self.services.checkpoints(ws)
        tool = context.message.name
        session, client = session_and_client(context.fastmcp_context)
        version = client_version(context.fastmcp_context)
        started = time.perf_counter()
        with journaling.capturing(ws, tool, store, checkpoints=settings.checkpoints) as call:
            # Known before the call: a job it starts records its changes after it.
            call.recorder.by = subject
            call.recorder.who = journaling.who_of(session, client)

            def write() -> None:
                call.failed, call.error = not outcome.ok, outcome.error
                call.extra = {
                    "session": session,
                    "client": client,
                    "ms": round((time.perf_counter() - started) * 1000, 1),
                }
                if version is not None:
                    call.extra["client_version"] = version
                journaling.write(
                    call,
                    self.services.memory,
                    subject=subject,
                    checkpoints=settings.checkpoints,
                )

            envelope = None
            if threaded:  # the check and the write happen in the tool's own thread
                envelope = journaling.InThread(lambda: self._ready_here(ws), write)
            token = journaling.IN_THREAD.set(envelope)
            try:
                return await observed(context, call_next, outcome)
            finally:
                journaling.IN_THREAD.reset(token)
                if envelope is None or not (envelope.written or envelope.refused):
                    await handoff.run_sync(write)
