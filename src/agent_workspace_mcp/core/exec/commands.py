"""Deciding what may run and how: the allowlist, typed tasks, and the bwrap sandbox.

The allowlist checks the program that will actually run, not the name the agent
typed. `command[0]` is resolved through PATH (only absolute PATH entries outside every
workspace, so a file the agent wrote can never be what PATH finds), and a path-like
`command[0]` (`./node`, `/tmp/x/node`) is allowed only if it is the very file PATH
gives for that name. The resolved absolute path is what gets executed.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .. import features
from ..echo import echo, listing
from ..errors import ConfigError, InvalidArgumentError
from ..limits import BWRAP_PROBE_SECONDS

DEFAULT_ALLOWLIST = ("pnpm", "npm", "npx", "node")


def safe_path_dirs(path_env: str, forbidden_roots: Iterable[str]) -> list[str]:
    """PATH entries that are absolute and not inside any workspace root."""
    roots = [r for r in forbidden_roots if r != "/"]
    dirs = []
    for entry in path_env.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        real = os.path.realpath(entry)
        if any(real == root or real.startswith(root + "/") for root in roots):
            continue
        dirs.append(entry)
    return dirs


def which(name: str, dirs: Sequence[str]) -> str | None:
    found = shutil.which(name, path=os.pathsep.join(dirs))
    return os.path.realpath(found) if found else None


@dataclass(frozen=True)
class Policy:
    mode: str  # "allowlist" or "any"
    allowlist: frozenset[str]
    path_dirs: tuple[str, ...]

    def resolve(self, argv0: str, cwd: str) -> str:
        """The absolute executable to run for `argv0`, or an error sentence."""
        if not argv0:
            raise InvalidArgumentError("command[0] must not be empty")
        if "\x00" in argv0:
            raise InvalidArgumentError("command contains a NUL byte")
        if "/" in argv0:
            target = os.path.realpath(os.path.join(cwd, argv0))
            if self.mode == "any":
                if not os.access(target, os.X_OK) or os.path.isdir(target):
                    raise InvalidArgumentError(f"not an executable file: {echo(argv0)}")
                return target
            name = os.path.basename(argv0)
            self._check_listed(name)
            expected = which(name, self.path_dirs)
            if expected is None or target != expected:
                raise InvalidArgumentError(
                    f"{echo(argv0)} is not the {echo(name)} found on PATH; in allowlist mode run "
                    f"allowlisted programs by name ('{echo(name)}')"
                )
            return expected
        if self.mode != "any":
            self._check_listed(argv0)
        found = which(argv0, self.path_dirs)
        if found is None:
            raise InvalidArgumentError(f"command not found on PATH: {echo(argv0)}")
        return found

    def _check_listed(self, name: str) -> None:
        if name not in self.allowlist:
            allowed = listing(sorted(self.allowlist))
            raise InvalidArgumentError(
                f"command not allowed: {echo(name)} (allowlist: {allowed}; the operator can "
                "extend it with --shell-allow)"
            )


# run_task: typed runner/task -> fixed argv (coding-agent document). `paths` land after
# the marker position; None means the tool takes no paths.
@dataclass(frozen=True)
class TaskSpec:
    argv: tuple[str, ...]
    paths: str | None  # "after--" (append "--" then paths), "plain" (append paths), None


TASKS: dict[str, dict[str, TaskSpec]] = {
    "pytest": {"test": TaskSpec(("python3", "-m", "pytest", "-q"), "plain")},
    "npm": {
        "test": TaskSpec(("npm", "test"), "after--"),
        "build": TaskSpec(("npm", "run", "build"), None),
        "lint": TaskSpec(("npm", "run", "lint"), "after--"),
    },
    "pnpm": {
        "test": TaskSpec(("pnpm", "test"), "after--"),
        "build": TaskSpec(("pnpm", "run", "build"), None),
        "lint": TaskSpec(("pnpm", "run", "lint"), "after--"),
    },
    "yarn": {
        "test": TaskSpec(("yarn", "test"), "plain"),
        "build": TaskSpec(("yarn", "run", "build"), None),
        "lint": TaskSpec(("yarn", "run", "lint"), "plain"),
    },
    "maven": {
        "test": TaskSpec(("mvn", "-B", "test"), None),
        "build": TaskSpec(("mvn", "-B", "package", "-DskipTests"), None),
    },
    "gradle": {
        "test": TaskSpec(("gradle", "test"), None),
        "build": TaskSpec(("gradle", "build", "-x", "test"), None),
    },
    "go": {
        "test": TaskSpec(("go", "test"), "plain"),
        "build": TaskSpec(("go", "build"), "plain"),
        "lint": TaskSpec(("go", "vet"), "plain"),
    },
    "cargo": {
        "test": TaskSpec(("cargo", "test"), None),
        "build": TaskSpec(("cargo", "build"), None),
        "lint": TaskSpec(("cargo", "clippy"), None),
    },
}
GO_DEFAULT_PACKAGES = ("./...",)


def task_argv(runner: str, task: str, rel_paths: list[str]) -> list[str]:
    """The fixed argv for a runner/task, with contained relative paths appended."""
    tasks = TASKS.get(runner)
    if tasks is None:
        raise InvalidArgumentError(
            f"unknown runner '{echo(runner)}'; valid runners: {', '.join(TASKS)}"
        )
    spec = tasks.get(task)
    if spec is None:
        raise InvalidArgumentError(
            f"runner '{echo(runner)}' has no task '{echo(task)}'; valid tasks: {', '.join(tasks)}"
        )
    argv = list(spec.argv)
    # "./" keeps a file named like a flag ("-rf") from being read as one.
    safe = [p if p.startswith("./") else f"./{p}" for p in rel_paths]
    if rel_paths and spec.paths is None:
        raise InvalidArgumentError(f"{runner} {task} does not take paths")
    if runner == "go" and not safe:
        safe = list(GO_DEFAULT_PACKAGES)
    if safe:
        if spec.paths == "after--":
            argv.append("--")
        argv.extend(safe)
    return argv


def hidden_homes(environ: Mapping[str, str] | None = None) -> list[str]:
    """Directories a sandboxed command must not see: every home (SSH keys, cloud and
    registry tokens, other projects), the server user's own included."""
    env = os.environ if environ is None else environ
    found = ["/home", "/root"]
    home = env.get("HOME", "")
    if home.startswith("/") and home != "/":
        real = os.path.realpath(home)
        if not any(real == h or real.startswith(h + "/") for h in found):
            found.append(real)
    return [h for h in found if os.path.isdir(h)]


def toolchains_in(hidden: Sequence[str], path_dirs: Sequence[str]) -> list[str]:
    """PATH entries inside a hidden home (nvm's node, a venv, ~/.cargo), each given back
    read-only with its parent (`.../bin` -> `...`), so allowed programs still run."""
    found: list[str] = []
    for entry in path_dirs:
        real = os.path.realpath(entry)
        if not any(real == h or real.startswith(h + "/") for h in hidden):
            continue
        tree = os.path.dirname(real) if os.path.basename(real) == "bin" else real
        if tree not in hidden and tree not in found and os.path.isdir(tree):
            found.append(tree)
    return found


def bwrap_prefix(
    bwrap: str,
    workspace_root: str,
    cwd: str,
    *,
    root_fd: int | None = None,
    read_only: Sequence[tuple[int, str]] = (),
    network: bool = False,
    hidden: Sequence[str] = (),
    toolchains: Sequence[str] = (),
    private: Sequence[str] = (),
    die_with_parent: bool = True,
) -> list[str]:
    """bubblewrap: the workspace read-write, everything else read-only, home directories
    hidden (empty), private /tmp, no network unless `network`, own PID namespace, and
    the sandbox dies with the server.

    `root_fd` binds the checked workspace directory itself (not whatever its path names
    now), after the homes are hidden, so a workspace inside a home is still there;
    `read_only` are (fd, destination) pairs bound read-only on top, for `.git` and the
    server's state directory; `toolchains` are directories inside a hidden home given
    back read-only; `private` are the server's own directories (the job directory, the
    approval key's), hidden last so no bind above re-exposes them. `die_with_parent=False`
    for `--workers`, where a job outlives the worker that started it (the supervisor
    reaps and stops it instead).
    """
    root_bind = (
        ["--bind", workspace_root, workspace_root]
        if root_fd is None
        else ["--bind-fd", str(root_fd), workspace_root]
    )
    protected = [arg for fd, dest in read_only for arg in ("--ro-bind-fd", str(fd), dest)]
    homes = [arg for home in hidden for arg in ("--tmpfs", home)]
    tools = [arg for tree in toolchains for arg in ("--ro-bind", tree, tree)]
    own = [arg for where in private for arg in ("--tmpfs", where)]
    return [
        bwrap,
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        *homes,
        *tools,
        *root_bind,
        *protected,
        *own,
        *([] if network else ["--unshare-net"]),
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        *(["--die-with-parent"] if die_with_parent else []),
        "--chdir",
        cwd,
        "--",
    ]


def resolve_sandbox(
    mode: str, commands_enabled: bool, unconfined: bool, path_dirs: Sequence[str]
) -> tuple[str | None, str]:
    """(the checked bwrap binary or None, how commands run: for the start-up line).

    `auto` sandboxes wherever bubblewrap works, so the safe choice is the default;
    `bwrap` requires it (ConfigError otherwise); `none`, and an unconfined server,
    whose agent may touch any path anyway, run commands as the user. `path_dirs`: the
    PATH entries outside every root (safe_path_dirs), as for command[0] and git."""
    if not commands_enabled or mode == "none":
        return None, "unsandboxed: --sandbox none" if mode == "none" else ""
    if mode == "bwrap":
        return check_bwrap(path_dirs), "sandbox bwrap"
    if unconfined:
        return None, "unsandboxed: --unconfined"
    try:
        return check_bwrap(path_dirs), "sandbox bwrap"
    except ConfigError as exc:
        why = str(exc).removeprefix("--sandbox bwrap: ").removeprefix("--sandbox bwrap ")
        return None, f"unsandboxed: {why}"


def check_bwrap(path_dirs: Sequence[str]) -> str:
    """The bwrap binary, proven able to create its namespaces here; else one clear line.
    Looked up only in `path_dirs`: a `bwrap` the agent wrote into a PATH entry inside a
    root (an activated `.venv/bin`) would otherwise run as the user for every command."""
    if not features.NAMESPACES:
        raise ConfigError(
            f"--sandbox bwrap needs Linux (bubblewrap uses Linux namespaces; this is "
            f"{sys.platform}): leave it out, or run the server in a Linux VM or container"
        )
    bwrap = which("bwrap", path_dirs)
    if bwrap is None:
        inside = shutil.which("bwrap")
        raise ConfigError(
            f"--sandbox bwrap: the only bwrap on PATH ({inside}) is inside a workspace, where "
            "the agent can replace it; install bubblewrap system-wide"
            if inside
            else "--sandbox bwrap: bubblewrap is not installed (Debian package 'bubblewrap')"
        )
    problem = _probe(bwrap)
    if problem:
        raise ConfigError(f"--sandbox bwrap: {problem}")
    return bwrap


@functools.lru_cache(maxsize=4)
def _probe(bwrap: str) -> str | None:
    """Why this bubblewrap cannot run a sandbox here, or None. Once per process and
    binary: every server built with a command tool asks (sandboxing is the default)."""
    probe = [*bwrap_prefix(bwrap, "/tmp", "/"), "true"]
    try:
        out = subprocess.run(
            probe, capture_output=True, timeout=BWRAP_PROBE_SECONDS, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not start ({exc})"
    if out.returncode != 0:
        reason = out.stderr.decode("utf-8", "replace").strip().splitlines()
        return "bubblewrap cannot create namespaces here" + (f" ({reason[-1]})" if reason else "")
    return None
