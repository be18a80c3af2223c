"""The README's promise, checked: its two Quick start commands, verbatim, on a machine
with only Python 3.11 and pip (issue 29).

A fresh container (tests/e2e/podman.py: Debian with python3 and its venv/pip module, and
git, which brought the clone; no bubblewrap, no Node, no podman, no ripgrep), as a
non-root user, without the CI variable, so every test that needs a missing program must
skip with its one-line reason. The source is the checkout's files (tracked, or new and
not ignored), copied. The first command runs on an empty project with stdin closed (it
must start and stop cleanly); the second runs the whole suite. Exit status: the
container's.

Run by .ci/run after the suite; `python3 .ci/fresh_machine.py` runs it by hand.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.e2e.podman import (  # noqa: E402
    FRESH,
    FRESH_PACKAGES,
    PODMAN,
    PODMAN_MISSING,
    ULIMITS,
    ca_bundle,
    ensure_base,
)

USER = "1000:1000"


def quick_start() -> tuple[str, str]:
    """The two commands of the README's Quick start, as printed there."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)\n```", section, re.S)
    if len(blocks) != 2:
        raise SystemExit(f"README's Quick start has {len(blocks)} command blocks, not 2")
    return blocks[0].strip(), blocks[1].strip()


def main() -> int:
    if PODMAN_MISSING:
        print(f"fresh machine check skipped: {PODMAN_MISSING}", flush=True)
        return 1 if "--required" in sys.argv else 0
    serve, test = quick_start()
    if "/path/to/project" not in serve:
        raise SystemExit("README's first command no longer names /path/to/project")
    serve = serve.replace("/path/to/project", "/tmp/project")
    with tempfile.TemporaryDirectory() as tmp:
        ensure_base(Path(tmp), FRESH, FRESH_PACKAGES)
        src = Path(tmp) / "agent-workspace-mcp"
        listed = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
        tracked = subprocess.run(listed, cwd=REPO, capture_output=True, check=True)
        tracked = tracked.stdout.decode().split("\0")
        for rel in filter(None, tracked):
            if (REPO / rel).is_file():  # a tracked file deleted in the work tree is gone
                (src / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO / rel, src / rel, follow_symlinks=False)
        subprocess.run(["chown", "-R", USER, str(src)], check=True)
        script = (
            "set -e; mkdir -p /tmp/project /tmp/home; cd /work/agent-workspace-mcp\n"
            f"echo '$ {serve}'\n{serve} </dev/null\n"
            f"echo '$ {test}'\n{test}\n"
        )
        argv = [
            *PODMAN, "run", "--rm", "--network", "host", *ULIMITS, "--user", USER,
            "-e", "HOME=/tmp/home", "-e", f"PIP_CERT={'/etc/ssl/certs/host-ca.crt'}",
            "-v", f"{ca_bundle()}:/etc/ssl/certs/host-ca.crt:ro",
            "-v", f"{src}:/work/agent-workspace-mcp", "--tmpfs", "/tmp:exec,mode=1777",
            FRESH, "bash", "-c", script,
        ]  # fmt: skip
        print("fresh machine (python3 and pip only):", shlex.join(argv[:4]), "...", flush=True)
        return subprocess.run(argv, timeout=3600).returncode


if __name__ == "__main__":
    sys.exit(main())
