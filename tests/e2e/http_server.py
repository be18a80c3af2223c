"""Start the real CLI with --http on a free 127.0.0.1 port, for end-to-end tests."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx2


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class RunningServer:
    proc: subprocess.Popen
    port: int
    stderr_path: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    def stderr(self) -> str:
        return self.stderr_path.read_text()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def start(
    root: Path,
    *args: str,
    env: dict | None = None,
    log_dir: Path | None = None,
    module: str = "agent_workspace_mcp",
) -> RunningServer:
    """The server as `python -m MODULE --root ROOT --http --port N ARGS` (MODULE: the
    CLI, or a test build of it such as tests.conformance.fixture_server)."""
    port = free_port()
    log_dir = log_dir or root.parent
    stderr_path = log_dir / f"server-{port}.stderr"
    handle = stderr_path.open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            module,
            "--root",
            str(root),
            "--http",
            "--port",
            str(port),
            *args,
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=handle,
        env={**os.environ, **(env or {})},
        cwd=Path(__file__).resolve().parents[2],  # where `tests` imports from
    )
    server = RunningServer(proc, port, stderr_path)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {server.stderr()}")
        try:
            if httpx2.get(f"{server.base}/health", timeout=1).status_code == 200:
                return server
        except httpx2.HTTPError:
            pass
        time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"server did not come up: {server.stderr()}")


def rpc2026(
    server: RunningServer,
    key: str,
    method: str,
    params: dict,
    *,
    extensions: dict | None = None,
    name: str | None = None,
) -> dict:
    """One 2026-07-28 (sessionless) request on a fresh connection (so `--workers`
    spreads them), `extensions` declared in its `_meta`: the decoded JSON-RPC response."""
    caps = {} if extensions is None else {"extensions": extensions}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {
            **params,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": caps,
            },
        },
    }
    headers = {
        "authorization": f"Bearer {key}",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
        "connection": "close",
    }
    shown = name if name is not None else params.get("name") or params.get("taskId")
    if shown is not None:
        headers["mcp-name"] = shown
    response = httpx2.post(server.url, json=body, headers=headers, timeout=60)
    text = response.text
    if text.startswith("event:") or "\ndata:" in text or text.startswith("data:"):
        # The stream may carry requests and notifications too: the answer is the one with our id.
        messages = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]
        answers = [m for m in messages if m.get("id") == 1 and "method" not in m]
        return answers[-1] if answers else messages[-1]
    return json.loads(text)
