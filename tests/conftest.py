"""Shared fixtures: a real temp workspace and a real in-memory FastMCP client."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from agent_workspace_mcp import Settings, create_server
from agent_workspace_mcp.core import features
from tests.helpers import CI_REQUIRED

if TYPE_CHECKING:  # imported where used: pytest's controller process never needs it (2 s)
    from fastmcp import Client

# tests/test_portable.py re-runs the containment and process tests with every Linux-only
# feature forced off, so the macOS fallbacks run here too.
PORTABLE = os.environ.get("AWM_TEST_PORTABLE") == "1"

# The user's private state (the approval key, core.proofkey) is the suite's own, never
# the developer's: every server and CLI the tests start inherits this. Removed when this
# process ends (each run left one per process behind: 445 after a day's work).
os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="awm-test-state-")
atexit.register(shutil.rmtree, os.environ["XDG_STATE_HOME"], ignore_errors=True)
if PORTABLE:
    features.PROC_FD_CWD = False
    features.NAMESPACES = False
    features.O_PATH = 0


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the workspace holding a secret the tools must never reach."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("top secret\n")
    return out


@asynccontextmanager
async def open_client(settings: Settings) -> AsyncIterator[Client]:
    from fastmcp import Client

    async with Client(create_server(settings)) as client:
        yield client


@pytest.fixture
async def client(ws: Path) -> AsyncIterator[Client]:
    async with open_client(Settings(root=str(ws))) as c:
        yield c


# Long modules of one to four tests, run first. xdist hands each worker the next module
# as it finishes one, by default the modules with most tests first, which put these last:
# in two timed runs one worker idled 38-46 s at the end while the other ran
# test_many_agents alone. With `--no-loadscope-reorder` (pyproject) the order is ours:
# these, then the rest by number of tests, as xdist would.
FEW_LONG_TESTS = [
    "tests/test_portable.py",  # 50-80 s: the containment tests again, in a child pytest
    "tests/e2e/test_many_agents.py",  # 36-40 s
    "tests/e2e/test_container.py",  # 14-75 s: builds the image on a fresh clone
]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that spawn the real CLI process (end-to-end, the CLI's own, and any test
    that uses a module's `served` HTTP server) are slow: each start pays FastMCP's
    import. `-m "not slow"` is the fast subset (under a minute)."""
    for item in items:
        path = str(item.path)
        if (
            "/tests/e2e/" in path
            or path.endswith("/tests/test_cli.py")
            or "served" in getattr(item, "fixturenames", ())
        ):
            item.add_marker(pytest.mark.slow)
    root = config.rootpath
    tests_in = Counter(item.path for item in items)

    def order(item: pytest.Item) -> tuple[int, int]:
        rel = item.path.relative_to(root).as_posix()
        if rel in FEW_LONG_TESTS:
            return (FEW_LONG_TESTS.index(rel), 0)
        return (len(FEW_LONG_TESTS), -tests_in[item.path])

    items[:] = sorted(items, key=order)  # stable: a module's tests keep their order


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI a missing requirement fails instead of skipping (tests.helpers.requires)."""
    outcome = yield
    report = outcome.get_result()
    # The forced portable run simulates a machine without namespaces: skips are right there.
    required = os.environ.get("CI") and not PORTABLE
    if report.skipped and required and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2])
        if CI_REQUIRED in reason:
            report.outcome = "failed"
            report.longrepr = f"required in CI but missing: {reason}"
