"""The one place that turns any failure into the single sentence a model sees.

- A core `WorkspaceError` raised by a tool body is an expected failure: its message is
  the answer, verbatim, and no traceback is logged (`quiet_expected_failures`).
- An `OSError` nobody translated becomes its one-sentence description.
- Argument-validation errors, which FastMCP renders as a multi-line pydantic dump,
  become one sentence naming the argument.
- Anything else becomes a generic sentence; its traceback stays on stderr.

It re-raises `ToolError`, so results remain `isError` (never JSON-RPC errors).
"""

import logging
import re
from collections.abc import Callable
from typing import Any

from fastmcp.exceptions import NotFoundError, ToolError, ValidationError
from fastmcp.server.middleware import Middleware, MiddlewareContext
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError as PydanticValidationError

from ..core.echo import bounded, echo, wire_safe
from ..core.errors import WorkspaceError, describe_os_error
from ..core.limits import ECHO_LISTED, IDENTIFIER_MAX_CHARS
from ..core.nearmiss import closest

log = logging.getLogger("agent_workspace_mcp")


class _ExpectedFailures(logging.Filter):
    """Drops FastMCP's "Error calling tool" record (with traceback) for failures that are
    answers, not faults: a WorkspaceError is the agent's mistake, an OSError is logged
    here in one line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith("Invalid arguments for tool"):
            # The model gets our one sentence, and ArgumentRepairMiddleware may still
            # accept the call (snake_case names, arrays sent as JSON strings): a call
            # that succeeds must log nothing above DEBUG (issue 29).
            return False
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and transform_argument_error(exc) is not None:
            return False
        return not isinstance(exc, (WorkspaceError, OSError))


def quiet_expected_failures() -> None:
    server_log = logging.getLogger("fastmcp.server.server")
    if not any(isinstance(f, _ExpectedFailures) for f in server_log.filters):
        server_log.addFilter(_ExpectedFailures())


def one_line(text: str) -> str:
    """An error as the model gets it: one line, held to ERROR_MAX_CHARS (issue 19)."""
    return bounded(wire_safe(re.sub(r"\s+", " ", text).strip()))


def expected_failure(exc: ToolError) -> str | None:
    """The answer for a tool body's expected failure (a WorkspaceError's sentence, an
    OSError's description), or None when `exc` is something else."""
    cause = exc.__cause__
    if isinstance(cause, WorkspaceError):
        if cause.detail:
            return one_line(str(cause)) + "\n" + wire_safe(cause.detail)
        return one_line(str(cause))
    if isinstance(cause, OSError):
        return one_line(describe_os_error(cause))
    return None


def _arg_name(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p != "call" and not str(p).startswith("call[")]
    name = parts[0] if parts else "arguments"
    for part in parts[1:]:
        name += f"[{part}]" if part.isdigit() else f".{part}"
    return name


# FastMCP's transformed tools (our profiles' renames) check argument names themselves and
# raise a TypeError, which would otherwise read as an internal error.
_TRANSFORM_ARGUMENTS = re.compile(
    r"^(?:Got unexpected keyword|(Missing required)) argument\(s\): (.+)$"
)


def transform_argument_error(exc: BaseException) -> tuple[bool, list[str]] | None:
    """(missing?, names) for a transformed tool's argument-name TypeError, else None."""
    cause = exc.__cause__ if isinstance(exc, ToolError) else exc
    if not isinstance(cause, TypeError):
        return None
    match = _TRANSFORM_ARGUMENTS.match(str(cause))
    if match is None:
        return None
    return match.group(1) is not None, match.group(2).split(", ")


# One short example of the right shape for arguments that take a list.
LIST_EXAMPLES = {
    "command": '["npm", "--version"]',
    "paths": '["src/a.py", "src/b.py"]',
    "edits": '[{"path": "a.py", "oldString": "x", "newString": "y"}]',
    "updates": '[{"taskId": "T1", "status": "done"}]',
    "tags": '["auth", "todo"]',
}


def _fields_at(schema: dict, loc: tuple) -> list[str]:
    """The field names valid where `loc` points inside the tool's JSON schema."""
    defs = schema.get("$defs", {})
    node = schema
    for part in loc[:-1]:
        if "$ref" in node:
            node = defs.get(node["$ref"].rsplit("/", 1)[-1], {})
        if isinstance(part, int) or str(part).isdigit():
            node = node.get("items", {})
        else:
            node = node.get("properties", {}).get(str(part), {})
    if "$ref" in node:
        node = defs.get(node["$ref"].rsplit("/", 1)[-1], {})
    return list(node.get("properties", {}))


def describe_validation(tool: str, exc: PydanticValidationError, schema: dict) -> str:
    problems = []
    for error in exc.errors()[:3]:
        loc = tuple(
            p for p in error.get("loc", ()) if p != "call" and not str(p).startswith("call[")
        )
        name = _arg_name(loc)
        kind = error.get("type", "")
        if kind == "missing_argument" or kind == "missing":
            problems.append(f"missing required argument '{name}'")
        elif kind == "unexpected_keyword_argument" or kind == "extra_forbidden":
            valid = _fields_at(schema, loc) if len(loc) > 1 else list(schema.get("properties", {}))
            hint = f" (valid: {', '.join(valid)})" if valid else ""
            problems.append(f"unknown argument '{echo(name)}'{hint}")
        elif kind == "list_type":
            example = LIST_EXAMPLES.get(str(loc[0]) if loc else "", '["..."]')
            problems.append(f"'{name}' must be a JSON array, e.g. {example}")
        else:
            message = str(error.get("msg", "is invalid"))
            problems.append(f"'{name}': {message[0].lower() + message[1:]}")
    more = len(exc.errors()) - len(problems)
    if more > 0:
        problems.append(f"{more} more")
    return one_line(f"invalid arguments for {tool}: " + "; ".join(problems))


def unknown_tool(name: str, available: list[str], why_not: Callable[[str], str | None]) -> str:
    """One sentence for a tool name we do not serve: why it is off (the served surface
    says: server.surface), or the near miss."""
    if len(name) > IDENTIFIER_MAX_CHARS:
        return f"unknown tool '{echo(name)}': tools/list shows the available tools"
    reason = why_not(name)
    if reason is not None:
        return f"{name} is off: {reason}"
    close = closest(name, available)
    hint = f"did you mean {close[0]}?" if close else "tools/list shows the available tools"
    return f"unknown tool '{echo(name)}': {hint}"


class ErrorShapingMiddleware(Middleware):
    def __init__(self) -> None:
        # Why a tool name is not served: set by server.build once the surface is known.
        self.why_not: Callable[[str], str | None] = lambda _name: None

    async def on_call_tool(self, context: MiddlewareContext, call_next):
        name = context.message.name
        try:
            return await call_next(context)
        except NotFoundError:
            available = []
            if context.fastmcp_context is not None:
                available = [t.name for t in await context.fastmcp_context.fastmcp.list_tools()]
            raise ToolError(unknown_tool(name, available, self.why_not)) from None
        except ValidationError as exc:
            cause = exc.__cause__
            if isinstance(cause, PydanticValidationError):
                schema = await self._parameters(context)
                raise ToolError(describe_validation(name, cause, schema)) from None
            raise ToolError(f"invalid arguments for {name}: {one_line(str(exc))}") from None
        except ToolError as exc:
            cause = exc.__cause__
            expected = expected_failure(exc)
            if expected is not None:
                if isinstance(cause, OSError):
                    log.warning("tool %s: %r", name, cause)
                raise ToolError(expected) from None
            if isinstance(cause, NotFoundError):
                # --tool-search's `call_tool` asked for a tool that is unknown or hidden
                # (--read-only): the same sentence as calling that name directly.
                inner = (context.message.arguments or {}).get("name")
                available = []
                if context.fastmcp_context is not None:
                    available = [t.name for t in await context.fastmcp_context.fastmcp.list_tools()]
                raise ToolError(
                    unknown_tool(inner if isinstance(inner, str) else name, available, self.why_not)
                ) from None
            if isinstance(cause, MCPError):
                raise cause from None  # a protocol error (-32021, ...) a tool chose: as is
            if cause is None:
                message = one_line(str(exc))
                if message == str(exc):
                    raise
                raise ToolError(message) from None
            names = transform_argument_error(exc)
            if names is not None:
                raise ToolError(await self._transform_sentence(context, *names)) from None
            # FastMCP wrapped an unexpected exception; it already logged the traceback.
            log.debug("tool %s failed unexpectedly: %r", name, cause)
            raise ToolError(
                f"internal error in {name} ({type(cause).__name__}); the server log has details"
            ) from None

    async def _transform_sentence(
        self, context: MiddlewareContext, missing: bool, names: list[str]
    ) -> str:
        tool = context.message.name
        quoted = ", ".join(f"'{echo(n)}'" for n in names[:ECHO_LISTED])
        if missing:
            plural = "s" if len(names) > 1 else ""
            return f"invalid arguments for {tool}: missing required argument{plural} {quoted}"
        valid = list((await self._parameters(context)).get("properties", {}))
        hint = f" (valid: {', '.join(valid)})" if valid else ""
        return one_line(f"invalid arguments for {tool}: unknown argument {quoted}{hint}")

    @staticmethod
    async def _parameters(context: MiddlewareContext) -> dict:
        ctx = context.fastmcp_context
        if ctx is None:
            return {}
        tool = await ctx.fastmcp.get_tool(context.message.name)
        return (tool.parameters or {}) if tool else {}
