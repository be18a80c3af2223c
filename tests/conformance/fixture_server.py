"""The server under the official conformance suite: the real CLI, plus the suite's
fixture tools, prompts and resources (its "everything server") added only here.

`python -m tests.conformance.fixture_server [server options]` starts exactly what
`agent-workspace-mcp [server options]` starts, with the fixtures registered after the
server is built. The task fixtures (`slow_compute`) run as our jobs through the same
command path as `run_command`, so the tasks scenarios exercise the real thing.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Mapping
from typing import Annotated, Any

import anyio
import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.prompts import Message
from fastmcp.tools import Tool
from fastmcp.tools.base import ToolResult
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    AudioContent,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
)
from mcp_types.jsonrpc import MISSING_REQUIRED_CLIENT_CAPABILITY
from pydantic import BaseModel, Field

from agent_workspace_mcp import cli
from agent_workspace_mcp import server as server_module
from agent_workspace_mcp.core.exec.commands import which

# A 1x1 red PNG and a 1-sample WAV: the smallest valid media the scenarios accept.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415408"
        "d763f8cfc000000301010018dd8db00000000049454e44ae426082"
    )
).decode()
WAV = base64.b64encode(
    b"RIFF"
    + (38).to_bytes(4, "little")
    + b"WAVEfmt "
    + (16).to_bytes(4, "little")
    + bytes.fromhex("01000100401f0000803e000002001000")
    + b"data"
    + (2).to_bytes(4, "little")
    + b"\x00\x00"
).decode()

SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


def _elicit(message: str, field: str, kind: str = "string") -> dict[str, Any]:
    return {
        "method": "elicitation/create",
        "params": {
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {field: {"type": kind}},
                "required": [field],
            },
        },
    }


def _sample(text: str, tokens: int) -> dict[str, Any]:
    return {
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
            "maxTokens": tokens,
        },
    }


def _asked(requests: dict[str, Any], state: str | None = None) -> mcp_types.InputRequiredResult:
    return mcp_types.InputRequiredResult(input_requests=requests, request_state=state)


def _answer(responses: dict[str, Any] | None, key: str, field: str) -> str:
    found = (responses or {}).get(key) or {}
    content = found.get("content") if isinstance(found, dict) else None
    if isinstance(content, dict):
        return str(content.get(field, content.get("text", "")))
    return str(found)


def _client_capabilities(ctx: Context) -> dict[str, Any]:
    rc = ctx.request_context
    found = (rc.meta or {}).get(CLIENT_CAPABILITIES_META_KEY) if rc is not None else None
    return dict(found) if isinstance(found, Mapping) else {}


def add_fixtures(app: FastMCP, services) -> None:
    from agent_workspace_mcp.tools.shell import Commands

    commands = Commands(services) if services.settings.commands_enabled else None

    @app.tool
    def test_simple_text() -> str:
        """Conformance fixture test_simple_text."""
        return "This is a simple text response for testing."

    @app.tool
    def test_image_content() -> ToolResult:
        """Conformance fixture test_image_content."""
        return ToolResult(content=[ImageContent(type="image", data=PNG, mimeType="image/png")])

    @app.tool
    def test_audio_content() -> ToolResult:
        """Conformance fixture test_audio_content."""
        return ToolResult(content=[AudioContent(type="audio", data=WAV, mimeType="audio/wav")])

    @app.tool
    def test_embedded_resource() -> ToolResult:
        """Conformance fixture test_embedded_resource."""
        return ToolResult(
            content=[
                EmbeddedResource(
                    type="resource",
                    resource=TextResourceContents(
                        uri="test://embedded-resource",
                        mimeType="text/plain",
                        text="This is an embedded resource content.",
                    ),
                )
            ]
        )

    @app.tool
    def test_multiple_content_types() -> ToolResult:
        """Conformance fixture test_multiple_content_types."""
        return ToolResult(
            content=[
                TextContent(type="text", text="Multiple content types test:"),
                ImageContent(type="image", data=PNG, mimeType="image/png"),
                EmbeddedResource(
                    type="resource",
                    resource=TextResourceContents(
                        uri="test://mixed-content-resource",
                        mimeType="application/json",
                        text='{"test":"data","value":123}',
                    ),
                ),
            ]
        )

    @app.tool
    async def test_tool_with_progress(ctx: Context) -> str:
        """Conformance fixture test_tool_with_progress."""
        for step in (0, 50, 100):
            await ctx.report_progress(progress=step, total=100)
            await anyio.sleep(0.05)
        return "Progress test completed"

    @app.tool
    def test_error_handling() -> str:
        """Conformance fixture test_error_handling."""
        raise ValueError("This tool intentionally returns an error for testing")

    def json_schema_tool(name: str = "") -> str:
        return f"ok {name}"

    schema_tool = Tool.from_function(
        json_schema_tool,
        name="json_schema_2020_12_tool",
        description="Tool with JSON Schema 2020-12 features",
    )
    app.add_tool(schema_tool.model_copy(update={"parameters": SCHEMA_2020_12}))

    @app.tool
    def test_missing_capability(ctx: Context) -> str:
        """Conformance fixture: needs the client's sampling capability."""
        if "sampling" not in _client_capabilities(ctx):
            raise MCPError(
                code=MISSING_REQUIRED_CLIENT_CAPABILITY,
                message="this tool needs the sampling capability",
                data={"requiredCapabilities": {"sampling": {}}},
            )
        return "sampling declared"

    @app.tool
    def test_input_required_result_elicitation(ctx: Context):
        """Conformance fixture test_input_required_result_elicitation."""
        if not ctx.input_responses or "user_name" not in ctx.input_responses:
            return _asked({"user_name": _elicit("What is your name?", "name")})
        return f"Hello, {_answer(ctx.input_responses, 'user_name', 'name')}!"

    @app.tool
    def test_input_required_result_sampling(ctx: Context):
        """Conformance fixture test_input_required_result_sampling."""
        if not ctx.input_responses or "capital_question" not in ctx.input_responses:
            return _asked({"capital_question": _sample("What is the capital of France?", 100)})
        return f"The model said: {_answer(ctx.input_responses, 'capital_question', 'text')}"

    @app.tool
    def test_input_required_result_list_roots(ctx: Context):
        """Conformance fixture test_input_required_result_list_roots."""
        if not ctx.input_responses or "client_roots" not in ctx.input_responses:
            return _asked({"client_roots": {"method": "roots/list", "params": {}}})
        roots = (ctx.input_responses["client_roots"] or {}).get("roots", [])
        return "Roots: " + ", ".join(str(r.get("uri")) for r in roots)

    @app.tool
    def test_input_required_result_request_state(ctx: Context):
        """Conformance fixture test_input_required_result_request_state."""
        if not ctx.input_responses:
            return _asked({"confirm": _elicit("Please confirm", "ok", "boolean")}, "round-1")
        if ctx.request_state != "round-1":
            raise ValueError("requestState did not round-trip")
        return "state-ok: confirmed"

    @app.tool
    def test_input_required_result_multiple_inputs(ctx: Context):
        """Conformance fixture test_input_required_result_multiple_inputs."""
        keys = {"user_name", "greeting", "client_roots"}
        if not ctx.input_responses or not keys <= set(ctx.input_responses):
            return _asked(
                {
                    "user_name": _elicit("What is your name?", "name"),
                    "greeting": _sample("Generate a greeting", 50),
                    "client_roots": {"method": "roots/list", "params": {}},
                },
                "multi",
            )
        return "All inputs received"

    @app.tool
    def test_input_required_result_multi_round(ctx: Context):
        """Conformance fixture test_input_required_result_multi_round."""
        responses = ctx.input_responses or {}
        if "step1" not in responses and "step2" not in responses:
            return _asked({"step1": _elicit("Step 1: What is your name?", "name")}, "round-1")
        if "step1" in responses and ctx.request_state == "round-1":
            name = _answer(responses, "step1", "name")
            return _asked(
                {"step2": _elicit("Step 2: What is your favorite color?", "color")},
                f"round-2:{name}",
            )
        return f"Done: {ctx.request_state}, {_answer(responses, 'step2', 'color')}"

    @app.tool
    def test_input_required_result_tampered_state(ctx: Context):
        """Conformance fixture test_input_required_result_tampered_state."""
        if not ctx.input_responses:
            return _asked({"confirm": _elicit("Please confirm", "ok", "boolean")}, "untampered")
        return "state accepted"

    @app.tool
    def test_input_required_result_capabilities(ctx: Context):
        """Conformance fixture test_input_required_result_capabilities."""
        if ctx.input_responses:
            return "capabilities respected"
        caps = _client_capabilities(ctx)
        requests = {}
        if "elicitation" in caps:
            requests["user_name"] = _elicit("What is your name?", "name")
        if "sampling" in caps:
            requests["question"] = _sample("What is 2+2?", 10)
        if not requests:
            return "no input requests: the client declared no capabilities for them"
        return _asked(requests)

    @app.tool
    async def test_tool_with_logging(ctx: Context) -> str:
        """Conformance fixture: three info log messages (2025-11-25)."""
        for message in ("Tool execution started", "Tool processing data"):
            await ctx.info(message)
            await anyio.sleep(0.05)
        await ctx.info("Tool execution completed")
        return "Logging test completed"

    @app.tool
    async def test_sampling(prompt: str, ctx: Context) -> str:
        """Conformance fixture: asks the client's model (2025-11-25)."""
        answer = await ctx.sample(prompt, max_tokens=100)
        return f"LLM response: {answer.text}"

    class Reply(BaseModel):
        username: str = Field(description="User's response")
        email: str = Field(description="User's email address")

    @app.tool
    async def test_elicitation(message: str, ctx: Context) -> str:
        """Conformance fixture: asks the user (2025-11-25)."""
        answer = await ctx.elicit(message, Reply)
        data = getattr(answer, "data", None)
        content = data.model_dump() if isinstance(data, BaseModel) else {}
        return f"User response: action={answer.action}, content={json.dumps(content)}"

    @app.tool
    def greet(name: str) -> str:
        """Conformance fixture greet."""
        return f"Hello, {name}!"

    if commands is not None:

        @app.tool
        async def slow_compute(
            seconds: Annotated[float, Field(ge=0, le=600)] = 1, label: str = "", ctx: Context = None
        ) -> str:
            """Conformance fixture slow_compute."""
            script = 'sleep "$1"; echo "slow_compute $2 done"'
            return await _job(ctx, ["sh", "-c", script, "sh", str(seconds), label])

        @app.tool
        async def failing_job(ctx: Context = None) -> str:
            """Conformance fixture: a command that fails after a second."""
            return await _job(ctx, ["sh", "-c", "sleep 1; echo failed >&2; exit 3"])

        @app.tool
        async def protocol_error_job(ctx: Context = None) -> str:
            """Conformance fixture: a command task (ours fail only when the log is lost)."""
            return await _job(ctx, ["sh", "-c", "sleep 1; exit 70"])

        async def _job(ctx: Context | None, argv: list[str]) -> str:
            assert commands is not None
            ws = services.workspaces.get(None)
            return await commands.run(
                ctx,
                ws,
                argv,
                which("sh", commands.path_dirs),
                commands.cwd(ws, None),
                700_000,
                True,
            )

    @app.prompt
    def test_simple_prompt() -> str:
        """Conformance fixture test_simple_prompt."""
        return "This is a simple prompt for testing."

    @app.prompt
    def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
        """Conformance fixture test_prompt_with_arguments."""
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @app.prompt
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[Message]:
        """Conformance fixture test_prompt_with_embedded_resource."""
        return [
            Message(
                EmbeddedResource(
                    type="resource",
                    resource=TextResourceContents(
                        uri=resourceUri,
                        mimeType="text/plain",
                        text="Embedded resource content for testing.",
                    ),
                )
            ),
            Message("Please process the embedded resource above."),
        ]

    @app.prompt
    def test_prompt_with_image() -> list[Message]:
        """Conformance fixture test_prompt_with_image."""
        return [
            Message(ImageContent(type="image", data=PNG, mimeType="image/png")),
            Message("Please analyze the image above."),
        ]

    @app.prompt
    def test_input_required_result_prompt(ctx: Context):
        """Conformance fixture test_input_required_result_prompt."""
        if not ctx.input_responses:
            return _asked(
                {"user_context": _elicit("What context should the prompt use?", "context")}
            )
        return f"Prompt with context: {_answer(ctx.input_responses, 'user_context', 'context')}"

    @app.resource("test://static-text", mime_type="text/plain")
    def static_text() -> str:
        """Conformance fixture static_text."""
        return "This is the content of the static text resource."

    @app.resource("test://static-binary", mime_type="image/png")
    def static_binary() -> bytes:
        """Conformance fixture static_binary."""
        return base64.b64decode(PNG)

    @app.resource("test://template/{id}/data", mime_type="application/json")
    def template(id: str) -> str:
        """Conformance fixture template."""
        return json.dumps(
            {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}, separators=(",", ":")
        )


def main(argv: list[str]) -> int:
    original = server_module.build

    def build(settings):
        app, services = original(settings)
        add_fixtures(app, services)
        return app, services

    server_module.build = build
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
