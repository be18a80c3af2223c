"""The ripgrep engine: the `rg` binary with arguments that reproduce our rules exactly.

- `--no-config`: no user configuration file can change the behaviour.
- `--hidden` plus `--glob=!<dir>/` for each ignored directory (dot files are ordinary
  files for us; only the named directories are skipped).
- `--no-follow` (the default, spelled out): symlinks are never followed.
- `.gitignore` only, from the search path down (`--no-require-git --no-ignore-parent
  --no-ignore-dot --no-ignore-exclude --no-ignore-global`); the ancestors' rules inside
  the workspace come in through `--ignore-file`, already rebased to the root.
- `--text`: rg would stop at the first NUL anywhere in a file; our rule is "NUL in the
  first 8 KiB", so the binary check happens here, on files that produced output.
- Order, early stop and every core: answers list files in rg's `--sort path` order
  (per directory, by name bytes), but a sorted rg runs on one thread. So grep starts
  two at once: a sorted rg (the probe) and a parallel `rg --files-with-matches`, and
  the first to end wins. A query that fills `maxResults` before the scan ends (the
  common case) is answered from the probe. A probe with no match after 12 ms, or whose
  pace projects a full answer later than 1.5 s, is stopped (it would only slow the
  scan). Otherwise, when the
  scan ends first, the probe is killed, the files it finished are kept, and the
  parallel scan's matching files after the last of them
  are sorted here and searched in that order (rg over them, in growing chunks) until
  the answer is full: a full scan runs on every core, and only the matching files are
  read twice.
- Include globs are applied here, not passed as `--glob`: rg's globs are overrides
  that beat `.gitignore` and can whitelist an excluded directory (verified: `*.[!t]*`
  re-included `.workspace-mcp/` and `*.log` files).
- User input never lands where it could become a flag: the pattern follows `-e` and the
  path comes after `--`.
- Only whole lines within the first 1 MiB count (`absolute_offset` + line length).
- rg walks by name, so a directory swapped for a symlink mid-walk can make it read
  outside the root. Nothing it reports is trusted: rg starts in the checked root
  (`/proc/self/fd/N`), every reported file is re-opened through the containment walk,
  and answers show only lines read from that verified open that equal what rg saw; a
  listed name must exist as a regular file in its verified directory.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..containment import locate, root_cwd
from ..errors import InvalidArgumentError, WorkspaceError
from ..limits import (
    ANSWER_BYTES,
    BINARY_SNIFF_BYTES,
    DIR_FD_CACHE,
    GREP_BYTES_PER_FILE,
    GREP_CHUNK_MAX_FILES,
    GREP_FIRST_CHUNK_FILES,
    GREP_PROBE_CHECK_SECONDS,
    GREP_PROBE_FIRST_MATCH_SECONDS,
    GREP_PROBE_PROJECTED_SECONDS,
    GREP_TIME_BUDGET_SECONDS,
    IGNORED_DIRS,
    PIPE_DRAIN_GRACE_SECONDS,
    RG_STDERR_KEPT_BYTES,
)
from ..osflags import DIR_FLAGS
from ..textio import read_range
from ..workspaces import Workspace
from .python_engine import SearchTimeout, lines_searched_in, read_head
from .results import (
    GrepQuery,
    GrepResult,
    ListQuery,
    ListResult,
    add_listed_file,
    listing_base,
    take,
)
from .rules import compile_glob, fs_sort_key


def find_rg() -> str | None:
    """The `rg` the `ripgrep` wheel installed next to this interpreter, else one on PATH.

    Clients often launch us (via uvx) without the environment's scripts dir on PATH.
    """
    candidates = [
        os.path.join(os.path.dirname(sys.executable), "rg"),
        os.path.join(sysconfig.get_path("scripts"), "rg"),
    ]
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("rg")


def _base_args(
    rg: str, no_ignore: bool, ignore_file: str | None, *, ordered: bool = True
) -> list[str]:
    args = [rg, "--no-config", "--hidden", "--no-follow"]
    if ordered:
        args += ["--sort", "path"]
    args += [f"--glob=!{name}/" for name in IGNORED_DIRS]
    if no_ignore:
        args.append("--no-ignore")
    else:
        args += [
            "--no-require-git",
            "--no-ignore-parent",
            "--no-ignore-dot",
            "--no-ignore-exclude",
            "--no-ignore-global",
        ]
        if ignore_file:
            args.append(f"--ignore-file={ignore_file}")
    return args


@contextmanager
def _ignore_file(rules: list[str], no_ignore: bool) -> Iterator[str | None]:
    if no_ignore or not rules:
        yield None
        return
    fd, path = tempfile.mkstemp(prefix="awm-ignore-", suffix=".gitignore")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write("\n".join(rules) + "\n")
        yield path
    finally:
        os.unlink(path)


def _spawn(args: list[str], cwd: str) -> subprocess.Popen:
    # rg is run by absolute path and reads no configuration; it needs no PATH or secrets.
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
    proc = subprocess.Popen(
        args,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    # A tree full of unreadable entries makes rg write an error per entry; a full stderr
    # pipe would stall it, so a thread drains it and keeps only the start.
    proc._awm_stderr = bytearray()  # type: ignore[attr-defined]
    drain = threading.Thread(target=_drain_stderr, args=(proc,), daemon=True)
    drain.start()
    proc._awm_drain = drain  # type: ignore[attr-defined]
    return proc


def _drain_stderr(proc: subprocess.Popen) -> None:
    assert proc.stderr is not None
    kept: bytearray = proc._awm_stderr  # type: ignore[attr-defined]
    with contextlib.suppress(OSError, ValueError):
        for chunk in iter(lambda: proc.stderr.read1(1 << 16), b""):  # type: ignore[union-attr,attr-defined]
            room = RG_STDERR_KEPT_BYTES - len(kept)
            if room > 0:
                kept += chunk[:room]


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        _kill_group(proc)
    proc.wait()
    if proc.stdout:
        proc.stdout.close()
    if proc.stderr:
        proc.stderr.close()


def _regex_error(stderr: bytes) -> str | None:
    """The sentence for a pattern rg could not parse, else None.

    Any other message is about one entry (unreadable, vanished mid-walk) and is
    skipped, as the Python engine skips such entries: rg still searched the rest, and
    its messages name what it saw, which mid-swap may be outside the root.
    """
    text = stderr.decode("utf-8", "replace").strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines and lines[0].startswith("regex parse error"):
        detail = next((line for line in reversed(lines) if line.startswith("error:")), lines[-1])
        return f"invalid regex: {detail.removeprefix('error:').strip()}"
    return None


def _decode(field: dict) -> bytes:
    if "text" in field:
        return field["text"].encode("utf-8", "surrogatepass")
    return base64.b64decode(field.get("bytes", ""))


def _read(ws: Workspace, rel: str, size: int) -> bytes | None:
    """Up to `size` bytes of a file rg reported, read through the containment walk.

    rg's own traversal never follows symlinks, but the tree can change between rg
    listing a path and us reading it; `locate()` makes that read safe regardless.
    """
    try:
        with locate(ws, "/" + rel if not ws.confined else rel) as loc:
            data, _ = read_range(loc, 0, size)
            return data
    except WorkspaceError:
        return None


def _is_binary(ws: Workspace, rel: str) -> bool:
    head = _read(ws, rel, BINARY_SNIFF_BYTES)
    return head is None or b"\x00" in head


def grep(rg: str, ws: Workspace, start: str, query: GrepQuery, ancestor: list[str]) -> GrepResult:
    include = compile_glob(query.include)
    result = GrepResult()
    deadline = time.monotonic() + GREP_TIME_BUDGET_SECONDS
    with _ignore_file(ancestor, query.no_ignore) as ignore_file, root_cwd(ws) as cwd:
        base = _base_args(rg, query.no_ignore, ignore_file)
        unsorted = _base_args(rg, query.no_ignore, ignore_file, ordered=False)
        pattern = ["--text"] + (["--ignore-case"] if query.ignore_case else [])
        pattern += ["-e", query.pattern, "--"]
        where = start or "."
        sorted_args = [*base, "--json", "--line-number", *pattern, where]
        probe = _Stream(
            ws,
            include,
            sorted_args,
            cwd,
            deadline - time.monotonic(),
            filled=lambda: result.matches / query.max_results,
        )
        # Whichever ends first wins: a probe that fills the answer, or the parallel scan
        # (which then stops the probe).
        scan = _MatchingFiles(
            [*unsorted, "--files-with-matches", "--null", *pattern, where],
            cwd,
            deadline,
            on_done=probe.expire,
        )
        try:
            done_upto = probe.take_in_order(result, query)
            if not probe.expired or probe.stopped:
                return result
            later = [
                rel for rel in scan.wait()
                if (include is None or include.matches(rel))
                and (done_upto is None or _path_key(rel) > done_upto)
            ]  # fmt: skip
        finally:
            scan.stop()
        # The matching files after the probe's last, searched in path order until the
        # answer is full.
        later.sort(key=_path_key)
        search = [rg, "--no-config", "--json", "--line-number", "-j1", *pattern]
        for chunk in _growing_chunks(later):
            stream = _Stream(ws, include, [*search, *chunk], cwd, deadline - time.monotonic())
            stream.take_in_order(result, query)
            if stream.expired:
                raise _timeout()
            if stream.stopped:
                break
    return result


def _growing_chunks(files: list[str]) -> Iterator[list[str]]:
    """Small first (an answer that fills early costs little), doubling to a cap that
    keeps one command line far below ARG_MAX."""
    size, at = GREP_FIRST_CHUNK_FILES, 0
    while at < len(files):
        yield files[at : at + size]
        at += size
        size = min(size * 2, GREP_CHUNK_MAX_FILES)


class _MatchingFiles:
    """A parallel `rg --files-with-matches` running in the background; its NUL-separated
    output is drained by a thread so its pipe never stalls it."""

    def __init__(self, args: list[str], cwd: str, deadline: float, on_done) -> None:
        self.deadline = deadline
        self._on_done = on_done
        self.proc = _spawn(args, cwd)
        self._out = bytearray()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        with contextlib.suppress(OSError, ValueError):
            for chunk in iter(lambda: self.proc.stdout.read1(1 << 16), b""):  # type: ignore[union-attr,attr-defined]
                self._out += chunk
        if self.proc.wait() == 0 or self.proc.returncode == 1:
            self._on_done()  # complete (0: matches, 1: none): the probe is overtaken

    def wait(self) -> list[str]:
        # Joining the reader (rg's stdout at EOF) rather than `Popen.wait(timeout)`,
        # which polls with sleeps of up to 50 ms.
        self._reader.join(max(0.0, self.deadline - time.monotonic()))
        if self._reader.is_alive():
            raise _timeout()
        self.proc.wait()
        names = [os.fsdecode(raw) for raw in bytes(self._out).split(b"\x00") if raw]
        return [name[2:] if name.startswith("./") else name for name in names]

    def stop(self) -> None:
        _stop(self.proc)
        self._reader.join(PIPE_DRAIN_GRACE_SECONDS)


class _Stream:
    """One rg process and its JSON stream, with the checks every reported file passes:
    the include glob, the binary sniff, the 1 MiB line limit, and the lines re-read
    through the containment walk."""

    def __init__(
        self,
        ws: Workspace,
        include,
        args: list[str],
        cwd: str,
        seconds: float,
        filled: Callable[[], float] | None = None,
    ) -> None:
        """rg is killed after `seconds` (or by `expire()`). A probe (`filled` gives the
        share of the answer collected so far) is also killed when it is not worth its
        CPU beside the parallel scan: no match at all after GREP_PROBE_FIRST_MATCH_SECONDS,
        or, projecting its pace, a full answer later than GREP_PROBE_PROJECTED_SECONDS."""
        self.ws = ws
        self.include = include
        self.expired = False  # the timer killed rg before it finished
        self.stopped = False  # we stopped reading: the answer was full
        self.proc = _spawn(args, cwd)
        self._started = time.monotonic()
        self._end = self._started + seconds
        self._filled = filled
        first = min(seconds, GREP_PROBE_FIRST_MATCH_SECONDS) if filled else seconds
        self._timer = threading.Timer(max(0.0, first), self._check)
        self._timer.start()

    def _check(self) -> None:
        now = time.monotonic()
        if now >= self._end or self._filled is None:
            self.expire()
            return
        share = self._filled()
        elapsed = now - self._started
        if share <= 0 or elapsed / share > GREP_PROBE_PROJECTED_SECONDS:
            self.expire()
            return
        self._timer = threading.Timer(min(GREP_PROBE_CHECK_SECONDS, self._end - now), self._check)
        self._timer.start()

    def expire(self) -> None:
        if self.proc.poll() is None:
            self.expired = True
            _kill_group(self.proc)

    def files(self) -> Iterator[tuple[str, list[int], dict[int, str]]]:
        """(path, matched line indexes, rg's text of each) per file rg finished."""
        assert self.proc.stdout is not None
        current = ""
        skip = False
        matched: list[int] = []
        texts: dict[int, str] = {}
        for raw in self.proc.stdout:
            try:
                message = json.loads(raw)
            except ValueError:
                break  # the last line of a killed rg
            kind = message["type"]
            data = message.get("data", {})
            if kind == "begin":
                current = os.fsdecode(_decode(data["path"]))
                current = current[2:] if current.startswith("./") else current
                skip = (
                    self.include is not None and not self.include.matches(current)
                ) or _is_binary(self.ws, current)
                matched, texts = [], {}
            elif kind == "match" and not skip:
                line = _decode(data["lines"])
                if data["absolute_offset"] + len(line) > GREP_BYTES_PER_FILE:
                    continue  # only whole lines within the first 1 MiB are searched
                index = data["line_number"] - 1
                matched.append(index)
                texts[index] = line.decode("utf-8", "replace").rstrip("\n")
            elif kind == "end" and not skip and matched:
                yield current, matched, texts
                matched = []

    def take_in_order(self, result: GrepResult, query: GrepQuery) -> list[bytes] | None:
        """Take files as rg finishes them (in order); the sort key of the last one."""
        last = None
        try:
            for rel, matched, texts in self.files():
                # Only matches whose line, read through the containment walk, is the line
                # rg saw: what rg read elsewhere mid-swap never reaches the answer.
                lines = _verified_lines(self.ws, rel)
                kept = [i for i in matched if lines and i < len(lines) and lines[i] == texts[i]]
                last = _path_key(rel)
                if not take(result, query, rel, kept, lines or []):
                    self.stopped = True
                    return last
            self._finish()
        finally:
            self._timer.cancel()
            _stop(self.proc)
        return last

    def _finish(self) -> None:
        """rg ran to the end: a regex it could not parse is the caller's mistake."""
        proc = self.proc
        proc.wait()
        proc._awm_drain.join(PIPE_DRAIN_GRACE_SECONDS)  # type: ignore[attr-defined]
        if not self.expired and proc.returncode == 2:
            message = _regex_error(bytes(proc._awm_stderr))  # type: ignore[attr-defined]
            if message:
                raise InvalidArgumentError(message)


def _path_key(rel: str) -> list[bytes]:
    """rg's `--sort path` order for a whole path: component by component, name bytes."""
    return [fs_sort_key(part) for part in rel.split("/")]


def _timeout() -> SearchTimeout:
    return SearchTimeout(
        f"the search took longer than {GREP_TIME_BUDGET_SECONDS:g} s; narrow the path or pattern"
    )


def _verified_lines(ws: Workspace, rel: str) -> list[str] | None:
    """The file's searched lines, read through the containment walk; None if unreadable."""
    data = _read(ws, rel, GREP_BYTES_PER_FILE + 1)
    return lines_searched_in(data) if data is not None else None


class _DirCache:
    """Directory fds opened through the containment walk, reused for their files.

    rg lists files grouped by directory, so one `locate()` per directory (instead of
    one per file) keeps the binary sniff cheap without giving up the walk's guarantee.
    """

    def __init__(self, ws: Workspace, size: int = DIR_FD_CACHE) -> None:
        self._ws = ws
        self._size = size
        self._fds: dict[str, int] = {}

    def head(self, rel: str, size: int) -> bytes | None:
        directory, _, name = rel.rpartition("/")
        fd = self._fds.get(directory)
        if fd is None:
            try:
                target = directory or "."
                loc = locate(self._ws, target if self._ws.confined else "/" + target)
            except WorkspaceError:
                return None
            with loc:
                try:
                    fd = os.open(
                        loc.name or ".",
                        DIR_FLAGS,
                        dir_fd=loc.dir_fd,
                    )
                except OSError:
                    return None
            if len(self._fds) >= self._size:
                os.close(self._fds.pop(next(iter(self._fds))))
            self._fds[directory] = fd
        return read_head(fd, name, size)

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


def list_files(
    rg: str,
    ws: Workspace,
    start: str,
    start_is_dir: bool,
    query: ListQuery,
    ancestor: list[str],
    budget: int = ANSWER_BYTES,
) -> ListResult:
    pattern = compile_glob(query.pattern)
    result = ListResult()
    base = listing_base(start, start_is_dir)
    cache = _DirCache(ws)
    with _ignore_file(ancestor, query.no_ignore) as ignore_file:
        args = _base_args(rg, query.no_ignore, ignore_file)
        args += ["--files", "--null", f"--max-depth={query.max_depth}", "--", start or "."]
        with root_cwd(ws) as cwd:
            proc = _spawn(args, cwd)
        try:
            if _collect_listing(proc, result, query, pattern, base, cache, budget):
                proc.wait()
        finally:
            cache.close()
            _stop(proc)
    return result


def _collect_listing(proc, result, query, pattern, base, cache: _DirCache, budget: int) -> bool:
    """Feed rg's NUL-separated names to the shared collector; False if we stopped early."""
    assert proc.stdout is not None
    pending = b""
    while True:
        chunk = proc.stdout.read1(1 << 16)
        if not chunk:
            return True
        pending += chunk
        *names, pending = pending.split(b"\x00")
        for raw in names:
            rel = os.fsdecode(raw)
            rel = rel[2:] if rel.startswith("./") else rel
            if pattern is not None and not pattern.matches(rel):
                continue

            def binary(rel: str = rel) -> bool | None:
                head = cache.head(rel, BINARY_SNIFF_BYTES)
                return None if head is None else b"\x00" in head

            if not add_listed_file(result, query, rel, base, binary, budget):
                return False
