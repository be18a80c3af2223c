"""The Kubernetes manifests (issue 18): valid against the Kubernetes schemas (offline,
kubernetes-validate), hardened as docs/DEPLOY.md says, and runnable by this server."""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from agent_workspace_mcp.configuration import preflight, settings_from_sources
from agent_workspace_mcp.core.limits import SHUTDOWN_CLEANUP_SECONDS

DEPLOY = Path(__file__).resolve().parent.parent / "deploy" / "kubernetes"
MANIFESTS = sorted(p for p in DEPLOY.glob("*.yaml") if p.name != "kustomization.yaml")


def load(name: str) -> dict:
    return yaml.safe_load((DEPLOY / name).read_text())


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_every_manifest_is_valid_against_the_kubernetes_schemas(path: Path) -> None:
    for document in yaml.safe_load_all(path.read_text()):
        kubernetes_validate.validate(document, kubernetes_validate.latest_version(), strict=True)


def test_kustomization_lists_every_manifest() -> None:
    assert sorted(load("kustomization.yaml")["resources"]) == sorted(p.name for p in MANIFESTS)


def test_the_pod_is_hardened_and_probed() -> None:
    pod = load("statefulset.yaml")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["automountServiceAccountToken"] is False
    # Room for the server to kill its jobs on SIGTERM (SIGTERM, then SIGKILL) and exit.
    assert pod["terminationGracePeriodSeconds"] > 2 * SHUTDOWN_CLEANUP_SECONDS
    (container,) = pod["containers"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/health"
    assert container["readinessProbe"]["httpGet"]["path"] == "/ready"
    assert {"cpu", "memory"} <= set(container["resources"]["limits"])
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert {"/workspace", "/tmp"} <= mounts  # state on the volume, temp files writable


def test_the_container_arguments_and_secret_make_a_valid_configuration(tmp_path: Path) -> None:
    """What the pod runs is a configuration this server accepts (the workspace volume
    stands in as a temp directory): HTTP on every interface, with credentials."""
    (container,) = load("statefulset.yaml")["spec"]["template"]["spec"]["containers"]
    args = [str(tmp_path) if a == "/workspace" else a for a in container["args"]]
    env = {**load("secret.yaml")["stringData"], **{e["name"]: e["value"] for e in container["env"]}}
    settings = settings_from_sources(args, environ=env, dotenv_path=str(tmp_path / ".env"))
    preflight(settings)
    assert settings.http and settings.host == "0.0.0.0" and settings.api_keys
    port = container["ports"][0]["containerPort"]
    assert settings.port == port
    assert load("networkpolicy.yaml")["spec"]["ingress"][0]["ports"][0]["port"] == port


ROOT = DEPLOY.parent.parent


def test_compose_runs_read_only_without_capabilities_and_a_secret_token() -> None:
    service = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]["workspace"]
    assert service["read_only"] is True and service["cap_drop"] == ["ALL"]
    assert "no-new-privileges:true" in service["security_opt"]
    assert service["secrets"] == ["mcp_token"] and "/tmp" in service["tmpfs"]
    assert service["ports"] == ["127.0.0.1:3333:3333"]
    assert "MCP_TOKEN" not in str(service.get("environment", ""))  # never inline


def test_the_image_runs_unprivileged_with_a_health_check() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert "ARG BASE=python:3.12-slim" in text
    assert "USER 10001:10001" in text
    assert "http://127.0.0.1:3333/health" in text.split("HEALTHCHECK", 1)[1]
    assert "--mount=type=secret,id=ca_bundle" in text
    # Nothing is fetched but from the package registries (no curl/wget/ADD of a URL).
    assert not any(word in text for word in ("curl ", "wget ", "ADD http"))
