"""Repair the two argument mistakes real clients make, before validation sees them.

1. An array or object sent as a JSON string (`"[\\"a\\",\\"b\\"]"`): several clients
   serialize nested arguments once too often. If the schema wants an array/object and
   the string parses to one, the parsed value is used.
2. snake_case spellings of our camelCase arguments (`old_string` for `oldString`),
   which Claude-Code-style agents send. Only the camelCase name is advertised; an
   unknown snake_case key whose camelCase form is a known, absent property is renamed.

Both rules only ever turn an invalid call into a valid one: they run only after
validation refused a call, and the call is retried once with the repaired arguments.
"""

import json
from typing import Any

from fastmcp.exceptions import ToolError, ValidationError
from fastmcp.server.middleware import Middleware, MiddlewareContext

from .errors import transform_argument_error


def snake_to_camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return defs.get(ref[len("#/$defs/") :], {})
    return schema


def _variants(schema: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    schema = _resolve(schema, defs)
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return [_resolve(option, defs) for option in options]
    return [schema]


def repair(value: Any, schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    for variant in _variants(schema, defs):
        kind = variant.get("type")
        if kind == "array":
            candidate = _maybe_json(value, list)
            if isinstance(candidate, list):
                items = variant.get("items", {})
                return [repair(item, items, defs) for item in candidate]
        elif kind == "object" or "properties" in variant:
            candidate = _maybe_json(value, dict)
            if isinstance(candidate, dict):
                return _repair_object(candidate, variant, defs)
    return value


def _maybe_json(value: Any, wanted: type) -> Any:
    if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return parsed if isinstance(parsed, wanted) else value
    return value


def _repair_object(
    value: dict[str, Any], schema: dict[str, Any], defs: dict[str, Any]
) -> dict[str, Any]:
    properties: dict[str, Any] = schema.get("properties", {})
    if not properties:
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = key
        if key not in properties and "_" in key:
            camel = snake_to_camel(key)
            if camel in properties and camel not in value:
                name = camel
        out[name] = repair(item, properties[name], defs) if name in properties else item
    return out


class ArgumentRepairMiddleware(Middleware):
    """Repairs only calls that failed validation, then retries once: a valid call pays
    nothing (no second tool lookup) and is never touched."""

    async def on_call_tool(self, context: MiddlewareContext, call_next):
        try:
            return await call_next(context)
        except (ValidationError, ToolError) as exc:
            # A renamed (transformed) tool refuses an unknown name with a TypeError.
            if isinstance(exc, ToolError) and transform_argument_error(exc) is None:
                raise
            fixed = await self._repaired(context)
            if fixed is None:
                raise
        message = context.message.model_copy(update={"arguments": fixed})
        return await call_next(context.copy(message=message))

    @staticmethod
    async def _repaired(context: MiddlewareContext) -> dict[str, Any] | None:
        """The repaired arguments, or None when repair changes nothing."""
        arguments = context.message.arguments
        ctx = context.fastmcp_context
        if not arguments or ctx is None:
            return None
        tool = await ctx.fastmcp.get_tool(context.message.name)
        if tool is None:
            return None
        schema = tool.parameters or {}
        fixed = _repair_object(arguments, schema, schema.get("$defs", {}))
        return fixed if fixed != arguments else None
