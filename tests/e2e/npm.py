"""Programs from the npm registry for the end-to-end tests (the MCP Inspector, Claude
Code, Codex, opencode), installed once into a cache directory and reused.

Only a complete install is ever reused: npm works in a staging directory that is renamed
into place at the end. Without npm or the registry the test skips with one line (a
failure under CI, which installs npm: tests.helpers.missing).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.helpers import missing

CACHE_ROOT = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"), "agent-workspace-mcp")


def installed(name: str, packages: list[str], program: str) -> Path:
    """The `node_modules/.bin` directory of `packages`, installed under the cache as
    `name`; `program` is the binary whose presence marks a finished install."""
    cache = CACHE_ROOT / name
    bin_dir = cache / "node_modules" / ".bin"
    if (bin_dir / program).exists():
        return bin_dir
    npm = shutil.which("npm")
    if npm is None:
        missing("npm not found (needed to install " + ", ".join(packages) + ")")
    staging = cache.with_name(cache.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    out = subprocess.run(
        [
            npm,
            "install",
            "--prefix",
            str(staging),
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            *packages,
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if out.returncode != 0:
        last = (out.stderr.strip() or "no output").splitlines()[-1]
        missing(f"npm install {' '.join(packages)} failed: {last}")
    shutil.rmtree(cache, ignore_errors=True)
    staging.rename(cache)
    return bin_dir
