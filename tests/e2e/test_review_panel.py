"""The review panel in a real MCP Apps host (issue 33): the MCP Apps SDK's host bridge
(`AppBridge` from `@modelcontextprotocol/ext-apps`, bundled with esbuild from npm) in a
test page in headless Chromium. The host talks to the server over a real MCP
connection (the CLI over stdio, through `fastmcp.Client`): it reads the panel resource,
puts it in a sandboxed iframe, sends the tool's input and result, and forwards the
panel's tool calls. The test clicks "undo this file" and checks the disk."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from tests.e2e import npm
from tests.e2e.browser import CHROMIUM, needs_browser, sync_playwright

pytestmark = [pytest.mark.slow, needs_browser]

HOST_PACKAGES = [
    "@modelcontextprotocol/ext-apps@2.0.4",
    "@modelcontextprotocol/core@2.4.0",
    "@modelcontextprotocol/client@2.4.0",
    "zod@4.6.7",
    "esbuild@0.28.2",
]
ENTRY = """import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";
window.AppBridge = AppBridge;
window.PostMessageTransport = PostMessageTransport;
"""
HOST_PAGE = """<!doctype html><html><body>
<iframe id="panel" sandbox="allow-scripts" style="width:900px;height:600px;border:0"></iframe>
<script>%(bundle)s</script>
<script>
window.startHost = async (html, input, result) => {
  const frame = document.getElementById("panel");
  const bridge = new AppBridge(null, {name: "test-host", version: "1.0.0"},
                               {serverTools: {}, logging: {}});
  bridge.oncalltool = async (params) => JSON.parse(await window.pyCallTool(
      params.name, JSON.stringify(params.arguments || {})));
  bridge.oninitialized = async () => {
    await bridge.sendToolInput({arguments: input});
    await bridge.sendToolResult(result);
    window.hostReady = true;
  };
  const win = frame.contentWindow;  // the same WindowProxy once the panel loads
  await bridge.connect(new PostMessageTransport(win, win));
  frame.srcdoc = html;  // after connecting: the panel's ui/initialize comes at once
};
</script></body></html>"""


def host_bundle() -> str:
    bin_dir = npm.installed("ext-apps-host-2.0.4", HOST_PACKAGES, "esbuild")
    work = bin_dir.parent.parent
    (work / "entry.js").write_text(ENTRY)
    out = work / "host.js"
    if not out.exists():
        subprocess.run(
            [
                str(bin_dir / "esbuild"),
                "entry.js",
                "--bundle",
                "--format=iife",
                f"--outfile={out.name}",
            ],
            cwd=work,
            check=True,
            capture_output=True,
            timeout=120,
        )
    return out.read_text()


class Connection:
    """A real MCP client on the CLI over stdio, in a thread of its own (Playwright's
    sync API holds the test thread's event loop)."""

    def __init__(self, root: Path) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        transport = StdioTransport(sys.executable, ["-m", "agent_workspace_mcp", str(root)])
        self.client = Client(transport)
        self.run(self.client.__aenter__())

    def run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=60)

    def call(self, name: str, arguments: dict) -> dict:
        result = self.run(self.client.call_tool(name, arguments, raise_on_error=False))
        content = [{"type": "text", "text": c.text} for c in result.content]
        return {"content": content, "isError": bool(result.is_error)}

    def close(self) -> None:
        self.run(self.client.__aexit__(None, None, None))
        self.loop.call_soon_threadsafe(self.loop.stop)


def test_the_panel_shows_the_sessions_diffs_and_undoes_one_file(tmp_path: Path) -> None:
    bundle = host_bundle()
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    conn = Connection(root)
    try:
        conn.call("edit_file", {"path": "a.txt", "old_string": "alpha", "new_string": "omega"})
        conn.call(
            "write_file", {"path": "b.txt", "content": "<script>window.__planted=1</script>\n"}
        )
        result = conn.call("review_changes", {})
        assert "changed 2 files" in result["content"][0]["text"]
        tools = {t.name: t for t in conn.run(conn.client.list_tools())}
        uri = tools["review_changes"].meta["ui"]["resourceUri"]
        [panel] = conn.run(conn.client.read_resource(uri))
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1000, "height": 700})
            page.expose_function(
                "pyCallTool", lambda name, args: json.dumps(conn.call(name, json.loads(args)))
            )
            page.set_content(HOST_PAGE % {"bundle": bundle})
            page.evaluate("([h, r]) => window.startHost(h, {}, r)", [panel.text, result])
            page.wait_for_function("window.hostReady === true", timeout=10_000)
            view = page.frame_locator("#panel")
            a = view.locator(".file[data-path='a.txt']")
            a.wait_for(timeout=10_000)
            assert "-alpha" in a.inner_text() and "+omega" in a.inner_text()
            b = view.locator(".file[data-path='b.txt']")
            assert "<script>window.__planted=1</script>" in b.inner_text()  # text, not run
            page.screenshot(path=str(tmp_path / "panel.png"))
            a.locator("button[data-action=undo-file]").click()
            a.locator(".answer", has_text="Would undo").wait_for(timeout=10_000)
            assert (root / "a.txt").read_text() == "omega\n"  # a preview changes nothing
            a.locator("button[data-action=confirm]").click()
            view.locator(".file[data-path='a.txt']").wait_for(state="detached", timeout=10_000)
            assert (root / "a.txt").read_text() == "alpha\n"
            assert (root / "b.txt").exists()  # only that file
            assert view.locator(".file").count() == 1
            browser.close()
        assert (tmp_path / "panel.png").stat().st_size > 5_000
    finally:
        conn.close()
