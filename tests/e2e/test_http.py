"""The real CLI over Streamable HTTP on 127.0.0.1: auth, Origin/Host, sessions, subpaths."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from tests.e2e.http_server import RunningServer, start
from tests.helpers import INIT

MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def client(
    server: RunningServer, token: str | None, mode: str = "auto", headers: dict | None = None
) -> Client:
    return Client(StreamableHttpTransport(server.url, headers=headers), auth=token, mode=mode)


@pytest.fixture(scope="module")
def keyed(tmp_path_factory) -> RunningServer:
    root = tmp_path_factory.mktemp("http") / "ws"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "top.txt").write_text("top level\n")
    (root / "sub" / "inner.txt").write_text("inside sub\n")
    audit = root.parent / "audit.jsonl"
    server = start(
        root,
        "--api-key",
        "alice=tok-alice-0123456789",
        "--api-key",
        "bob=tok-bob-0123456789",
        "--token",
        "tok-static-0123456789",
        "--cors-origin",
        "https://app.example",
        "--shell",
        "--shell-allow",
        "sleep",
        "--allow-remote-exec",
        "--audit-log",
        str(audit),
    )
    server.root = root  # type: ignore[attr-defined]
    server.audit = audit  # type: ignore[attr-defined]
    yield server
    server.stop()


def test_the_start_up_line_comes_once_the_port_is_bound(keyed: RunningServer, tmp_path) -> None:
    line = next(x for x in keyed.stderr().splitlines() if x.startswith("agent-workspace-mcp: v"))
    assert line.endswith(f"serving http://127.0.0.1:{keyed.port}/mcp")
    assert " tools (+2 for hosts with MCP Apps), " in line  # the count tools/list serves
    # At the default log level the framework's INFO lines stay quiet too.
    assert " INFO " not in keyed.stderr() and "INFO:" not in keyed.stderr(), keyed.stderr()
    # The same port again: one error, no false "serving" line, a non-zero exit.
    busy = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent_workspace_mcp",
            "--root",
            str(tmp_path),
            "--http",
            "--port",
            str(keyed.port),
            "--token",
            "tok-0123456789abcdef",
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert busy.returncode != 0 and "serving" not in busy.stderr


def test_health_needs_no_auth_and_reveals_nothing(keyed: RunningServer) -> None:
    answer = httpx2.get(f"{keyed.base}/health")
    assert answer.status_code == 200
    body = answer.json()
    assert body["status"] == "ok" and set(body) == {"status", "server", "version"}
    assert str(keyed.root) not in answer.text  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("headers", "params"),
    [
        ({}, {}),
        ({"authorization": "Bearer wrong"}, {}),
        ({"authorization": "Basic dG9rLWFsaWNlLTAxMjM0NTY3ODk="}, {}),
        ({}, {"access_token": "tok-alice-0123456789"}),
        ({}, {"token": "tok-alice-0123456789"}),
    ],
)
def test_missing_bad_or_query_string_tokens_get_401(
    keyed: RunningServer, headers: dict, params: dict
) -> None:
    answer = httpx2.post(keyed.url, json=INIT, headers={**MCP_HEADERS, **headers}, params=params)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"].startswith("Bearer")
    # The body says what is missing, in one short JSON sentence.
    auth = headers.get("authorization", "")
    expected = (
        "invalid_token"
        if auth.startswith("Bearer")
        else "the Authorization header must be 'Bearer TOKEN'"
        if auth
        else "missing credentials: send Authorization"
    )
    assert answer.json()["error"].startswith(expected), answer.text
    if expected == "invalid_token":  # issue 29: what to do, not FastMCP's OAuth advice
        said = answer.json()["error_description"]
        assert said.startswith("the bearer token was not accepted") and "--token" in said
        assert "re-register" not in said + answer.headers["www-authenticate"]


async def test_api_keys_static_token_and_x_api_key_identify_subjects(keyed: RunningServer) -> None:
    async with client(keyed, "tok-alice-0123456789") as c:
        assert (
            (await c.call_tool("read_file", {"path": "top.txt"}))
            .content[0]
            .text.startswith("1: top level")
        )
    async with client(keyed, "tok-static-0123456789") as c:
        await c.call_tool("workspace_list", {})
    async with client(keyed, None, headers={"x-api-key": "tok-bob-0123456789"}) as c:
        await c.call_tool("workspace_list", {})
    subjects = [json.loads(line).get("subject") for line in keyed.audit.read_text().splitlines()]  # type: ignore[attr-defined]
    assert {"alice", "token", "bob"} <= set(subjects)
    assert "tok-" not in keyed.audit.read_text()  # type: ignore[attr-defined]
    assert "tok-alice" not in keyed.stderr()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_both_protocol_revisions_work(keyed: RunningServer, mode: str) -> None:
    async with client(keyed, "tok-alice-0123456789", mode=mode) as c:
        tools = {t.name for t in await c.list_tools()}
        assert {"read_file", "run_command"} <= tools
        result = await c.call_tool("grep", {"pattern": "inside"})
        assert result.content[0].text.startswith("sub/inner.txt:1: inside sub")


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"origin": "https://evil.example"}, 403),
        ({"origin": "http://127.0.0.1.evil.example"}, 403),
        ({"host": "evil.example"}, 403),
        ({"host": "127.0.0.1.evil.example:80"}, 403),
    ],
)
def test_origin_and_host_checks(keyed: RunningServer, headers: dict, status: int) -> None:
    auth = {"authorization": "Bearer tok-alice-0123456789"}
    answer = httpx2.post(keyed.url, json=INIT, headers={**MCP_HEADERS, **auth, **headers})
    assert answer.status_code == status


def test_allowed_origins_and_cors(keyed: RunningServer) -> None:
    auth = {"authorization": "Bearer tok-alice-0123456789"}
    same = httpx2.post(keyed.url, json=INIT, headers={**MCP_HEADERS, **auth, "origin": keyed.base})
    assert same.status_code == 200
    listed = httpx2.post(
        keyed.url, json=INIT, headers={**MCP_HEADERS, **auth, "origin": "https://app.example"}
    )
    assert (
        listed.status_code == 200
        and listed.headers["access-control-allow-origin"] == "https://app.example"
    )
    preflight = httpx2.options(
        keyed.url,
        headers={
            "origin": "https://app.example",
            "access-control-request-method": "POST",
            "access-control-request-headers": "authorization,content-type,mcp-session-id",
        },
    )
    assert preflight.status_code == 200
    assert "POST" in preflight.headers["access-control-allow-methods"]
    denied = httpx2.options(
        keyed.url,
        headers={"origin": "https://evil.example", "access-control-request-method": "POST"},
    )
    assert denied.status_code == 403 and "access-control-allow-origin" not in denied.headers


def open_session(server: RunningServer, token: str, **headers: str) -> httpx2.Response:
    return httpx2.post(
        server.url,
        json=INIT,
        headers={**MCP_HEADERS, "authorization": f"Bearer {token}", **headers},
    )


def test_sessions_are_bound_to_their_subject_and_can_be_ended(keyed: RunningServer) -> None:
    opened = open_session(keyed, "tok-alice-0123456789")
    session = opened.headers["mcp-session-id"]
    ping = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    as_alice = {
        **MCP_HEADERS,
        "authorization": "Bearer tok-alice-0123456789",
        "mcp-session-id": session,
        "mcp-protocol-version": "2025-11-25",
    }
    httpx2.post(
        keyed.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=as_alice
    )
    assert httpx2.post(keyed.url, json=ping, headers=as_alice).status_code == 200
    as_bob = {**as_alice, "authorization": "Bearer tok-bob-0123456789"}
    hijack = httpx2.post(keyed.url, json=ping, headers=as_bob)
    assert hijack.status_code == 404
    assert httpx2.delete(keyed.url, headers=as_bob).status_code == 404
    assert httpx2.delete(keyed.url, headers=as_alice).status_code in (200, 204)
    assert httpx2.post(keyed.url, json=ping, headers=as_alice).status_code == 404
    forged = {**as_alice, "mcp-session-id": "0123456789abcdef0123456789abcdef"}
    assert httpx2.post(keyed.url, json=ping, headers=forged).status_code == 404


async def test_subpath_confines_the_session(keyed: RunningServer) -> None:
    token = "tok-alice-0123456789"
    async with client(keyed, token, mode="legacy", headers={"x-workspace-subpath": "sub"}) as c:
        listing = (await c.call_tool("list_files", {})).content[0].text
        # Paths are relative to the subpath; directories are entries (empty ones too).
        assert listing == "deeper/\ninner.txt"
        assert (
            (await c.call_tool("read_file", {"path": "inner.txt"}))
            .content[0]
            .text.startswith("1: inside sub")
        )
        escape = await c.call_tool("read_file", {"path": "../top.txt"}, raise_on_error=False)
        assert (
            escape.is_error and escape.content[0].text == "path outside workspace root: ../top.txt"
        )
        # The confined session sees only its own root, not the workspace's, and over
        # HTTP no host path at all.
        listing = (await c.call_tool("workspace_list", {})).content[0].text
        assert listing.splitlines() == ["default  sub  (primary)  state: none"]
        assert (await c.read_resource("resource://cwd"))[0].text == "sub"
    for bad in ("../..", "missing", "top.txt"):
        answer = open_session(keyed, token, **{"x-workspace-subpath": bad})
        assert answer.status_code == 400, bad
    opened = open_session(keyed, token, **{"x-workspace-subpath": "sub"})
    session = opened.headers["mcp-session-id"]
    changed = httpx2.post(
        keyed.url,
        json={"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}},
        headers={
            **MCP_HEADERS,
            "authorization": f"Bearer {token}",
            "mcp-session-id": session,
            "mcp-protocol-version": "2025-11-25",
            "x-workspace-subpath": "sub/deeper",
        },
    )
    assert changed.status_code == 400 and "fixed when the session opens" in changed.text


async def test_sessionless_requests_apply_the_subpath_per_request(keyed: RunningServer) -> None:
    async with client(keyed, "tok-alice-0123456789", headers={"x-workspace-subpath": "sub"}) as c:
        text = (await c.call_tool("read_file", {"path": "inner.txt"})).content[0].text
        assert text.startswith("1: inside sub")


@pytest.fixture
def swap_target(keyed: RunningServer, tmp_path: Path) -> tuple[Path, Path]:
    """`root/swap` (a real directory) and an outside directory to swap it for."""
    root = keyed.root  # type: ignore[attr-defined]
    swap = root / "swap"
    swap.mkdir()
    (swap / "inner.txt").write_text("inside swap\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret\n")
    yield swap, outside
    if swap.is_symlink():
        swap.unlink()
    shutil.rmtree(root / "swap-real", ignore_errors=True)
    shutil.rmtree(swap, ignore_errors=True)


def session_call(server: RunningServer, token: str, session: str, tool: str, arguments: dict):
    """One tools/call on an open session, as a client sends it after `initialize`: with the
    session id and without repeating x-workspace-subpath. Returns (is_error, text)."""
    headers = {
        **MCP_HEADERS,
        "authorization": f"Bearer {token}",
        "mcp-session-id": session,
        "mcp-protocol-version": "2025-11-25",
    }
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    answer = httpx2.post(server.url, json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    data = next(line[5:] for line in answer.text.splitlines() if line.startswith("data:"))
    result = json.loads(data)["result"]
    return result.get("isError", False), result["content"][0]["text"]


def initialized_session(server: RunningServer, token: str, subpath: str) -> str:
    """A session confined to `subpath`, opened and initialized as a client does."""
    session = open_session(server, token, **{"x-workspace-subpath": subpath}).headers[
        "mcp-session-id"
    ]
    headers = {
        **MCP_HEADERS,
        "authorization": f"Bearer {token}",
        "mcp-session-id": session,
        "mcp-protocol-version": "2025-11-25",
    }
    httpx2.post(
        server.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
    )
    return session


def test_subpath_session_refuses_a_directory_replaced_by_another_real_one(
    keyed: RunningServer, swap_target: tuple[Path, Path]
) -> None:
    """Issue 30: the session's directory is moved away and another real directory (not
    a link) takes its name; the session pinned the first one, so it must refuse, not
    serve the newcomer (removing the identity check failed no test before)."""
    swap, _ = swap_target
    token = "tok-alice-0123456789"
    session = initialized_session(keyed, token, "swap")
    assert not session_call(keyed, token, session, "read_file", {"path": "inner.txt"})[0]
    swap.rename(swap.parent / "swap-real")
    swap.mkdir()
    (swap / "inner.txt").write_text("an impostor\n")
    for tool, arguments in [
        ("read_file", {"path": "inner.txt"}),
        ("list_files", {}),
        ("write_file", {"path": "new.txt", "content": "x"}),
    ]:
        is_error, text = session_call(keyed, token, session, tool, arguments)
        assert is_error and "moved or replaced" in text and "impostor" not in text, (tool, text)
    assert sorted(p.name for p in swap.iterdir()) == ["inner.txt"]


def test_subpath_session_is_not_moved_by_a_swapped_directory(
    keyed: RunningServer, swap_target: tuple[Path, Path]
) -> None:
    """Another process replaces the session's directory with a symlink to the outside."""
    swap, outside = swap_target
    token = "tok-alice-0123456789"
    session = initialized_session(keyed, token, "swap")
    is_error, text = session_call(keyed, token, session, "read_file", {"path": "inner.txt"})
    assert not is_error and text.startswith("1: inside swap")
    swap.rename(swap.parent / "swap-real")
    swap.symlink_to(outside, target_is_directory=True)
    calls = [
        ("read_file", {"path": "secret.txt"}),
        ("write_file", {"path": "planted.txt", "content": "x"}),
        ("grep", {"pattern": "secret"}),
        ("list_files", {}),
        ("file_info", {"path": "secret.txt"}),
        ("remember", {"text": "note"}),
    ]
    for tool, arguments in calls:
        is_error, text = session_call(keyed, token, session, tool, arguments)
        assert is_error, (tool, text)
        assert "top secret" not in text and "moved or replaced" in text, (tool, text)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    # A new session naming the link is refused: it leads outside.
    assert open_session(keyed, token, **{"x-workspace-subpath": "swap"}).status_code == 400


async def test_subpath_session_sees_only_its_folder_in_git(keyed: RunningServer) -> None:
    root = keyed.root  # type: ignore[attr-defined]
    proj = root / "proj"
    (proj / "mine").mkdir(parents=True)
    (proj / "sibling").mkdir()
    (proj / "mine" / "a.txt").write_text("a\n")
    (proj / "sibling" / "b.txt").write_text("sibling v1\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME="T",
        GIT_AUTHOR_EMAIL="t@x.invalid",
        GIT_COMMITTER_NAME="T",
        GIT_COMMITTER_EMAIL="t@x.invalid",
    )
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "c"]):
        subprocess.run(["git", "-C", str(proj), *args], check=True, env=env, capture_output=True)
    (proj / "sibling" / "b.txt").write_text("SIBLING-SECRET\n")
    (proj / "mine" / "a.txt").write_text("a changed\n")
    try:
        headers = {"x-workspace-subpath": "proj/mine"}
        async with client(keyed, "tok-alice-0123456789", headers=headers) as c:
            status = (await c.call_tool("git_status", {})).content[0].text
            assert status == "branch: main\n M a.txt"
            diff = (await c.call_tool("git_diff", {})).content[0].text
            assert "SIBLING" not in diff and "sibling" not in diff and "+a changed" in diff
    finally:
        shutil.rmtree(proj)


def test_credentials_are_checked_before_the_session(keyed: RunningServer) -> None:
    """A valid session id without credentials is a 401 (with a challenge), not a 404."""
    opened = open_session(keyed, "tok-alice-0123456789")
    session = opened.headers["mcp-session-id"]
    ping = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    headers = {**MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    answer = httpx2.post(keyed.url, json=ping, headers=headers)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"].startswith("Bearer")


async def test_answers_over_http_show_no_host_path(keyed: RunningServer) -> None:
    root = str(keyed.root)  # type: ignore[attr-defined]
    async with client(keyed, "tok-alice-0123456789") as c:
        listing = (await c.call_tool("workspace_list", {})).content[0].text
        assert listing.startswith("default  .  (primary)") and root not in listing
        assert (await c.read_resource("resource://cwd"))[0].text == "."
        started = (await c.call_tool("start_job", {"command": ["sleep", "5"]})).content[0].text
        job_id = started.split()[2]
        assert "/" not in started.split(" at ")[0] and "log:" not in started, started
        status = (await c.call_tool("job_status", {"jobId": job_id})).content[0].text
        assert root not in status and "/tmp" not in status
        await c.call_tool("job_kill", {"jobId": job_id})


async def test_jobs_belong_to_the_subject_that_started_them(keyed: RunningServer) -> None:
    async with client(keyed, "tok-alice-0123456789") as alice:
        started = (await alice.call_tool("start_job", {"command": ["sleep", "30"]})).content[0].text
        job_id = started.split()[2]
        assert "running" in (await alice.call_tool("job_status", {"jobId": job_id})).content[0].text
    async with client(keyed, "tok-bob-0123456789") as bob:
        stolen = await bob.call_tool("job_status", {"jobId": job_id}, raise_on_error=False)
        assert stolen.is_error and stolen.content[0].text.startswith(f"unknown job: {job_id}")
        killed = await bob.call_tool("job_kill", {"jobId": job_id}, raise_on_error=False)
        assert killed.is_error
        assert (await bob.call_tool("job_status", {})).content[0].text == "no jobs yet"
    async with client(keyed, "tok-alice-0123456789") as alice:
        assert "killed" in (await alice.call_tool("job_kill", {"jobId": job_id})).content[0].text


# --- JWT --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rsa_keys(tmp_path_factory):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    path = tmp_path_factory.mktemp("keys") / "public.pem"
    path.write_bytes(pem)
    return key, pem, path


@pytest.fixture(scope="module")
def jwt_server(tmp_path_factory, rsa_keys) -> RunningServer:
    _, _, public = rsa_keys
    root = tmp_path_factory.mktemp("jwt") / "ws"
    root.mkdir()
    server = start(
        root,
        "--jwt-public-key",
        str(public),
        "--jwt-issuer",
        "https://issuer.example",
        "--jwt-audience",
        "agent-workspace",
    )
    yield server
    server.stop()


def make_token(key, **overrides) -> str:
    now = int(time.time())
    claims = {
        "sub": "carol",
        "iss": "https://issuer.example",
        "aud": "agent-workspace",
        "iat": now,
        "exp": now + 300,
    }
    claims.update(overrides)
    return jwt.encode({k: v for k, v in claims.items() if v is not None}, key, algorithm="RS256")


async def test_jwt_valid_token(jwt_server: RunningServer, rsa_keys) -> None:
    key, _, _ = rsa_keys
    async with client(jwt_server, make_token(key)) as c:
        assert (await c.call_tool("workspace_list", {})).content[0].text.startswith("default")


def forged_tokens(key, pem: bytes) -> dict[str, str]:
    now = int(time.time())
    claims = {
        "sub": "mallory",
        "iss": "https://issuer.example",
        "aud": "agent-workspace",
        "exp": now + 300,
    }
    import base64

    def b64(data: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    import hashlib
    import hmac as hmac_mod

    head = b64({"alg": "HS256", "typ": "JWT"})
    body = b64(claims)
    signature = hmac_mod.new(pem, f"{head}.{body}".encode(), hashlib.sha256).digest()
    hs_with_public_key = (
        f"{head}.{body}." + base64.urlsafe_b64encode(signature).rstrip(b"=").decode()
    )
    return {
        "expired": make_token(key, exp=now - 3600, iat=now - 7200),
        "wrong audience": make_token(key, aud="someone-else"),
        "wrong issuer": make_token(key, iss="https://evil.example"),
        "no exp": make_token(key, exp=None),
        "not yet valid": make_token(key, nbf=now + 3600),
        "alg none": f"{b64({'alg': 'none', 'typ': 'JWT'})}.{b64(claims)}.",
        "HS256 signed with the public key": hs_with_public_key,
        "other key": make_token(rsa.generate_private_key(public_exponent=65537, key_size=2048)),
    }


def test_jwt_refusals(jwt_server: RunningServer, rsa_keys) -> None:
    key, pem, _ = rsa_keys
    for label, token in forged_tokens(key, pem).items():
        answer = httpx2.post(
            jwt_server.url, json=INIT, headers={**MCP_HEADERS, "authorization": f"Bearer {token}"}
        )
        assert answer.status_code == 401, label
        assert answer.headers["www-authenticate"].startswith("Bearer"), label


def test_jwt_needs_an_audience(tmp_path: Path, rsa_keys) -> None:
    _, _, public = rsa_keys
    out = run_cli(tmp_path, "--http", "--jwt-public-key", str(public))
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "agent-workspace-mcp: error: JWT auth needs --jwt-audience (tokens must be issued for this server)"
    )


# --- modes ------------------------------------------------------------------------------


def run_cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agent_workspace_mcp", "--root", str(root), *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_no_auth_on_a_public_address_is_refused(tmp_path: Path) -> None:
    out = run_cli(tmp_path, "--http", "--host", "0.0.0.0", "--no-auth")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1] == (
        "agent-workspace-mcp: error: refusing to serve 0.0.0.0 without auth; use --token, --api-key or JWT "
        "(or bind 127.0.0.1)"
    )


async def test_stateless_mode_and_no_auth_warning(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "f.txt").write_text("stateless\n")
    server = start(root, "--stateless", "--no-auth")
    try:
        assert "WARNING: --no-auth" in server.stderr()
        opened = httpx2.post(server.url, json=INIT, headers=MCP_HEADERS)
        assert opened.status_code == 200 and "mcp-session-id" not in opened.headers
        assert httpx2.get(server.url, headers=MCP_HEADERS).status_code == 405
        for mode in ("auto", "legacy"):
            async with client(server, None, mode=mode) as c:
                assert (
                    (await c.call_tool("read_file", {"path": "f.txt"}))
                    .content[0]
                    .text.startswith("1: stateless")
                )
    finally:
        server.stop()


async def test_sigterm_runs_cleanup_and_kills_jobs(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    server = start(root, "--no-auth", "--shell-any", "--allow-remote-exec", "--sandbox", "none")
    try:
        async with client(server, None) as c:
            await c.call_tool(
                "start_job", {"command": ["sh", "-c", "echo $$ > job.pid; exec sleep 1000"]}
            )
        deadline = time.monotonic() + 10
        while not (root / "job.pid").exists() or not (root / "job.pid").read_text().strip():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        pid = int((root / "job.pid").read_text())
    finally:
        code = server.stop()
    assert "stopped, cleanup done" in server.stderr()
    assert code == 0  # a clean stop is a clean exit, not -15
    with pytest.raises(ProcessLookupError):
        for _ in range(100):
            os.kill(pid, 0)
            time.sleep(0.05)


async def test_protected_resource_metadata_points_to_the_auth_server(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    server = start(
        root,
        "--jwt-secret",
        "s" * 40,
        "--jwt-audience",
        "ws",
        "--auth-server",
        "https://auth.example",
    )
    try:
        answer = httpx2.post(server.url, json=INIT, headers=MCP_HEADERS)
        assert answer.status_code == 401
        challenge = answer.headers["www-authenticate"]
        assert challenge.startswith("Bearer") and "resource_metadata=" in challenge
        metadata_url = challenge.split('resource_metadata="')[1].split('"')[0]
        metadata = httpx2.get(metadata_url).json()
        bare = httpx2.get(f"{server.base}/.well-known/oauth-protected-resource").json()
        assert bare["resource"] == metadata["resource"] == f"{server.base}/mcp"
        assert [s.rstrip("/") for s in bare["authorization_servers"]] == ["https://auth.example"]
        assert [s.rstrip("/") for s in metadata["authorization_servers"]] == [
            "https://auth.example"
        ]
    finally:
        server.stop()


def _samples(text: str) -> dict[tuple, float]:
    from prometheus_client.parser import text_string_to_metric_families

    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def test_metrics_take_the_same_credentials_and_count_calls(keyed: RunningServer) -> None:
    url = f"{keyed.base}/metrics"
    assert httpx2.get(url).status_code == 401
    assert httpx2.get(url, headers={"authorization": "Bearer wrong-0123456789"}).status_code == 401
    async with client(keyed, "tok-alice-0123456789") as c:
        await c.call_tool("read_file", {"path": "top.txt"})
        await c.call_tool("read_file", {"path": "missing.txt"}, raise_on_error=False)
        await c.call_tool("made_up_tool_name", {}, raise_on_error=False)
        started = (await c.call_tool("start_job", {"command": ["sleep", "30"]})).content[0].text
        running = _samples(httpx2.get(url, headers={"x-api-key": "tok-bob-0123456789"}).text)
        await c.call_tool("job_kill", {"jobId": started.split()[2]})
    assert running[("awm_jobs_running", ())] >= 1
    text = httpx2.get(url, headers={"x-api-key": "tok-bob-0123456789"}).text
    samples = _samples(text)
    assert samples[("awm_tool_calls_total", (("outcome", "ok"), ("tool", "read_file")))] >= 1
    assert samples[("awm_tool_calls_total", (("outcome", "error"), ("tool", "read_file")))] >= 1
    assert samples[("awm_tool_calls_total", (("outcome", "error"), ("tool", "unknown")))] >= 1
    assert "made_up_tool_name" not in text  # a client cannot grow the label set
    assert samples[("awm_tool_call_seconds_count", (("tool", "read_file"),))] >= 2
    assert samples[("awm_answer_bytes_total", (("tool", "read_file"),))] > 0
    assert samples[("awm_auth_failures_total", ())] >= 2
    assert "tok-" not in text and str(keyed.root) not in text  # type: ignore[attr-defined]


def test_metrics_public_and_the_readiness_probe(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    server = start(root, "--token", "tok-static-0123456789", "--metrics-public")
    try:
        assert httpx2.get(f"{server.base}/metrics").status_code == 200
        assert httpx2.post(server.url, json=INIT, headers=MCP_HEADERS).status_code == 401
        # /ready: the workspace reachable and its state directory writable, no auth.
        assert httpx2.get(f"{server.base}/ready").json() == {"status": "ready"}
        shutil.rmtree(root / ".workspace-mcp")
        (root / ".workspace-mcp").write_text("not a directory")
        answer = httpx2.get(f"{server.base}/ready")
        assert answer.status_code == 503
        assert answer.json()["error"] == (
            "workspace default is not reachable or its state is not writable"
        )
        assert str(root) not in answer.text
        (root / ".workspace-mcp").unlink()
        assert httpx2.get(f"{server.base}/ready").status_code == 200
    finally:
        server.stop()


def test_a_busy_port_is_named_with_the_flag_to_change(tmp_path: Path) -> None:
    """Issue 29: a busy port printed uvicorn's `[Errno 98] ...` and nothing about --port."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for extra in ((), ("--workers", "2")):
            out = run_cli(
                tmp_path, "--http", "--token", "tok-busy-0123456789", "--port", str(port), *extra
            )
            assert out.returncode == 2
            last = out.stderr.strip().splitlines()[-1]
            assert last == (
                f"agent-workspace-mcp: error: cannot listen on 127.0.0.1:{port} (Address "
                f"already in use): another program is using port {port}; choose another "
                "with --port N"
            ), out.stderr


def test_the_rate_limit_is_per_subject(tmp_path: Path) -> None:
    """Issue 30: the per-subject limit was tested with one anonymous client; removing the
    subject from the limiter's key failed no test. Alice exhausts her bucket, Bob's is
    untouched."""
    root = tmp_path / "ws"
    root.mkdir()
    server = start(
        root,
        "--api-key",
        "alice=tok-alice-0123456789",
        "--api-key",
        "bob=tok-bob-0123456789",
        "--rate-limit",
        "1",
    )
    try:

        def calls(token: str, count: int) -> list[bool]:
            session = open_session(server, token).headers["mcp-session-id"]
            headers = {
                **MCP_HEADERS,
                "authorization": f"Bearer {token}",
                "mcp-session-id": session,
                "mcp-protocol-version": "2025-11-25",
            }
            body = {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "workspace_list", "arguments": {}},
            }
            limited = []
            for _ in range(count):
                text = httpx2.post(server.url, json=body, headers=headers).text
                limited.append("Rate limit exceeded" in text)
            return limited

        assert any(calls("tok-alice-0123456789", 8))
        assert calls("tok-bob-0123456789", 1) == [False]  # Bob is not Alice
    finally:
        assert server.stop() == 0


@pytest.mark.parametrize("subpath", ["../outside", "nope", "top.txt"])
def test_a_bad_subpath_is_named_by_its_header_sessionless_too(
    keyed: RunningServer, subpath: str
) -> None:
    """Issue 30: the header was parsed in three places (session open, a sessionless
    request, the per-call middleware); one function now parses it and names it."""
    token = "tok-alice-0123456789"
    opened = open_session(keyed, token, **{"x-workspace-subpath": subpath})
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "list_files", "arguments": {}},
    }
    sessionless = httpx2.post(
        keyed.url,
        json=body,
        headers={
            **MCP_HEADERS,
            "authorization": f"Bearer {token}",
            "mcp-protocol-version": "2026-07-28",
            "x-workspace-subpath": subpath,
        },
    )
    for answer in (opened, sessionless):
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"].startswith("x-workspace-subpath: "), answer.text
