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
  (per directory, by name bytes), but a sorted rg runs on one thread. So grep starts a
  parallel `rg --json` (the scan) and, 5 and 15 ms in, looks at its pace: when a sorted
  rg (the probe) would likely fill `maxResults` before the scan ends (a dense query),
  the probe starts beside it and the first to end wins; a sparse query never pays for
  a probe (on two cores it would take one from the scan). The scan's output, in any
  order, is kept bounded: only the first files in path order that the answer can use.
  When the scan wins, the probe is killed, the files it finished are kept, and the
  scan's files after the last of them are taken in path order: sorting happens here,
  not in rg, so a full scan runs on every core and nothing is searched twice (issue 36).
  A probe with no match 12 ms after its start, or whose pace projects a full answer
  later than the last full scan of the same tree took, is stopped.
- Include globs are applied here, not passed as `--glob`: rg's globs are overrides
  that beat `.gitignore` and can whitelist an excluded directory (verified: `*.[!t]*`
  re-included `.workspace-mcp/` and `*.log` files).
- User input never lands where it could become a flag: the pattern follows `-e` and the
  path comes after `--`.
- Only whole lines within the first 1 MiB count (`absolute_offset` + line length).
- rg walks by name, so a directory swapped for a symlink mid-walk can make it read
  outside the root. Nothing it reports is trusted: rg starts in the checked root
  (`/proc/self/fd/N`), every reported file is re-opened through the containment walk,
  and answers show only lines read from that verified open that equal what rg saw (the
  same read sniffs for binary; without context lines it stops after the last match);
  a listed name must exist as a regular file in its verified directory.
"""

from __future__ import annotations

import base64
import bisect
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
from dataclasses import dataclass

from ..containment import locate, root_cwd
from ..errors import InvalidArgumentError, WorkspaceError
from ..limits import (
    ANSWER_BYTES,
    BINARY_SNIFF_BYTES,
    DIR_FD_CACHE,
    GREP_BYTES_PER_FILE,
    GREP_PROBE_CHECK_SECONDS,
    GREP_PROBE_FIRST_MATCH_SECONDS,
    GREP_PROBE_LOOKS_SECONDS,
    GREP_PROBE_MARGIN,
    GREP_PROBE_PATIENCE_SHARE,
    GREP_PROBE_PROJECTED_SECONDS,
    GREP_SCAN_SPARE_MATCHES,
    GREP_SCAN_TIMES_KEPT,
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
    tree = (ws.name, ws.root, start, query.no_ignore, tuple(ancestor))
    with _ignore_file(ancestor, query.no_ignore) as ignore_file, root_cwd(ws) as cwd:
        base = _base_args(rg, query.no_ignore, ignore_file)
        unsorted = _base_args(rg, query.no_ignore, ignore_file, ordered=False)
        pattern = ["--text"] + (["--ignore-case"] if query.ignore_case else [])
        pattern += ["-e", query.pattern, "--"]
        where = start or "."
        # The parallel scan runs first; a sorted probe starts beside it only when the
        # scan's early pace says the probe would fill the answer before the scan ends
        # (on two cores each takes one, so a probe that loses slows the scan). Then
        # whichever ends first wins; the scan's end stops the probe.
        scan = _Scan(
            ws,
            include,
            # Line-buffered: its pace is read while it runs (a block-buffered rg holds
            # back a sparse query's first matches, which would look like none).
            [*unsorted, "--json", "--line-buffered", "--line-number", *pattern, where],
            cwd,
            deadline,
            needed=query.max_results + 1,
            context=query.context,
        )
        probe = None
        done_upto = None
        try:
            expected = _SCAN_SECONDS.get(tree, GREP_PROBE_PROJECTED_SECONDS)
            for look in GREP_PROBE_LOOKS_SECONDS:
                if scan.ended_within(look - scan.elapsed()):
                    break
                # A scan still running at twice what was expected (a cold disk, a tree
                # never scanned) will likely run as long again.
                expected = max(expected, 2 * scan.elapsed())
                if scan.worth_a_probe(query.max_results, expected):
                    probe = _Stream(
                        ws,
                        include,
                        [*base, "--json", "--line-number", *pattern, where],
                        cwd,
                        deadline - time.monotonic(),
                        filled=lambda: result.matches / query.max_results,
                        give_up_after=expected,
                        # Started because the scan's pace promises matches: time to find
                        # the first in path order, a share of what the scan has left.
                        patience=max(
                            GREP_PROBE_FIRST_MATCH_SECONDS,
                            GREP_PROBE_PATIENCE_SHARE * (expected - scan.elapsed()),
                        ),
                    )
                    scan.on_done(probe.expire)
                    break
            if probe is not None:
                done_upto = probe.take_in_order(result, query)
                if not probe.expired or probe.stopped:
                    return result
            found = scan.wait()
            _remember_scan(tree, scan.seconds)
        finally:
            scan.stop()
    # The scan's files after the probe's last, in path order, until the answer is full.
    for key, file, lines in found:
        if done_upto is not None and key <= done_upto:
            continue
        if not _take_verified(ws, result, query, file, lines):
            break
    return result


# How long the last full parallel scan of a tree took: a probe projected to fill its
# answer later than that only slows the scan it runs beside (two cores: each takes one).
_SCAN_SECONDS: dict[tuple, float] = {}


def _remember_scan(tree: tuple, seconds: float) -> None:
    _SCAN_SECONDS.pop(tree, None)
    _SCAN_SECONDS[tree] = seconds
    while len(_SCAN_SECONDS) > GREP_SCAN_TIMES_KEPT:
        del _SCAN_SECONDS[next(iter(_SCAN_SECONDS))]


def _take_verified(
    ws: Workspace,
    result: GrepResult,
    query: GrepQuery,
    file: _Found,
    lines: list[str] | None = None,
) -> bool:
    """One file's matches, only those whose line, read again through the containment
    walk (`lines`, when already read so), is the line rg saw: what rg read elsewhere
    mid-swap never reaches the answer. False when the answer is full."""
    rel, matched, texts = file.rel, file.matched, file.texts
    if lines is None:
        lines = _verified_lines(ws, rel, file.needs(query.context))
    kept = [i for i in matched if lines and i < len(lines) and lines[i] == texts[i]]
    return take(result, query, rel, kept, lines or [])


@dataclass
class _Found:
    """One file rg reported: the matched line indexes, rg's text of each, and where the
    last matched line ends (bytes), which is all a re-check without context reads."""

    rel: str
    matched: list[int]
    texts: dict[int, str]
    end: int

    def needs(self, context: int) -> int:
        """Bytes to read to re-check it (and sniff it): with context lines, all that is
        searched; without, up to the last match (cut at a newline, so the lines before
        decode exactly as in the whole file)."""
        if context:
            return GREP_BYTES_PER_FILE + 1
        return max(self.end, BINARY_SNIFF_BYTES)


class _Files:
    """rg's JSON messages turned into (path, matched line indexes, rg's text of each)
    per file, with the include glob and the 1 MiB line limit; binary files are left out
    by the re-check, which reads the first 8 KiB whatever else it reads."""

    def __init__(self, include) -> None:
        self.include = include
        self.current = ""
        self.skip = False
        self.matched: list[int] = []
        self.texts: dict[int, str] = {}
        self.end = 0

    def feed(self, raw: bytes) -> _Found | None:
        """The file that `raw` completes, if any; ValueError on a line that is not JSON
        (the last line of a killed rg)."""
        message = json.loads(raw)
        kind = message["type"]
        data = message.get("data", {})
        if kind == "begin":
            current = os.fsdecode(_decode(data["path"]))
            self.current = current[2:] if current.startswith("./") else current
            self.skip = self.include is not None and not self.include.matches(self.current)
            self.matched, self.texts, self.end = [], {}, 0
        elif kind == "match" and not self.skip:
            line = _decode(data["lines"])
            if data["absolute_offset"] + len(line) > GREP_BYTES_PER_FILE:
                return None  # only whole lines within the first 1 MiB are searched
            index = data["line_number"] - 1
            self.end = data["absolute_offset"] + len(line)
            self.matched.append(index)
            self.texts[index] = line.decode("utf-8", "replace").rstrip("\n")
        elif kind == "end" and not self.skip and self.matched:
            done = _Found(self.current, self.matched, self.texts, self.end)
            self.matched = []
            return done
        return None


class _Scan:
    """A parallel `rg --json` running in the background. A thread reads its output and
    keeps, of the files it reports in any order, only the first ones in path order that
    an answer can use (`needed` matches, plus spares), so memory stays bounded whatever
    the query matches. While the files kept hold fewer matches than that, each new one
    is read through the containment walk there and then (the binary sniff and the
    re-check in one read), so on a sparse full scan that work overlaps rg's."""

    def __init__(
        self,
        ws: Workspace,
        include,
        args: list[str],
        cwd: str,
        deadline: float,
        needed: int,
        context: int,
    ) -> None:
        self.ws = ws
        self.context = context
        self.deadline = deadline
        self.needed = needed + GREP_SCAN_SPARE_MATCHES
        self._done: Callable[[], None] | None = None
        self._done_lock = threading.Lock()
        self._complete = False
        self._files = _Files(include)
        self.kept: list[tuple[list[bytes], _Found, list[str] | None]] = []
        self._count = 0
        self.seen = 0  # matches reported so far, kept or not: the scan's pace
        self._started = time.monotonic()
        self.seconds = 0.0
        self.proc = _spawn(args, cwd)
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def ended_within(self, seconds: float) -> bool:
        self._reader.join(max(0.0, seconds))
        return not self._reader.is_alive()

    def worth_a_probe(self, wanted: int, expected: float) -> bool:
        """Whether a sorted single-threaded rg would likely fill `wanted` matches well
        before this scan (expected to take `expected` s in all) ends: at the scan's pace
        so far, halved (one thread against the scan's two), within GREP_PROBE_MARGIN of
        the time the scan has left (matches cluster, and a probe that loses slows it)."""
        seen, elapsed = self.seen, self.elapsed()
        if seen == 0:
            return False
        return 2 * elapsed * wanted / seen < GREP_PROBE_MARGIN * (expected - elapsed)

    def on_done(self, callback: Callable[[], None]) -> None:
        """Call `callback` once the scan is complete (now, if it already is); the lock
        closes the gap where the reader has looked for a callback and not yet ended."""
        with self._done_lock:
            self._done = callback
            complete = self._complete
        if complete:
            callback()

    def _drain(self) -> None:
        """Read rg's output to its end whatever one file does: a reader that stopped
        would leave rg blocked on a full pipe until the time budget ran out."""
        assert self.proc.stdout is not None
        # ValueError: the pipe closed under the loop (`stop()` after the answer was full).
        with contextlib.suppress(OSError, ValueError):
            for raw in self.proc.stdout:
                if raw.startswith(b'{"type":"match"'):
                    self.seen += 1
                try:
                    done = self._files.feed(raw)
                    if done is not None:
                        self._keep(done)
                except ValueError:
                    continue  # the last line of a killed rg
                except (WorkspaceError, OSError):
                    continue  # the file changed under the scan: it is not kept
        self.seconds = time.monotonic() - self._started
        complete = self.proc.wait() in (0, 1)  # 0: matches, 1: none
        with self._done_lock:
            self._complete = complete
            callback = self._done
        if complete and callback is not None:
            callback()  # the probe is overtaken

    def _keep(self, file: _Found) -> None:
        key = _path_key(file.rel)
        if len(self.kept) > 1 and self._count >= self.needed and key > self.kept[-1][0]:
            return  # after every file kept, which already suffice
        lines = None
        if self._count < self.needed:
            data = _read(self.ws, file.rel, file.needs(self.context))
            if data is None or b"\x00" in data[:BINARY_SNIFF_BYTES]:
                return
            lines = lines_searched_in(data)
        elif _is_binary(self.ws, file.rel):
            return
        at = bisect.bisect(self.kept, key, key=lambda item: item[0])
        self.kept.insert(at, (key, file, lines))
        self._count += len(file.matched)
        # The last file in path order is not needed when the ones before it suffice.
        while len(self.kept) > 1 and self._count - len(self.kept[-1][1].matched) >= self.needed:
            self._count -= len(self.kept.pop()[1].matched)

    def wait(self) -> list[tuple[list[bytes], _Found, list[str] | None]]:
        # Joining the reader (rg's stdout at EOF) rather than `Popen.wait(timeout)`,
        # which polls with sleeps of up to 50 ms.
        self._reader.join(max(0.0, self.deadline - time.monotonic()))
        if self._reader.is_alive():
            raise _timeout()
        self.proc.wait()
        return self.kept

    def stop(self) -> None:
        _stop(self.proc)
        self._reader.join(PIPE_DRAIN_GRACE_SECONDS)


class _Stream:
    """One sorted rg process and its JSON stream, taken file by file as rg finishes them."""

    def __init__(
        self,
        ws: Workspace,
        include,
        args: list[str],
        cwd: str,
        seconds: float,
        filled: Callable[[], float] | None = None,
        give_up_after: float | None = None,
        patience: float = GREP_PROBE_FIRST_MATCH_SECONDS,
    ) -> None:
        """rg is killed after `seconds` (or by `expire()`). A probe (`filled` gives the
        share of the answer collected so far) is also killed when it is not worth its
        CPU beside the parallel scan: no match at all after `patience` seconds,
        or, projecting its pace, a full answer later than GREP_PROBE_PROJECTED_SECONDS or
        than the last full scan of the same tree took (`give_up_after`)."""
        self.ws = ws
        self.files = _Files(include)
        self.expired = False  # the timer killed rg before it finished
        self.stopped = False  # we stopped reading: the answer was full
        self.proc = _spawn(args, cwd)
        self._started = time.monotonic()
        self._end = self._started + seconds
        self._filled = filled
        self._projected = min(GREP_PROBE_PROJECTED_SECONDS, give_up_after or float("inf"))
        first = min(seconds, patience) if filled else seconds
        self._timer = threading.Timer(max(0.0, first), self._check)
        self._timer.start()

    def _check(self) -> None:
        now = time.monotonic()
        if now >= self._end or self._filled is None:
            self.expire()
            return
        share = self._filled()
        elapsed = now - self._started
        if share <= 0 or elapsed / share > self._projected:
            self.expire()
            return
        self._timer = threading.Timer(min(GREP_PROBE_CHECK_SECONDS, self._end - now), self._check)
        self._timer.start()

    def expire(self) -> None:
        if self.proc.poll() is None:
            self.expired = True
            _kill_group(self.proc)

    def take_in_order(self, result: GrepResult, query: GrepQuery) -> list[bytes] | None:
        """Take files as rg finishes them (in order); the sort key of the last one."""
        assert self.proc.stdout is not None
        last = None
        try:
            for raw in self.proc.stdout:
                try:
                    done = self.files.feed(raw)
                except ValueError:
                    break  # the last line of a killed rg
                if done is None:
                    continue
                last = _path_key(done.rel)
                if not _take_verified(self.ws, result, query, done):
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


def _verified_lines(ws: Workspace, rel: str, size: int) -> list[str] | None:
    """The file's searched lines in its first `size` bytes, read through the containment
    walk; None if unreadable or binary."""
    data = _read(ws, rel, size)
    return lines_searched_in(data) if data is not None else None


def files_matching(
    rg: str, ws: Workspace, start: str, pattern: str, include: str | None, ancestor: list[str]
) -> list[str]:
    """Root-relative files with a line matching `pattern` (parallel, any order), under the
    same rules as grep. Names only: whoever reads one opens it through the containment
    walk, and a name rg saw mid-swap outside the root then fails there."""
    wanted = compile_glob(include)
    with _ignore_file(ancestor, False) as ignore_file, root_cwd(ws) as cwd:
        args = _base_args(rg, False, ignore_file, ordered=False)
        args += ["--files-with-matches", "--null", "--text", "-e", pattern, "--", start or "."]
        proc = _spawn(args, cwd)
        timer = threading.Timer(GREP_TIME_BUDGET_SECONDS, _kill_group, (proc,))
        timer.start()
        try:
            assert proc.stdout is not None
            out = proc.stdout.read()
        finally:
            timer.cancel()
            _stop(proc)
    if proc.returncode < 0:  # the timer killed it
        raise _timeout()
    names = (os.fsdecode(raw) for raw in out.split(b"\x00") if raw)
    rels = (name[2:] if name.startswith("./") else name for name in names)
    return [rel for rel in rels if wanted is None or wanted.matches(rel)]


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
