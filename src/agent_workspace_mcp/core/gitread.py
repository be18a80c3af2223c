"""Read-only git: status, diff, log, safe on repositories we do not trust.

A repository's own configuration can name programs git will run: hooks,
`core.fsmonitor`, textconv and external diff drivers, clean/smudge filters, a pager,
a lazy-fetch helper. Every call neutralises them: fixed `-c` overrides, `--no-ext-diff
--no-textconv`, an empty override for every filter driver the repository configures,
no system config, no lazy fetch, no optional locks (status must not write the index),
and an environment with no `GIT_*` variable from the caller. Arguments that start with
`-` never reach a position where git parses options: paths go after `--`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from .errors import WorkspaceError
from .limits import GIT_OUTPUT_BYTES, GIT_STATUS_TIMEOUT_SECONDS

_SAFE_CONFIG = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.untrackedCache=false",
    "diff.external=",
    "core.sshCommand=false",
    "credential.helper=",
    "protocol.allow=never",
)
_FILTER_KEY = re.compile(r"^filter\.(.+)\.(clean|smudge|process)$")


class GitError(WorkspaceError):
    pass


def git_env(base: dict[str, str] | None = None) -> dict[str, str]:
    source = os.environ if base is None else base
    env = {k: v for k, v in source.items() if not k.startswith("GIT_")}
    env.update(
        {
            "LC_ALL": "C",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_NO_LAZY_FETCH": "1",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_PAGER": "cat",
            "PAGER": "cat",
        }
    )
    return env


def _git() -> str:
    git = shutil.which("git")
    if git is None:
        raise GitError("git is not installed (not found on PATH)")
    return git


def _run(argv: list[str], root: str, timeout: float) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            argv, cwd=root, env=git_env(), capture_output=True, timeout=timeout,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise GitError(f"git took longer than {timeout:g} s; try a narrower path") from None
    except OSError as exc:
        raise GitError(f"git could not start ({exc.strerror})") from None


def _filter_overrides(git: str, root: str) -> list[str]:
    """`-c filter.<name>.<key>=` for every filter driver the repository configures."""
    out = _run(
        [git, "-C", root, "config", "--includes", "--name-only", "--get-regexp", r"^filter\."],
        root,
        GIT_STATUS_TIMEOUT_SECONDS,
    )
    overrides = []
    for line in out.stdout.decode("utf-8", "replace").splitlines():
        match = _FILTER_KEY.match(line.strip())
        if match:
            overrides += ["-c", f"filter.{match.group(1)}.{match.group(2)}="]
            overrides += ["-c", f"filter.{match.group(1)}.required=false"]
    return overrides


def run_git(root: str, args: list[str], timeout: float) -> str:
    """Run a read-only git subcommand in `root`; stdout as text, or one sentence on failure."""
    git = _git()
    argv = [git, "--no-pager"]
    for item in _SAFE_CONFIG:
        argv += ["-c", item]
    argv += _filter_overrides(git, root)
    argv += ["-C", root, *args]
    out = _run(argv, root, timeout)
    if out.returncode != 0:
        message = out.stderr.decode("utf-8", "replace").strip()
        if "not a git repository" in message:
            raise GitError("the workspace is not a git repository")
        if "dubious ownership" in message:
            raise GitError(
                "git refuses this repository: it is owned by another user (safe.directory)"
            )
        first = message.splitlines()[-1] if message else f"git exited with {out.returncode}"
        raise GitError(f"git failed: {first.removeprefix('fatal: ').removeprefix('error: ')}")
    return out.stdout.decode("utf-8", "replace")


def head_tail(text: str, limit: int = GIT_OUTPUT_BYTES) -> str:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    half = limit // 2
    head = data[:half].decode("utf-8", "ignore")
    tail = data[-half:].decode("utf-8", "ignore")
    return f"{head}\n... [{len(data) - 2 * half} bytes omitted] ...\n{tail}"
