"""The code base stays ruff-clean and type-checks (mypy, configured in pyproject.toml):
checked as part of the suite so CI enforces it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Each runs ruff or mypy over the whole tree (7-11 s each): a process spawn, outside the
# fast subset; the full suite (and CI) runs them, and so does the pre-commit hook.
SPAWNS = pytest.mark.slow


@SPAWNS
def test_ruff_clean() -> None:
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed (it is part of the [test] extra)")
    out = subprocess.run(
        [ruff, "check", "src", "tests", "bench"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr


@SPAWNS
def test_mypy_clean() -> None:
    """Type hints are checked, not decoration: `mypy` over the package finds nothing."""
    mypy = shutil.which("mypy") or str(Path(sys.executable).parent / "mypy")
    if not Path(mypy).exists():
        pytest.skip("mypy is not installed (it is part of the [test] extra)")
    out = subprocess.run([mypy], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr


@SPAWNS
def test_ruff_format_clean_without_skips() -> None:
    """Issue 45: the formatter decides the layout: `ruff format --check` passes and no
    line opts out with a skip marker (one `fmt: off` block, the settings table, remains)."""
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed (it is part of the [test] extra)")
    out = subprocess.run(
        [ruff, "format", "--check", "src", "tests", "bench"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    marker = "fmt: " + "skip"  # spelled apart so this file does not match itself
    skips = [str(p.relative_to(ROOT)) for p in our_python_files() if marker in p.read_text()]
    assert not skips, skips


def our_python_files() -> list[Path]:
    """The .py files of src, tests and bench, without walking into hidden folders: the
    benches install peers and corpora there (about 90,000 files, 18 s to walk)."""
    found = []
    for base in ("src", "tests", "bench"):
        for here, dirs, files in os.walk(ROOT / base):
            dirs[:] = [name for name in dirs if not name.startswith(".")]
            found += [Path(here, name) for name in files if name.endswith(".py")]
    return found


def test_the_pre_commit_configuration_runs_the_same_checks() -> None:
    """Issue 45: ruff, mypy and the fast subset, with the project's own tools."""
    import yaml

    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hooks = {hook["id"]: hook for repo in config["repos"] for hook in repo["hooks"]}
    assert {"ruff-check", "ruff-format", "mypy", "fast-tests"} <= set(hooks)
    assert "not slow" in hooks["fast-tests"]["entry"]
    assert all(hook["entry"].startswith(".venv/bin/") for hook in hooks.values())


def test_the_core_is_checked_as_strict_checks_it() -> None:
    """Issue 45: the core (plain Python, no framework) type-checks under `--strict`.
    test_mypy_clean's one run does it: pyproject's override for the core turns on every
    per-module flag the installed mypy's `--strict` turns on (a second, strict run over
    what the first had checked cost 11 s more of the suite). The global ones are set for
    the whole package."""
    import tomllib

    main = pytest.importorskip("mypy.main", reason="mypy is part of the [test] extra")
    from mypy.options import PER_MODULE_OPTIONS

    _, _, strict = main.define_options()
    assert strict, "mypy's --strict flags were not found"
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    core = [o for o in config["overrides"] if "agent_workspace_mcp.core.*" in o["module"]]
    assert len(core) == 1 and "agent_workspace_mcp.core" in core[0]["module"]
    for flag, value in strict:
        per_module = flag in PER_MODULE_OPTIONS
        where, scope = (core[0], "in the core's override") if per_module else (config, "globally")
        assert where.get(flag) == value, f"{flag} = {value} is not set {scope}"


def test_services_fields_are_typed() -> None:
    """Issue 45: what every tool module shares names its types (no Any, no bare dict)."""
    import dataclasses
    import typing

    from agent_workspace_mcp.services import Services

    hints = typing.get_type_hints(Services)
    loose = [
        f.name
        for f in dataclasses.fields(Services)
        if hints[f.name] is typing.Any or hints[f.name] is dict or "Any" in str(hints[f.name])
    ]
    assert not loose, loose
