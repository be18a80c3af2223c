"""Podman on our machines, for the container test and the fresh-machine check.

No registry but the package registries is reachable, so the base image is made here:
debootstrap of Debian bookworm with only Python 3.11 (python3, its venv and pip module)
and CA certificates, then `podman import`. It is built once and reused.
"""

from __future__ import annotations

import os
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
