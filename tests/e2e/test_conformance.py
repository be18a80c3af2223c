"""The official MCP conformance suite against the real server over HTTP (issue 35).

`@modelcontextprotocol/conformance` (pinned) runs what the 2026-07-28 and 2025-11-25
revisions require, plus the tasks and skills extension scenarios, against the CLI with
the suite's fixture tools added (tests/conformance/fixture_server.py: a test build, never
the shipped server). Each revision has an expected-failures file listing what is known
to fail and why: a new failure fails the test, and so does a listed one that passes.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.e2e.http_server import start
from tests.e2e.npm import installed
from tests.helpers import missing

SUITE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
NODE = "node@22"
HERE = Path(__file__).resolve().parent.parent / "conformance"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def suite() -> list[str]:
    bin_dir = installed("conformance-0.2.0-alpha.12", [NODE, SUITE], "conformance")
    node = bin_dir / "node"
    version = subprocess.run([str(node), "--version"], capture_output=True, text=True)
    if version.returncode != 0 or int(version.stdout.lstrip("v").split(".")[0]) < 22:
        missing(f"the node@22 package gave no Node 22 ({version.stdout.strip()})")
    script = bin_dir.parent / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    return [str(node), str(script)]


@pytest.fixture(scope="module")
def url(tmp_path_factory) -> str:
    base = tmp_path_factory.mktemp("conformance")
    root, other = base / "root", base / "other"  # two: the workspace argument is routable
    root.mkdir()
    other.mkdir()
    server = start(
        root,
        str(other),
        "--no-auth",
        "--shell-any",
        "--allow-remote-exec",
        module="tests.conformance.fixture_server",
    )
    yield server.url
    assert server.stop() == 0


@pytest.mark.parametrize("revision", ["2026-07-28", "2025-11-25"])
def test_the_suite_passes_but_for_its_expected_failures(
    suite: list[str], url: str, revision: str, tmp_path: Path
) -> None:
    baseline = HERE / f"expected-failures-{revision}.yml"
    out = subprocess.run(
        [
            *suite,
            "server",
            "--url",
            url,
            "--requirements",
            revision,
            "--expected-failures",
            str(baseline),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1"},
    )
    tail = "\n".join((out.stdout + out.stderr).splitlines()[-60:])
    assert out.returncode == 0, f"conformance {revision} exited {out.returncode}:\n{tail}"
    assert "Total:" in out.stdout, tail


@pytest.mark.parametrize("scenario", ["directory", "enumeration", "manifest"])
def test_the_skills_extension_scenarios(
    suite: list[str], url: str, scenario: str, tmp_path: Path
) -> None:
    """Agent Skills over MCP (SEP-2640): not in either requirement set, run by name."""
    out = subprocess.run(
        [*suite, "server", "--url", url, "--scenario", f"sep-2640-skills-{scenario}"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1"},
    )
    text = out.stdout + out.stderr
    tail = "\n".join(text.splitlines()[-40:])
    assert out.returncode == 0, tail
    assert re.search(r"Passed: [1-9]\d*/\d+, 0 failed", text), tail
