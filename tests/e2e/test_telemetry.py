"""OpenTelemetry (issue 18): the standard OTEL_* variables, with the SDK installed, export
a span per tool call with its name and outcome, and never an argument or file content."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from fastmcp import Client
from fastmcp.client.transports import StdioTransport


def spans_in(text: str) -> list[dict]:
    """The console exporter's JSON objects, one after another (pretty-printed)."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while (start := text.find("{\n", at)) != -1:
        try:
            value, at = decoder.raw_decode(text, start)
        except ValueError:
            at = start + 1
            continue
        if isinstance(value, dict) and "context" in value:
            found.append(value)
    return found


async def test_otel_variables_export_tool_spans_without_contents(ws: Path, tmp_path: Path) -> None:
    log = tmp_path / "stderr.txt"
    env = {
        **os.environ,
        "OTEL_TRACES_EXPORTER": "console",
        "OTEL_SERVICE_NAME": "awm-test",
        "OTEL_BSP_SCHEDULE_DELAY": "50",
    }
    transport = StdioTransport(
        sys.executable,
        ["-m", "agent_workspace_mcp", "--root", str(ws), "--no-audit"],
        env=env,
        keep_alive=False,
        log_file=log,
    )
    async with Client(transport) as client:
        await client.call_tool("write_file", {"path": "a.txt", "content": "SECRET-CONTENT-123"})
        bad = await client.call_tool("read_file", {"path": "nope.txt"}, raise_on_error=False)
        assert bad.is_error
        # Issue 28 item 9: this error quotes the file's closest line; spans must not.
        (ws / "b.py").write_text("first\nQUOTED-FILE-LINE-456 = 1\n")
        near = await client.call_tool(
            "edit_file",
            {"path": "b.py", "oldString": "QUOTED-FILE-LINE-456 = 2", "newString": "x"},
            raise_on_error=False,
        )
        assert near.is_error and "QUOTED-FILE-LINE-456" in near.content[0].text
    text = log.read_text()
    spans = spans_in(text)
    tools = {
        (s["attributes"].get("gen_ai.tool.name"), s["attributes"].get("awm.outcome")) for s in spans
    }
    assert ("write_file", "ok") in tools and ("read_file", "error") in tools, text[-2000:]
    assert all(s["resource"]["attributes"]["service.name"] == "awm-test" for s in spans)
    assert "SECRET-CONTENT-123" not in text  # no argument, no file content in any span
    assert "QUOTED-FILE-LINE-456" not in text  # nor an error text quoting the file
    assert ("edit_file", "error") in tools
    assert (ws / "a.txt").read_text() == "SECRET-CONTENT-123"
