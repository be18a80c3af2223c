"""The container image, really built and run (issue 18), where podman is available.

No registry but the package registries is reachable, so the base image is made here:
debootstrap of Debian bookworm (python3, venv, CA certificates), `podman import`, passed
as the BASE build argument. The image is then built (pip reaches PyPI with the host's CA
bundle as a build secret), started read-only, as uid 10001, with every capability
dropped and no-new-privileges, and driven by a real MCP client over HTTP with a token:
initialize, write, read back, /health. .ci/run installs podman and debootstrap.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import httpx2
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from tests.e2e.http_server import free_port
from tests.e2e.podman import (
    BASE,
    PODMAN,
    PODMAN_MISSING,
    REPO,
    ULIMITS,
    build,
    ca_bundle,
    ensure_base,
    run,
)
from tests.helpers import requires

IMAGE = "localhost/agent-workspace-mcp:test"
TOKEN = "tok-container-0123456789"

pytestmark = requires(PODMAN_MISSING)


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> str:
    ensure_base(tmp_path_factory.mktemp("base"))
    build(
        IMAGE,
        REPO,
        "--format",
        "docker",
        "--network",
        "host",
        "--build-arg",
        f"BASE={BASE}",
        "--secret",
        f"id=ca_bundle,src={ca_bundle()}",
        timeout=1800,
    )
    return IMAGE


async def test_the_image_serves_read_only_unprivileged_over_http(
    image: str, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.chown(workspace, 10001, 10001)
    port = free_port()
    name = f"awm-test-{port}"
    run(
        [
            *PODMAN,
            "run",
            "-d",
            "--name",
            name,
            *ULIMITS,
            "--read-only",
            "--tmpfs",
            "/tmp",
            "--user",
            "10001:10001",
            "--cap-drop",
            "ALL",
            "--security-opt",
            "no-new-privileges",
            "-p",
            f"127.0.0.1:{port}:3333",
            "-v",
            f"{workspace}:/workspace",
            "-e",
            f"MCP_TOKEN={TOKEN}",
            image,
        ],
        timeout=120,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx2.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            assert time.monotonic() < deadline, run([*PODMAN, "logs", name], timeout=30).stderr
            time.sleep(0.5)
        assert httpx2.post(f"{base}/mcp", json={}).status_code == 401  # a token is required
        transport = StreamableHttpTransport(f"{base}/mcp")
        async with Client(transport, auth=TOKEN) as client:
            await client.call_tool(
                "write_file", {"path": "hello.txt", "content": "from a client\n"}
            )
            answer = await client.call_tool("read_file", {"path": "hello.txt"})
            assert answer.content[0].text.startswith("1: from a client")
        assert (workspace / "hello.txt").read_text() == "from a client\n"
        assert (workspace / "hello.txt").stat().st_uid == 10001  # written as the image's user
        assert httpx2.get(f"{base}/ready", timeout=5).json() == {"status": "ready"}
        inspect = run(
            [*PODMAN, "inspect", "--format", "{{.HostConfig.ReadonlyRootfs}}", name], timeout=30
        )
        assert inspect.stdout.strip() == "true"
        health = run(
            [*PODMAN, "image", "inspect", "--format", "{{.Config.Healthcheck}}", image], timeout=30
        )
        assert "/health" in health.stdout
    finally:
        subprocess.run([*PODMAN, "rm", "-f", "-t", "5", name], capture_output=True, timeout=60)
