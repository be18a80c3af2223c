"""Refuse an over-long, over-deep or over-full argument before any stage or tool works
on it (issue 19): the journal, the workspace lookup and the tool itself only ever see
bounded input. The limits are `limits.ARGUMENT_CHARS` and its neighbours."""

from fastmcp.exceptions import ToolError
from fastmcp.server.middleware import Middleware, MiddlewareContext

from ..core.bounds import argument_problem
from ..core.echo import echo


class ArgumentBoundsMiddleware(Middleware):
    async def on_call_tool(self, context: MiddlewareContext, call_next):
        arguments = context.message.arguments
        if arguments:
            problem = argument_problem(arguments)
            if problem is not None:
                raise ToolError(f"invalid arguments for {echo(context.message.name)}: {problem}")
        return await call_next(context)
