"""What `tools/list` puts on the wire: every byte there is paid for in the model's context.

Applied to the listing only (a call never passes here), to whatever tools the listing
holds, renamed profile tools included:
- optional arguments are advertised as their type, not `anyOf [T, null]` with
  `default: null` (an absent argument already means "not given"; the server still
  accepts an explicit null, so the same inputs validate);
- the `workspace` argument is left out while only one workspace is configured (it could
  only name that one; a call that still sends it is accepted);
- `additionalProperties: false` is not sent: the properties already list every argument,
  and a call with an unknown one gets an answer naming the valid ones (the server's
  validation is unchanged);
- FastMCP's own `_meta` (its tags, which mean nothing to a client) is not sent;
- a schema that declares its dialect (`$schema`, a tool added by a library user) is
  sent as written: its author chose every keyword.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.tools import Tool

WORKSPACE_ARG = "workspace"


def lean_schema(schema: dict[str, Any], hide: frozenset[str]) -> dict[str, Any]:
    """`schema` with null unions folded and the `hide` properties removed (a new dict).
    A schema that names its dialect (`$schema`) was written by hand: it goes out as
    written (SEP-1613), but for `hide`."""
    if "$schema" in schema:
        if not hide:
            return schema
        kept = {k: v for k, v in schema.get("properties", {}).items() if k not in hide}
        return {**schema, "properties": kept}
    out = {k: v for k, v in schema.items() if k != "additionalProperties" or v is not False}
    properties = schema.get("properties")
    if isinstance(properties, dict):
        out["properties"] = {
            name: _fold_null(prop) for name, prop in properties.items() if name not in hide
        }
        if "required" in schema:
            out["required"] = [name for name in schema["required"] if name not in hide]
    if isinstance(schema.get("$defs"), dict):
        out["$defs"] = {name: lean_schema(d, frozenset()) for name, d in schema["$defs"].items()}
    return out


def _fold_null(prop: Any) -> Any:
    if not isinstance(prop, dict):
        return prop
    options = prop.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options:
        rest = [option for option in options if option != {"type": "null"}]
        folded = {k: v for k, v in prop.items() if k != "anyOf"}
        if prop.get("default", ...) is None:
            del folded["default"]
        if len(rest) == 1 and isinstance(rest[0], dict):
            return {**rest[0], **folded}
        return {"anyOf": rest, **folded}
    if prop.get("type") == "array" and isinstance(prop.get("items"), dict):
        return {**prop, "items": lean_schema(prop["items"], frozenset())}
    if prop.get("type") == "object" and "properties" in prop:
        return lean_schema(prop, frozenset())
    return prop


class _NoFrameworkMeta:
    """Mixed in front of a tool's own class: `_meta` carries only what the tool set."""

    def get_meta(self) -> dict[str, Any] | None:
        return dict(self.meta) if self.meta else None  # type: ignore[attr-defined]


_lean_classes: dict[type, type] = {}


def _lean_class(cls: type) -> type:
    if cls not in _lean_classes:
        _lean_classes[cls] = type(f"Lean{cls.__name__}", (_NoFrameworkMeta, cls), {})
    return _lean_classes[cls]


class LeanToolListMiddleware(Middleware):
    def __init__(self, single_workspace: bool) -> None:
        self.hide = frozenset({WORKSPACE_ARG}) if single_workspace else frozenset()

    async def on_list_tools(self, context: MiddlewareContext, call_next) -> Sequence[Tool]:
        tools = await call_next(context)
        if not _renders_apps(context.fastmcp_context):
            # A tool only an MCP App calls means nothing to a client that shows no apps:
            # there the model would see it (hosts with apps hide it themselves).
            tools = [tool for tool in tools if not _app_only(tool)]
        return [self._lean(tool) for tool in tools]

    def _lean(self, tool: Tool) -> Tool:
        """A shallow copy for the listing only (a listing is rare; no cache to go stale)."""
        lean = copy.copy(tool)
        lean.__class__ = _lean_class(type(tool))
        object.__setattr__(lean, "parameters", lean_schema(tool.parameters or {}, self.hide))
        return lean


UI_EXTENSION = "io.modelcontextprotocol/ui"


def _app_only(tool: Tool) -> bool:
    ui = (tool.meta or {}).get("ui")
    return isinstance(ui, dict) and ui.get("visibility") == ["app"]


def _renders_apps(ctx: Any) -> bool:
    """Whether the client declared the MCP Apps extension (SEP-1865)."""
    try:
        caps = ctx.session.client_capabilities
    except (AttributeError, RuntimeError):
        return False
    if caps is None:
        return False
    return any(UI_EXTENSION in (group or {}) for group in (caps.extensions, caps.experimental))
