"""Ready to publish (issue 14): the sdist and wheel build from the tracked sources, pass
`twine check`, and the wheel alone, installed into a fresh venv, runs `check`.

The fresh venv gets the wheel with `--no-deps`; its dependencies come from this test
environment through a `.pth` line placed after the venv's own site-packages, so the
package imported is the wheel's copy (asserted) and the test needs no network beyond
what `python -m build` fetches for its isolated build environment.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LEFT_OUT = (".git", ".venv", "build", "dist", "__pycache__", "*.egg-info", ".corpus", "results")


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=300, **kwargs)
    assert out.returncode == 0, f"{argv[:4]} failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"
    return out


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source") / "agent-workspace-mcp"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*LEFT_OUT))
    out = source / "dist"
    # Default mode builds the sdist, then the wheel from the unpacked sdist, so a file
    # missing from the sdist also fails the wheel.
    run([sys.executable, "-m", "build", "--outdir", str(out), str(source)])
    return out


def test_metadata_passes_twine_check(dist: Path) -> None:
    files = sorted(p.name for p in dist.iterdir())
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert files == [
        f"agent_workspace_mcp-{version}-py3-none-any.whl",
        f"agent_workspace_mcp-{version}.tar.gz",
    ]
    checked = run([sys.executable, "-m", "twine", "check", "--strict", *map(str, dist.iterdir())])
    assert checked.stdout.count("PASSED") == 2


def test_the_wheel_alone_runs_check(dist: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    wheel = next(dist.glob("*.whl"))
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            str(wheel),
        ]
    )
    site = Path(
        run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]
        ).stdout.strip()
    )
    (site / "test-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")

    where = run([str(python), "-c", "import agent_workspace_mcp as m; print(m.__file__)"])
    assert where.stdout.startswith(str(site)), where.stdout
    shipped = run(
        [
            str(python),
            "-c",
            "from agent_workspace_mcp.core.skills import builtin_skills as b; "
            "print(' '.join(s.name for s in b()))",
        ]
    )
    assert shipped.stdout.split() == ["change-workflow", "workspace-session"]

    project = tmp_path / "project"
    project.mkdir()
    (project / "hello.txt").write_text("hello from the wheel\n")
    checked = run([str(venv / "bin" / "agent-workspace-mcp"), "check", str(project)])
    lines = checked.stdout.splitlines()
    assert [line[:3] for line in lines] == ["ok "] * 4 + ["   "], checked.stdout
    assert lines[0].startswith(f"ok  start and initialize: {venv}/bin/agent-workspace-mcp answered")
