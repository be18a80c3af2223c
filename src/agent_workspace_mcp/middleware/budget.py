"""Every text answer held to the answer budget, whatever tool produced it.

Tools budget their own answers more cleverly (read_file names the next offset, grep
counts what it left out); this is the backstop that keeps any answer under what
clients accept (~25k tokens). FastMCP's `ResponseLimitingMiddleware` is not used: it
measures the serialized result (so a 5 MiB image from read_binary_file would be turned
into truncated text), cuts mid-line, and its marker does not say how to continue.
"""

from __future__ import annotations

from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult
from mcp_types import TextContent

from ..core.echo import wire_safe
from ..core.limits import ANSWER_HARD_BYTES


def within_budget(text: str, budget: int = ANSWER_HARD_BYTES) -> str:
    """Cut an answer at a line boundary below `budget` bytes and say how much was left out."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= budget:
        return text
    head = data[: budget - 200].decode("utf-8", "ignore")
    cut = head.rfind("\n")
    head = head[:cut] if cut > 0 else head
    left = len(data) - len(head.encode("utf-8", "surrogatepass"))
    return f"{head}\n... (answer truncated: {left} more bytes; narrow the request)"


class AnswerBudgetMiddleware(Middleware):
    async def on_call_tool(self, context: MiddlewareContext, call_next):
        result = await call_next(context)
        if not isinstance(result, ToolResult) or not result.content:
            return result
        changed = False
        content = []
        for block in result.content:
            if isinstance(block, TextContent):
                text = within_budget(wire_safe(block.text))
                if text is not block.text:
                    block = TextContent(type="text", text=text)
                    changed = True
            content.append(block)
        if not changed:
            return result
        return ToolResult(
            content=content,
            structured_content=result.structured_content,
            meta=result.meta,
            is_error=result.is_error,
        )
