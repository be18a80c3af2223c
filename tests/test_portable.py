"""The macOS paths, run on Linux (issue 14): the containment (paths, git, the search
race) and process tests again with every Linux-only feature forced off (core.features), in a child pytest
so the forced values cannot leak into the rest of the suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_workspace_mcp.core import features
from agent_workspace_mcp.core.containment import root_cwd
from agent_workspace_mcp.core.errors import ConfigError
from agent_workspace_mcp.core.exec.commands import check_bwrap
from agent_workspace_mcp.core.workspaces import WorkspaceRegistry
from tests.conftest import PORTABLE

REPO = Path(__file__).resolve().parents[1]
# In-process tests only: a spawned CLI is a fresh interpreter with the real features.
THROUGH_FALLBACKS = [
    "tests/core/test_containment.py",
    "tests/security/test_paths.py",
    "tests/security/test_host_integrity.py",
    "tests/security/test_git_containment.py",
    "tests/security/test_search_race.py",
    "tests/security/test_sandbox.py",
    "tests/core/test_commands.py",
    "tests/core/test_jobs.py",
    "tests/tools/test_shell.py",
    "tests/test_portable.py",
]


@pytest.mark.slow
def test_containment_and_processes_through_the_fallbacks() -> None:
    if PORTABLE:
        pytest.skip("already inside the forced run")
    out = subprocess.run(
        # One process (`-n 0`): the suite's own workers already hold both cores, and two
        # more workers only add their start-up and collection (13 s of CPU).
        [sys.executable, "-m", "pytest", "-q", "-rs", "-n", "0", *THROUGH_FALLBACKS],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "AWM_TEST_PORTABLE": "1"},
    )
    tail = out.stdout[-3000:]
    assert out.returncode == 0, tail
    assert "test_the_features_are_forced_off" not in tail  # it ran, and was not skipped


def test_the_features_are_forced_off(tmp_path: Path) -> None:
    if not PORTABLE:
        pytest.skip("runs inside the forced run (AWM_TEST_PORTABLE=1)")
    assert not features.PROC_FD_CWD and not features.NAMESPACES
    ws = WorkspaceRegistry.confined(str(tmp_path)).primary
    with root_cwd(ws) as cwd:
        assert cwd == str(tmp_path)  # the checked path instead of /proc/self/fd/N


def test_bwrap_is_refused_in_one_line_without_namespaces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(features, "NAMESPACES", False)
    with pytest.raises(ConfigError) as caught:
        check_bwrap(os.environ["PATH"].split(os.pathsep))
    assert str(caught.value).startswith("--sandbox bwrap needs Linux (")
    assert "\n" not in str(caught.value)


def test_fd_path_follows_the_feature(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(features, "PROC_FD_CWD", True)
    assert features.fd_path(7, "/checked") == "/proc/self/fd/7"
    monkeypatch.setattr(features, "PROC_FD_CWD", False)
    assert features.fd_path(7, "/checked") == "/checked"
