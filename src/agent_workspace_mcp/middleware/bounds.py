"""Refuse an over-long, over-deep or over-full argument before any stage or tool works
on it (issue 19): the journal, the workspace lookup and the tool itself only ever see
bounded input. The limits are `limits.ARGUMENT_CHARS` and its neighbours."""

from fastmcp.exceptions import ToolError, ValidationError
from fastmcp.server.middleware import Middleware, MiddlewareContext

from ..core.bounds import argument_problem
from ..core.echo import echo
from ..core.limits import IDENTIFIER_MAX_CHARS, RESOURCE_URI_MAX_CHARS


class ArgumentBoundsMiddleware(Middleware):
    async def on_call_tool(self, context: MiddlewareContext, call_next):
        arguments = context.message.arguments
        if arguments:
            problem = argument_problem(arguments)
            if problem is not None:
                raise ToolError(f"invalid arguments for {echo(context.message.name)}: {problem}")
        return await call_next(context)

    # FastMCP quotes the URI or prompt name it cannot find, whole; bound them first.
    async def on_read_resource(self, context: MiddlewareContext, call_next):
        uri = str(context.message.uri)
        if len(uri) > RESOURCE_URI_MAX_CHARS:
            raise ValidationError(
                f"the resource URI is {len(uri):,} characters long; "
                f"the limit is {RESOURCE_URI_MAX_CHARS:,}"
            )
        return await call_next(context)

    async def on_get_prompt(self, context: MiddlewareContext, call_next):
        name = context.message.name
        if len(name) > IDENTIFIER_MAX_CHARS:
            raise ValidationError(
                f"the prompt name is {len(name):,} characters long; "
                f"the limit is {IDENTIFIER_MAX_CHARS:,}"
            )
        problem = argument_problem(context.message.arguments or {})
        if problem is not None:
            raise ValidationError(f"invalid arguments for prompt {echo(name)}: {problem}")
        return await call_next(context)
