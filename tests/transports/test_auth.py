"""Token verifiers and HTTP-mode rules, in process."""

from __future__ import annotations

import time
from pathlib import Path

import jwt
import pytest

from agent_workspace_mcp import Settings, create_server
from agent_workspace_mcp.configuration import preflight
from agent_workspace_mcp.core.errors import ConfigError
from agent_workspace_mcp.transports.auth import JwtVerifier, KeyVerifier
from agent_workspace_mcp.transports.guards import allowed_hosts, allowed_origins
from tests.conftest import open_client

SECRET = "a-shared-secret-of-at-least-32-bytes!!"


async def test_key_verifier_maps_tokens_to_subjects() -> None:
    verifier = KeyVerifier([("alice", "tok-a"), ("bob", "tok-b")])
    assert (await verifier.verify_token("tok-b")).subject == "bob"
    assert await verifier.verify_token("tok-") is None
    assert await verifier.verify_token("") is None


@pytest.mark.filterwarnings("ignore::jwt.warnings.InsecureKeyLengthWarning")
async def test_hs256_verifier() -> None:
    verifier = JwtVerifier(secret=SECRET, audience="ws", issuer="me")
    now = int(time.time())
    good = jwt.encode(
        {"sub": "carol", "aud": "ws", "iss": "me", "exp": now + 60}, SECRET, algorithm="HS256"
    )
    token = await verifier.verify_token(good)
    assert token is not None and token.subject == "carol"
    for bad in (
        jwt.encode(
            {"sub": "x", "aud": "other", "iss": "me", "exp": now + 60}, SECRET, algorithm="HS256"
        ),
        jwt.encode(
            {"sub": "x", "aud": "ws", "iss": "me", "exp": now - 120}, SECRET, algorithm="HS256"
        ),
        jwt.encode(
            {"sub": "x", "aud": "ws", "iss": "me", "exp": now + 60}, SECRET, algorithm="HS512"
        ),
        jwt.encode(
            {"sub": "x", "aud": "ws", "iss": "me", "exp": now + 60}, "x" * 40, algorithm="HS256"
        ),
        jwt.encode({"aud": "ws", "iss": "me", "exp": now + 60}, SECRET, algorithm="HS256"),
        "not.a.jwt",
    ):
        assert await verifier.verify_token(bad) is None
    # A little clock skew is tolerated.
    skewed = jwt.encode(
        {"sub": "x", "aud": "ws", "iss": "me", "exp": now - 5}, SECRET, algorithm="HS256"
    )
    assert await verifier.verify_token(skewed) is not None


def test_jwt_configuration_errors(ws: Path) -> None:
    """Checked with the rest of the configuration, before FastMCP is imported."""
    base = {"root": str(ws), "http": True}
    with pytest.raises(ConfigError, match="--jwt-audience"):
        preflight(Settings(**base, jwt_secret=SECRET))
    with pytest.raises(ConfigError, match="at least 32"):
        preflight(Settings(**base, jwt_secret="short", jwt_audience="ws"))
    with pytest.raises(ConfigError, match="exactly one"):
        preflight(
            Settings(
                **base, jwt_secret=SECRET, jwks_url="http://127.0.0.1:1/jwks", jwt_audience="ws"
            )
        )
    with pytest.raises(ConfigError, match="implies an HS"):
        preflight(Settings(**base, jwt_secret=SECRET, jwt_audience="ws", jwt_algorithm="RS256"))
    # The server built as a library refuses the same configuration.
    with pytest.raises(ConfigError, match="--jwt-audience"):
        create_server(Settings(**base, jwt_secret=SECRET))


def test_host_and_origin_allowlists() -> None:
    hosts = allowed_hosts("127.0.0.1", 3333, ["ws.example"])
    assert {
        "127.0.0.1:3333",
        "localhost:3333",
        "[::1]:3333",
        "ws.example",
        "ws.example:3333",
    } <= hosts
    assert "evil.example" not in hosts
    assert allowed_hosts("0.0.0.0", 3333, []) is None
    origins = allowed_origins("127.0.0.1", 3333, ["https://app.example/"])
    assert "https://app.example" in origins and "http://localhost:3333" in origins
    assert "http://localhost:5173" not in origins


async def test_execution_stays_off_over_http_unless_allowed(ws: Path) -> None:
    base = dict(root=str(ws), http=True, no_auth=True, shell_mode="allowlist", tasks=True)
    async with open_client(Settings(**base)) as client:
        names = {t.name for t in await client.list_tools()}
        assert not names & {"run_command", "run_task", "start_job", "bash"}
    async with open_client(Settings(**base, allow_remote_exec=True)) as client:
        names = {t.name for t in await client.list_tools()}
        assert {"run_command", "run_task", "start_job"} <= names


async def test_unconfined_bash_is_not_remote_unless_allowed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    base = dict(unconfined=True, http=True, token="t" * 32)
    async with open_client(Settings(**base)) as client:
        assert "bash" not in {t.name for t in await client.list_tools()}
    async with open_client(Settings(**base, allow_remote_exec=True)) as client:
        assert "bash" in {t.name for t in await client.list_tools()}


def test_http_without_any_credentials_is_refused(ws: Path) -> None:
    with pytest.raises(ConfigError, match="HTTP needs auth"):
        create_server(Settings(root=str(ws), http=True))
    with pytest.raises(ConfigError, match="refusing --unconfined over HTTP without auth"):
        create_server(Settings(unconfined=True, http=True, no_auth=True))


async def test_rate_limit_per_subject(ws: Path) -> None:
    # 2 calls a second, a burst of 4: the session's start takes at most one of them.
    async with open_client(Settings(root=str(ws), rate_limit=2)) as client:
        outcomes = []
        for _ in range(10):
            try:
                await client.call_tool("workspace_list", {})
                outcomes.append("ok")
            except Exception as exc:  # a JSON-RPC error from the limiter, not isError
                outcomes.append(str(exc))
        assert outcomes[0] == "ok"
        assert any("Rate limit exceeded" in o for o in outcomes[1:])
