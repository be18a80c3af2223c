"""Read-only git: status, diff, log, safe on repositories we do not trust.

A repository's own configuration can name programs git will run: hooks,
`core.fsmonitor`, textconv and external diff drivers, clean/smudge filters, a pager,
a lazy-fetch helper. Every call neutralises them: fixed `-c` overrides, `--no-ext-diff
--no-textconv`, an empty override for every filter driver the repository configures,
no system config, no lazy fetch, no optional locks (status must not write the index).
Arguments that start with `-` never reach a position where git parses options: paths
go after `--`, and `--literal-pathspecs` turns off pathspec magic such as `:/`.

Git must also see nothing outside the workspace:

- The child gets the same scrubbed environment as every command (no tokens, no
  `GIT_*` from the caller), finds `git` only on PATH entries outside every workspace,
  and starts in the checked workspace directory (`/proc/self/fd/N`).
- Before anything runs, the repository is resolved once (`rev-parse`) and checked:
  a work tree inside the root needs its git dir, common dir and object alternates
  inside the root too, so a planted `.git` file (`gitdir: /elsewhere`), a
  `core.worktree` or an alternates entry pointing out is refused. A repository above
  the root (a monorepo folder as workspace) is accepted only when no `.git` inside the
  root declared it. Bare repositories are never discovered (`safe.bareRepository`).
  The checked git dir and work tree are then pinned with `GIT_DIR`/`GIT_WORK_TREE`,
  so nothing is discovered again.
- Output is limited to the workspace: pathspec `.` from the workspace directory,
  `diff --relative`, and status paths re-rooted at the workspace (entries outside it
  are dropped).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .containment import GIT_DIR_NAME, open_root, root_cwd
from .errors import WorkspaceError
from .fdread import read_regular
from .limits import (
    GIT_ALTERNATES_MAX_BYTES,
    GIT_CHECKS_CACHED,
    GIT_CONFIG_SCAN_BYTES,
    GIT_OUTPUT_BYTES,
    GIT_STATUS_TIMEOUT_SECONDS,
)
from .osflags import DIR_FLAGS
from .workspaces import Workspace

_SAFE_CONFIG = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.untrackedCache=false",
    "diff.external=",
    "core.sshCommand=false",
    "credential.helper=",
    "protocol.allow=never",
    "safe.bareRepository=explicit",
)
_FILTER_KEY = re.compile(r"^filter\.(.+)\.(clean|smudge|process)$")


class GitError(WorkspaceError):
    pass


def git_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    source = os.environ if base is None else base
    env = {k: v for k, v in source.items() if not k.startswith("GIT_")}
    env.update(
        {
            "LC_ALL": "C",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_NO_LAZY_FETCH": "1",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_LITERAL_PATHSPECS": "1",
            "GIT_PAGER": "cat",
            "PAGER": "cat",
        }
    )
    return env


@dataclass(frozen=True)
class Repository:
    git_dir: str
    work_tree: str
    prefix: str  # the workspace directory relative to the work tree ("" at its top)
    common_dir: str = ""


def _identity(path: str) -> tuple[int, ...] | None:
    """What tells a path's entry apart from any other and from its own earlier self:
    device, inode and type, and for anything but a directory mtime, ctime (every
    metadata change) and size; None when absent. A directory's times change whenever an
    entry in it comes or goes (git writes `index.lock` into the git directory on every
    `git status` another program runs), and what the checks read inside it is
    fingerprinted file by file, so for a directory only being that same directory counts."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode):
        return (st.st_dev, st.st_ino, st.st_mode)
    return (st.st_dev, st.st_ino, st.st_mode, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


def _config_files(repo: Repository, env: Mapping[str, str]) -> list[str]:
    """Every file git reads configuration from here (the system file is off)."""
    home = env.get("HOME", "")
    xdg = env.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else "")
    files = [
        os.path.join(repo.git_dir, "config"),
        os.path.join(repo.git_dir, "config.worktree"),
        os.path.join(repo.common_dir, "config"),
    ]
    if home:
        files.append(os.path.join(home, ".gitconfig"))
    if xdg:
        files.append(os.path.join(xdg, "git", "config"))
    return files


Key = tuple[Any, ...]  # a cache key or a fingerprint: plain values, compared whole


def _fingerprint(here: str, repo: Repository, env: Mapping[str, str]) -> Key:
    """Everything the repository check and the filter-driver list were computed from:
    the `.git` entry of every directory from the workspace up to the work tree's top
    (discovery), the git and common directories and what they declare (`commondir`,
    alternates), and every configuration file. Equal fingerprints: the same answers."""
    dirs = [here]
    while dirs[-1] != repo.work_tree and dirs[-1] != "/":
        dirs.append(os.path.dirname(dirs[-1]))
    paths = [os.path.join(d, GIT_DIR_NAME) for d in dirs]
    for directory in dict.fromkeys((repo.git_dir, repo.common_dir)):
        paths += [
            directory,
            os.path.join(directory, "commondir"),
            os.path.join(directory, "objects", "info", "alternates"),
        ]
    paths += _config_files(repo, env)
    return tuple(_identity(path) for path in paths)


def _includes(repo: Repository, env: Mapping[str, str]) -> bool:
    """Whether a configuration file includes others (whose changes no fingerprint sees)."""
    for path in _config_files(repo, env):
        data = read_regular(None, path, GIT_CONFIG_SCAN_BYTES)
        if data is not None and b"include" in data.lower():
            return True
    return False


def _inside(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root + "/")


class GitReader:
    """Runs read-only git for one workspace view with the server's child-process rules.

    `env` gives the scrubbed child environment; `path_dirs` the PATH entries that may
    provide `git` (absolute, outside every workspace), both read per call so a changed
    PATH is honoured.
    """

    def __init__(
        self,
        env: Callable[[], Mapping[str, str]],
        path_dirs: Callable[[], Sequence[str]],
    ) -> None:
        self._env = env
        self._path_dirs = path_dirs
        # (workspace view, git, HOME) -> (fingerprint, repository, filter overrides): the
        # two extra git processes a call needed, kept while nothing they read changed.
        self._checked: OrderedDict[
            tuple[Any, ...], tuple[tuple[Any, ...], Repository, list[str]]
        ] = OrderedDict()
        self._lock = threading.Lock()

    def _git(self) -> tuple[str, dict[str, str]]:
        dirs = list(self._path_dirs())
        git = shutil.which("git", path=os.pathsep.join(dirs))
        if git is None:
            raise GitError("git is not installed (not found on PATH)")
        env = git_env(self._env())
        env["PATH"] = os.pathsep.join(dirs)
        return git, env

    def run(self, ws: Workspace, args: list[str], timeout: float) -> str:
        """Run a read-only git subcommand in the workspace; stdout, or one sentence."""
        return self._call(ws, args, timeout)[0]

    def status(self, ws: Workspace, timeout: float) -> tuple[str, list[str]]:
        """The branch header and porcelain v1 lines, paths relative to the workspace."""
        raw, repo = self._call(ws, ["status", "--porcelain=v1", "-b", "-z", "--", "."], timeout)
        return _render_status(raw, repo.prefix)

    def _call(self, ws: Workspace, args: list[str], timeout: float) -> tuple[str, Repository]:
        git, env = self._git()
        parts = () if ws.confined else tuple(p for p in ws.base.split("/") if p)
        with root_cwd(ws, parts) as cwd:
            repo, overrides = self._checked_repository(git, env, cwd, ws)
            env = {**env, "GIT_DIR": repo.git_dir, "GIT_WORK_TREE": repo.work_tree}
            argv = [git, "--no-pager", "--literal-pathspecs"]
            for item in _SAFE_CONFIG:
                argv += ["-c", item]
            argv += overrides
            out = _run([*argv, *args], cwd, env, timeout)
        if out.returncode != 0:
            raise _failure(out)
        return out.stdout.decode("utf-8", "replace"), repo

    def _checked_repository(
        self, git: str, env: dict[str, str], cwd: str, ws: Workspace
    ) -> tuple[Repository, list[str]]:
        """The repository check and the filter overrides: from the cache while the
        fingerprint they were computed from is unchanged, else computed (two git runs)."""
        here = os.path.realpath(cwd)
        key = (
            here,
            ws.root,
            ws.confined,
            (ws.anchor or ws).root,
            git,
            env.get("HOME"),
            env.get("XDG_CONFIG_HOME"),
        )
        with self._lock:
            cached = self._checked.get(key)
        if cached is not None and _fingerprint(here, cached[1], env) == cached[0]:
            return cached[1], cached[2]
        repo = self._repository(git, env, cwd, ws)
        found = {**env, "GIT_DIR": repo.git_dir, "GIT_WORK_TREE": repo.work_tree}
        overrides = self._filter_overrides(git, found, cwd)
        if not _includes(repo, env):
            with self._lock:
                self._checked[key] = (_fingerprint(here, repo, env), repo, overrides)
                self._checked.move_to_end(key)
                while len(self._checked) > GIT_CHECKS_CACHED:
                    self._checked.popitem(last=False)
        return repo, overrides

    def _repository(self, git: str, env: dict[str, str], cwd: str, ws: Workspace) -> Repository:
        argv = [git, "--no-pager"]
        for item in _SAFE_CONFIG:
            argv += ["-c", item]
        argv += [
            "rev-parse",
            "--path-format=absolute",
            "--git-dir",
            "--git-common-dir",
            "--show-toplevel",
        ]
        out = _run(argv, cwd, env, GIT_STATUS_TIMEOUT_SECONDS)
        if out.returncode != 0:
            raise _failure(out)
        lines = out.stdout.decode("utf-8", "surrogateescape").splitlines()
        if len(lines) != 3:
            raise GitError("the workspace is not inside a git work tree")
        git_dir, common_dir, top = (os.path.realpath(line) for line in lines)
        here = os.path.realpath(cwd)  # the kernel's name for the checked directory
        if not _inside(here, top):
            raise GitError(
                "the repository's work tree is outside the workspace (core.worktree); "
                "git tools are refused"
            )
        if ws.confined:
            self._check_declared_inside(ws, git_dir, common_dir, top)
        prefix = "" if here == top else here[len(top) :].strip("/")
        return Repository(git_dir, top, prefix, common_dir)

    @staticmethod
    def _check_declared_inside(ws: Workspace, git_dir: str, common_dir: str, top: str) -> None:
        boundary = (ws.anchor or ws).root
        refused = GitError(
            "the repository's git directory or work tree is declared inside the workspace "
            "but resolves outside it; git tools are refused"
        )
        if _inside(top, boundary):
            for path in (git_dir, common_dir, *_alternates(git_dir), *_alternates(common_dir)):
                if not _inside(path, boundary):
                    raise refused
            return
        # The work tree is above the root: legitimate only if no `.git` between the
        # workspace directory and the root pointed git there.
        if _declares_git_inside(ws):
            raise refused

    @staticmethod
    def _filter_overrides(git: str, env: dict[str, str], cwd: str) -> list[str]:
        """`-c filter.<name>.<key>=` for every filter driver the repository configures."""
        out = _run(
            [git, "config", "--includes", "--name-only", "--get-regexp", r"^filter\."],
            cwd,
            env,
            GIT_STATUS_TIMEOUT_SECONDS,
        )
        overrides = []
        for line in out.stdout.decode("utf-8", "replace").splitlines():
            match = _FILTER_KEY.match(line.strip())
            if match:
                overrides += ["-c", f"filter.{match.group(1)}.{match.group(2)}="]
                overrides += ["-c", f"filter.{match.group(1)}.required=false"]
        return overrides


def _alternates(git_dir: str) -> list[str]:
    """Object directories `objects/info/alternates` adds (each read from outside is a leak)."""
    path = os.path.join(git_dir, "objects", "info", "alternates")
    real = os.path.realpath(path)
    if real != path:
        return [real]  # reached through a link: judged by where it leads, never read
    data = read_regular(None, path, GIT_ALTERNATES_MAX_BYTES)
    if data is None:
        return []
    found = []
    for raw in data.decode("utf-8", "replace").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith('"'):
            with contextlib.suppress(ValueError):
                line = json.loads(line)
        found.append(os.path.realpath(os.path.join(git_dir, "objects", line)))
    return found


def _declares_git_inside(ws: Workspace) -> bool:
    """Whether a `.git` entry exists in the workspace directory or any parent up to the root."""
    parts = ws.subpath.parts if ws.subpath else ()
    anchor = ws.anchor or ws
    fd = open_root(anchor)
    try:
        fds = [fd]
        for part in parts:
            fds.append(os.open(part, DIR_FLAGS, dir_fd=fds[-1]))
        for dir_fd in fds:
            try:
                os.stat(GIT_DIR_NAME, dir_fd=dir_fd, follow_symlinks=False)
                return True
            except FileNotFoundError:
                continue
        return False
    except OSError:
        return True
    finally:
        for dir_fd in fds:
            os.close(dir_fd)


def _run(
    argv: list[str], cwd: str, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[bytes]:
    # Not `subprocess.run(timeout=...)`: after the pipes close it polls for the exit with
    # sleeps (0.6 ms a call here, a tenth of a `git status`); a timer kills the process
    # group instead, and the wait blocks.
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError as exc:
        raise GitError(f"git could not start ({exc.strerror})") from None
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)

    timer = threading.Timer(timeout, expire)
    timer.start()
    try:
        out, err = proc.communicate()
    finally:
        timer.cancel()
    if expired.is_set():
        raise GitError(f"git took longer than {timeout:g} s; try a narrower path")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _failure(out: subprocess.CompletedProcess[bytes]) -> GitError:
    message = out.stderr.decode("utf-8", "replace").strip()
    if "not a git repository" in message:
        return GitError("the workspace is not a git repository")
    if "dubious ownership" in message:
        return GitError("git refuses this repository: it is owned by another user (safe.directory)")
    if "must be run in a work tree" in message:
        return GitError("the workspace is a bare git repository, which the git tools do not read")
    first = message.splitlines()[-1] if message else f"git exited with {out.returncode}"
    return GitError(f"git failed: {first.removeprefix('fatal: ').removeprefix('error: ')}")


_NEEDS_QUOTES = re.compile(r'[\x00-\x1f\x7f"\\]|^\s|\s$|^$')


def quote_path(path: str) -> str:
    """A path as one unambiguous token: JSON-quoted when it has controls, quotes or edges."""
    return json.dumps(path, ensure_ascii=False) if _NEEDS_QUOTES.search(path) else path


def _render_status(raw: str, prefix: str) -> tuple[str, list[str]]:
    """`status -z` re-rooted at the workspace: (branch, lines); entries outside are dropped."""
    fields = raw.split("\0")
    branch = "(unknown)"
    lines: list[str] = []
    lead = prefix + "/" if prefix else ""

    def local(path: str) -> str | None:
        if not lead:
            return path
        return path[len(lead) :] if path.startswith(lead) else None

    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if not entry:
            continue
        if entry.startswith("## "):
            branch = entry[3:]
            continue
        code, path = entry[:2], entry[3:]
        old = None
        if code[0] in "RC" or code[1] in "RC":
            old = fields[i] if i < len(fields) else None
            i += 1
        new_local = local(path)
        if new_local is None:
            continue
        old_local = local(old) if old is not None else None
        if old_local is not None:
            lines.append(f"{code} {quote_path(old_local)} -> {quote_path(new_local)}")
        else:
            lines.append(f"{code} {quote_path(new_local)}")
    return branch, lines


def head_tail(text: str, limit: int = GIT_OUTPUT_BYTES) -> str:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    half = limit // 2
    head = data[:half].decode("utf-8", "ignore")
    tail = data[-half:].decode("utf-8", "ignore")
    return f"{head}\n... [{len(data) - 2 * half} bytes omitted] ...\n{tail}"
