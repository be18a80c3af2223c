"""Jobs as tasks: the `io.modelcontextprotocol/tasks` extension (SEP-2663).

A 2026-07-28 client that declares the extension on a `tools/call` gets, for a command
that runs on past TASK_PROMOTE_AFTER_MS (or one started with `background: true`), a
flat `CreateTaskResult` whose `taskId` is the job's id, instead of text naming a job.
It polls `tasks/get`, which answers with the status and, once the job ended, the answer
the call would have given had it waited; `tasks/cancel` kills the job's process group.
Quicker commands answer in the call (the spec's immediate-result shortcut), and clients
without the extension keep the job tools.

A task is the job, nothing more: it lives in the job registry, so it survives the
client's disconnect, is read from any worker of `--workers` through the job's record,
and is bound to the subject that started it (another subject is told it does not
exist, -32602, like an unknown id). The methods exist only on the 2026-07-28 protocol
(the SDK drops `capabilities.extensions` from older handshakes); a request that does
not carry the extension in `_meta` is refused with -32021, as the SEP requires.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from fastmcp.server.dependencies import get_http_request
from fastmcp.server.extensions import MethodBinding, ServerExtension, read_client_extension_settings
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, RequestParams
from mcp_types.jsonrpc import HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ConfigDict, Field

from ..core import handoff, limits
from ..core.errors import NotFoundError, WorkspaceError
from ..core.exec.jobs import JobRegistry, JobView, job_answer
from ..requestctx import TASK_CALL, TaskCall, current_subject

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
_MODERN = frozenset(MODERN_PROTOCOL_VERSIONS)

# Job status -> task status. A job killed (tasks/cancel, job_kill, the console) was
# cancelled; one that timed out ran and ended, and its answer says so, as a call's does.
_STATUS = {
    "running": "working",
    "exited": "completed",
    "timed-out": "completed",
    "killed": "cancelled",
}


class TaskParams(RequestParams):
    model_config = ConfigDict(populate_by_name=True)

    task_id: str = Field(alias="taskId", max_length=limits.IDENTIFIER_MAX_CHARS)


class UpdateParams(TaskParams):
    input_responses: Any = Field(default=None, alias="inputResponses")


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _now() -> str:
    return _iso(datetime.now(UTC))


def _missing_capability(what: str) -> MCPError:
    return MCPError(
        code=MISSING_REQUIRED_CLIENT_CAPABILITY,
        message=f"{what} needs the tasks extension ({TASKS_EXTENSION}) declared in the "
        "request's _meta client capabilities.",
        data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )


class TasksExtension(ServerExtension):
    """The extension: its capability, `tasks/get|update|cancel`, and the `tools/call`
    interceptor that answers a task client's long command with its job as a task."""

    identifier = TASKS_EXTENSION

    def __init__(self, jobs: JobRegistry) -> None:
        self.jobs = jobs

    def clone(self) -> TasksExtension:
        return TasksExtension(self.jobs)

    def methods(self) -> Sequence[MethodBinding]:
        return [
            MethodBinding("tasks/get", TaskParams, self._get, protocol_versions=_MODERN),
            MethodBinding("tasks/update", UpdateParams, self._update, protocol_versions=_MODERN),
            MethodBinding("tasks/cancel", TaskParams, self._cancel, protocol_versions=_MODERN),
        ]

    async def intercept_tool_call(self, params, context, call_next):
        rc = context.request_context
        if rc is None or rc.protocol_version not in _MODERN:
            return await call_next()
        if context.client_extension_settings(TASKS_EXTENSION) is None:
            return await call_next()
        task = TaskCall()
        token = TASK_CALL.set(task)
        try:
            outcome = await call_next()
        finally:
            TASK_CALL.reset(token)
        if task.job_id is None:
            return outcome
        view = await self._job(task.job_id)
        return {"resultType": "task", **self._fields(view)}

    def _fields(self, view: JobView) -> dict[str, Any]:
        # ttlMs null: a task is kept among the last JOBS_REMEMBERED jobs, not for a time.
        return {
            "taskId": view.id,
            "status": _STATUS.get(view.status, "completed"),
            "createdAt": _iso(datetime.fromtimestamp(view.started, UTC)),
            "lastUpdatedAt": _now(),
            "ttlMs": None,
            "pollIntervalMs": limits.TASK_POLL_INTERVAL_MS,
        }

    async def _job(self, job_id: str) -> JobView:
        # Off the loop: a job seen ending is settled by its first reader (its changes
        # recorded, its .git looked at), and a worker's job is read from its record.
        subject = current_subject()  # the request's, read on the loop as before
        return await handoff.run_sync(lambda: self.jobs.get(job_id, subject))

    async def _view(self, ctx, task_id: str) -> JobView:
        if read_client_extension_settings(ctx, TASKS_EXTENSION) is None:
            raise _missing_capability("tasks/*")
        try:
            header = get_http_request().headers.get(MCP_NAME_HEADER)
        except RuntimeError:
            header = None  # not HTTP: no routing header to agree with
        if header is not None and decode_header_value(header) != task_id:
            raise MCPError(
                code=HEADER_MISMATCH,
                message=f"the {MCP_NAME_HEADER} header does not match the body's taskId.",
            )
        try:
            return await self._job(task_id)
        except NotFoundError:
            raise MCPError(code=INVALID_PARAMS, message="unknown taskId.") from None

    async def _get(self, ctx, params: TaskParams) -> dict[str, Any]:
        view = await self._view(ctx, params.task_id)
        fields = self._fields(view)
        if fields["status"] == "completed":
            try:
                text = await handoff.run_sync(lambda: job_answer(view))
            except WorkspaceError as exc:
                fields["status"] = "failed"
                fields["error"] = {"code": INTERNAL_ERROR, "message": str(exc)}
            else:
                fields["result"] = {"content": [{"type": "text", "text": text}], "isError": False}
        return fields

    async def _update(self, ctx, params: UpdateParams) -> dict[str, Any]:
        await self._view(ctx, params.task_id)
        raise MCPError(
            code=INVALID_PARAMS,
            message="this task is not waiting for input: a command's task takes none.",
        )

    async def _cancel(self, ctx, params: TaskParams) -> dict[str, Any]:
        view = await self._view(ctx, params.task_id)
        if view.status == "running":
            subject = current_subject()
            await handoff.run_sync(lambda: self.jobs.kill(view.id, subject))
        return {}
