"""The ToolHive and agent-sandbox manifests (issue 49) are valid against the projects' own
CRD schemas, vendored under deploy/*/crds/ and pinned by version, with unknown fields
refused (as the API server's strict field validation does); the built-in kinds against
the Kubernetes schemas (kubernetes-validate, offline); and what each pod runs is a
configuration this server accepts."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from agent_workspace_mcp.configuration import preflight, settings_from_sources

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
PROJECTS = ("toolhive", "agent-sandbox")
# libyaml when PyYAML has it: the vendored CRDs are ~500 KB, 1.2 s to parse in pure
# Python, and were parsed at import, in every test worker, even for the fast subset.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def strict(schema: Any) -> Any:
    """An OpenAPI v3 CRD schema as JSON Schema that refuses unknown fields wherever the
    CRD lists its fields (x-kubernetes-preserve-unknown-fields keeps them open)."""
    if isinstance(schema, dict):
        out = {k: strict(v) for k, v in schema.items()}
        if (
            "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [strict(v) for v in schema]
    return schema


@functools.cache
def crd_schemas() -> dict[tuple[str, str], dict]:
    """(apiVersion, kind) -> the served version's schema, from every vendored CRD."""
    found = {}
    for path in sorted(DEPLOY.glob("*/crds/*.yaml")):
        crd = yaml.load(path.read_text(), Loader=LOADER)
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            if version.get("served"):
                schema = strict(copy.deepcopy(version["schema"]["openAPIV3Schema"]))
                schema["properties"]["metadata"] = {"type": "object"}
                found[(f"{group}/{version['name']}", kind)] = schema
    return found


def documents() -> list[tuple[str, dict]]:
    found = []
    for project in PROJECTS:
        for path in sorted((DEPLOY / project).glob("*.yaml")):
            for n, doc in enumerate(yaml.safe_load_all(path.read_text())):
                found.append((f"{project}/{path.name}#{n}", doc))
    return found


def validate(doc: dict) -> None:
    schema = crd_schemas().get((doc["apiVersion"], doc["kind"]))
    if schema is not None:
        jsonschema.validate(doc, schema)
    else:
        kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)


def test_the_vendored_crds_are_the_pinned_ones() -> None:
    assert ("toolhive.stacklok.dev/v1beta1", "MCPServer") in crd_schemas()
    assert ("extensions.agents.x-k8s.io/v1beta1", "SandboxTemplate") in crd_schemas()
    assert ("extensions.agents.x-k8s.io/v1beta1", "SandboxWarmPool") in crd_schemas()
    readme = (DEPLOY / "README.md").read_text()
    assert "toolhive v0.44.0" in readme and "agent-sandbox v0.5.6" in readme


@pytest.mark.parametrize(("name", "doc"), documents(), ids=[n for n, _ in documents()])
def test_every_manifest_is_valid(name: str, doc: dict) -> None:
    validate(doc)
    if doc["kind"] == "MCPServer":  # the pod template the CRD leaves open, as a core kind
        template = {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": "mcp"},
            "template": doc["spec"]["podTemplateSpec"],
        }
        kubernetes_validate.validate(template, kubernetes_validate.latest_version(), strict=True)


def test_an_unknown_or_misspelt_field_is_refused() -> None:
    """The check is strict: it would catch a field the operator does not know."""
    (server,) = [d for n, d in documents() if d["kind"] == "MCPServer"]
    for bad in ({"mcpPorts": 3333}, {"transport": "websocket"}, {"sessionAffinity": "Sticky"}):
        broken = {**server, "spec": {**server["spec"], **bad}}
        with pytest.raises(jsonschema.ValidationError):
            validate(broken)
    (template,) = [d for n, d in documents() if d["kind"] == "SandboxTemplate"]
    with pytest.raises(jsonschema.ValidationError):
        validate({**template, "spec": {**template["spec"], "podTemplates": {}}})


def _container_settings(args: list[str], env: dict[str, str], tmp_path: Path):
    args = [str(tmp_path) if a == "/workspace" else a for a in args]
    settings = settings_from_sources(args, environ=env, dotenv_path=str(tmp_path / ".env"))
    preflight(settings)
    return settings


def test_what_each_pod_runs_is_a_valid_configuration(tmp_path: Path) -> None:
    (server,) = [d for n, d in documents() if d["kind"] == "MCPServer"]
    spec = server["spec"]
    env = {e["name"]: e["value"] for e in spec["env"]}
    env.update({s["targetEnvName"]: "a-long-enough-token-value" for s in spec["secrets"]})
    settings = _container_settings(spec["args"], env, tmp_path)
    assert settings.http and settings.port == spec["mcpPort"] and settings.token
    probes = spec["podTemplateSpec"]["spec"]["containers"][0]
    assert probes["readinessProbe"]["httpGet"] == {"path": "/ready", "port": spec["mcpPort"]}
    (template,) = [d for n, d in documents() if d["kind"] == "SandboxTemplate"]
    (container,) = template["spec"]["podTemplate"]["spec"]["containers"]
    env = {  # each Secret's value stands in as its own long value
        e["name"]: e["value"]
        if "value" in e
        else f"secret-{e['valueFrom']['secretKeyRef']['name']}-value"
        for e in container["env"]
    }
    settings = _container_settings(container["args"], env, tmp_path)
    assert settings.token and settings.operator_token and settings.operator_token != settings.token
