"""Tool input schemas computed ahead of time, so start-up does not build them.

FastMCP's `Tool.from_function` builds a pydantic validator and a JSON schema for every
tool at registration (~1 ms each, a third of what our start-up added to a bare FastMCP
server's; issue 15). Neither is needed then: the validator is built again, from the
same function, on the tool's first call (FastMCP's `FunctionTool.run`), and the schema
only when a client lists the tools. So the schemas ship in `schemas.json`, generated
from the tool functions by FastMCP itself, each under the function's name and a digest
of its signature; registration reads them. A tool whose signature changed (or whose
signature depends on settings) misses and is built the usual way, correctly, only
slower; a test fails while the file is stale.

Every `$ref` is inlined here, once, as FastMCP's `dereference_schemas` would do on
every tools/list (for clients that cannot resolve one, e.g. VS Code Copilot): the
server turns that off (server.py), since walking and rewriting the schemas on each
list was a third of answering it.

Regenerate after changing a tool's arguments (schemagen.py):
    python -m agent_workspace_mcp.schemagen --write
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import json
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastmcp.tools.function_tool import FunctionTool
from fastmcp.utilities.json_schema import dereference_refs
from fastmcp.utilities.tasks import TaskConfig
from mcp_types import ToolAnnotations

TABLE = Path(__file__).with_name("schemas.json")

_table: dict[str, list[Any]] | None = None
# While the table is being generated: every schema built the usual way lands here.
_recording: dict[str, list[Any]] | None = None


@contextmanager
def recording() -> Iterator[dict[str, list[Any]]]:
    """Every tool registered meanwhile is built by FastMCP and its table entry kept."""
    global _recording
    _recording = {}
    try:
        yield _recording
    finally:
        _recording = None


def _key(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


# By the tool function a wrapper stands for (tools.base.bind): the shared signature object
# and its digest. Formatting a signature is most of a cached tool's registration (~0.1
# ms), and the same object means the same text.
_digests: weakref.WeakKeyDictionary[Callable[..., Any], tuple[inspect.Signature, str]] = (
    weakref.WeakKeyDictionary()
)


def _digest(fn: Callable[..., Any]) -> str:
    signature = inspect.signature(fn)
    origin = getattr(fn, "__wrapped__", None)
    if not inspect.isfunction(origin):  # only plain functions are weakly referable keys
        origin = None
    kept = _digests.get(origin) if origin is not None else None
    if kept is not None and kept[0] is signature:
        return kept[1]
    # The signature's text holds every argument's type, default, description and
    # constraint; what it cannot show (a model's fields) the staleness test covers.
    digest = hashlib.sha256(str(signature).encode()).hexdigest()[:16]
    if origin is not None:
        _digests[origin] = (signature, digest)
    return digest


def _cached(fn: Callable[..., Any]) -> list[Any] | None:
    global _table
    if _recording is not None:
        return None
    if _table is None:
        try:
            _table = json.loads(TABLE.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            _table = {}  # a broken install only loses the speed-up
    entry = _table.get(_key(fn))
    if entry is None or entry[0] != _digest(fn):
        return None
    return entry


def function_tool(
    fn: Callable[..., Any],
    *,
    title: str | None,
    description: str | None,
    annotations: ToolAnnotations,
    tags: set[str],
) -> FunctionTool:
    """What `FunctionTool.from_function(fn, ..., output_schema=None)` returns, without
    building the schema when the table has it."""
    entry = _cached(fn)
    if entry is None:
        digest = _digest(fn)  # before FastMCP rewrites a Context parameter's signature
        tool = FunctionTool.from_function(
            fn,
            title=title,
            description=description,
            annotations=annotations,
            tags=tags,
            output_schema=None,
        )
        tool.parameters = inlined(tool.parameters)
        if _recording is not None:
            injects = _digest(fn) != digest
            _recording[_key(fn)] = [digest, tool.parameters, injects]
        return tool
    _, parameters, injects = entry
    if injects:
        # A `ctx: Context` parameter becomes a dependency FastMCP fills in at call time.
        from fastmcp.server.dependencies import transform_context_annotations

        fn = transform_context_annotations(fn)
    return FunctionTool(
        fn=fn,
        name=fn.__name__,
        title=title,
        description=description,
        # Each tool owns its schema: listing transforms may edit it.
        parameters=copy.deepcopy(parameters),
        output_schema=None,
        annotations=annotations,
        tags=tags,
        task_config=TaskConfig(mode="forbidden"),
    )


def inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with every local `$ref` replaced by its definition, by the function
    FastMCP's own dereferencing uses (so clients see what they saw before)."""
    if "$defs" in schema or '"$ref"' in json.dumps(schema):
        return dereference_refs(schema)
    return schema


def table_names() -> set[str]:
    """Every tool function the table knows (any profile, any flags): for telling a
    mistyped --tools name from a tool that is merely not served. Read on that path only."""
    try:
        table = json.loads(TABLE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    return {key.rsplit(".", 1)[-1] for key in table}
