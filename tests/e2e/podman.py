"""Podman on our machines, for the container test and the fresh-machine check.

No registry but the package registries is reachable, so the base image is made here:
debootstrap of Debian bookworm with only Python 3.11 (python3, its venv and pip module)
and CA certificates, then `podman import`. It is built once and reused.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BASE = "localhost/awm-base:bookworm"
# A user's fresh machine: Python and pip, and git, which brought the clone.
FRESH = "localhost/awm-fresh:bookworm"
FRESH_PACKAGES = ("git",)
# What works on our machines as root (issue 18): runc, cgroupfs, explicit ulimits.
PODMAN = ["podman", "--cgroup-manager=cgroupfs", "--runtime", "runc"]
ULIMITS = ["--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"]
PODMAN_MISSING = (
    None
    if shutil.which("podman") and shutil.which("debootstrap") and shutil.which("runc")
    else "needs podman, runc and debootstrap"
)


def run(argv: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kwargs)
    assert done.returncode == 0, (
        f"{' '.join(argv[:6])}...: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    )
    return done


def build(tag: str, context: Path, *args: str, timeout: float) -> None:
    """`podman build -t tag`, then what earlier builds of `tag` left behind removed.

    Every build of changed sources leaves its superseded stages as untagged images (about
    1 GB a run here), which nothing removes. Each build labels all it makes with `tag`;
    afterwards the labelled images this build neither made nor used as its cache go, so
    the next build is as quick and nothing else on the machine is touched. One in use
    (by a container, or as another image's parent) stays: `podman rmi` refuses it.
    """
    label = f"org.agent-workspace-mcp.test-build={tag}"
    done = run(
        [*PODMAN, "build", "--label", label, *args, "-t", tag, str(context)], timeout=timeout
    )
    # Each step ends with "--> <id>" (made) or "--> Using cache <id>" (reused).
    used = re.findall(r"^--> (?:Using cache )?([0-9a-f]{11,64})$", done.stdout + done.stderr, re.M)
    listed = run(
        [*PODMAN, "images", "--all", "--quiet", "--no-trunc", "--filter", f"label={label}"],
        timeout=60,
    )
    stale = [
        image
        for image in listed.stdout.split()
        if not any(image.removeprefix("sha256:").startswith(short) for short in used)
    ]
    if stale:
        subprocess.run([*PODMAN, "rmi", *stale], capture_output=True, timeout=300)


def mirror() -> str:
    """The Debian mirror apt uses here (the only Debian registry reachable)."""
    for source in Path("/etc/apt/sources.list.d").glob("*.sources"):
        for line in source.read_text().splitlines():
            if line.startswith("URIs:") and line.rstrip().endswith("/debian"):
                return line.split(":", 1)[1].strip()
    return "http://deb.debian.org/debian"


def ensure_base(tmp: Path, image: str = BASE, extra: tuple[str, ...] = ()) -> None:
    """`image`, made once: Debian bookworm with Python 3.11, venv/pip, CA certificates
    (and `extra` packages)."""
    if subprocess.run([*PODMAN, "image", "exists", image]).returncode == 0:
        return
    rootfs = tmp / "rootfs"
    packages = ",".join(("python3", "python3-venv", "python-is-python3", "ca-certificates", *extra))
    run(
        [
            "debootstrap",
            "--variant=minbase",
            f"--include={packages}",
            "bookworm",
            str(rootfs),
            mirror(),
        ],
        timeout=1200,
    )
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    run([*PODMAN, "import", "-", image], timeout=600, stdin=tar.stdout)
    tar.wait()


def ca_bundle() -> str:
    """The host's CA bundle: the network here may intercept TLS to the registries."""
    return os.environ.get("PIP_CERT") or "/etc/ssl/certs/ca-certificates.crt"
