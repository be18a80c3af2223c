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
  same read sniffs for binary; without context lines it stops after the last match, and
  each match must be rg's bytes at rg's offset after as many newlines as its line
  number, so only the matched lines are decoded); a listed name must exist as a regular
  file in its verified directory. One `locate()` per directory (rgproc.DirCache), then
  each file opened under that verified fd with O_NOFOLLOW.
"""

from __future__ import annotations

import os
import re
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..containment import root_cwd
from ..limits import (
    ANSWER_BYTES,
    BINARY_SNIFF_BYTES,
    GREP_DIR_FD_CACHE,
    GREP_PROBE_FIRST_MATCH_SECONDS,
    GREP_PROBE_LOOKS_SECONDS,
    GREP_PROBE_PATIENCE_SHARE,
    GREP_PROBE_PROJECTED_SECONDS,
    GREP_TIME_BUDGET_SECONDS,
    IGNORED_DIRS,
)
from ..workspaces import Workspace
from .results import (
    GrepQuery,
    GrepResult,
    ListQuery,
    ListResult,
    add_listed_file,
    listing_base,
)
from .rgproc import DirCache, kill_group, spawn, stop, timed_out
from .rules import Glob, compile_glob
from .scan import SCAN_SECONDS, Probe, Scan, remember_scan, take_verified


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
        scan = Scan(
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
            expected = SCAN_SECONDS.get(tree, GREP_PROBE_PROJECTED_SECONDS)
            for look in GREP_PROBE_LOOKS_SECONDS:
                if scan.ended_within(look - scan.elapsed()):
                    break
                # A scan still running at twice what was expected (a cold disk, a tree
                # never scanned) will likely run as long again.
                expected = max(expected, 2 * scan.elapsed())
                if scan.worth_a_probe(query.max_results, expected):
                    probe = Probe(
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
            remember_scan(tree, scan.seconds)
        finally:
            scan.stop()
    # The scan's files after the probe's last, in path order, until the answer is full.
    dirs = DirCache(ws, GREP_DIR_FD_CACHE)
    try:
        for key, file, checked in found:
            if done_upto is not None and key <= done_upto:
                continue
            if not take_verified(dirs, result, query, file, checked):
                break
    finally:
        dirs.close()
    return result


# `**/*.{py,js,...}`: a basename glob by extension (code navigation's SOURCE_GLOB).
_BY_EXTENSION = re.compile(r"\*\*/\*\.\{([A-Za-z0-9+]+(?:,[A-Za-z0-9+]+)*)\}")


def _include_args(include: str | None) -> tuple[list[str], Glob | None]:
    """rg arguments and the Python-side filter for an include glob. A glob by extension
    becomes an rg file type: rg then reads only those files, and unlike `--glob` a type
    never overrides the ignore rules. Any other glob is filtered here (see grep)."""
    match = _BY_EXTENSION.fullmatch(include or "")
    if match is None:
        return [], compile_glob(include)
    return [f"--type-add=awmsrc:*.{{{match.group(1)}}}", "--type=awmsrc"], None


def files_matching(
    rg: str, ws: Workspace, start: str, pattern: str, include: str | None, ancestor: list[str]
) -> list[str]:
    """Root-relative files with a line matching `pattern` (parallel, any order), under the
    same rules as grep. Names only: whoever reads one opens it through the containment
    walk, and a name rg saw mid-swap outside the root then fails there."""
    types, wanted = _include_args(include)
    with _ignore_file(ancestor, False) as ignore_file, root_cwd(ws) as cwd:
        args = _base_args(rg, False, ignore_file, ordered=False) + types
        args += ["--files-with-matches", "--null", "--text", "-e", pattern, "--", start or "."]
        out = _output(args, cwd)
    names = (os.fsdecode(raw) for raw in out.split(b"\x00") if raw)
    rels = (name[2:] if name.startswith("./") else name for name in names)
    return [rel for rel in rels if wanted is None or wanted.matches(rel)]


def _output(args: list[str], cwd: str) -> bytes:
    """All rg prints, within GREP_TIME_BUDGET_SECONDS (timed out: one sentence)."""
    proc = spawn(args, cwd)
    timer = threading.Timer(GREP_TIME_BUDGET_SECONDS, kill_group, (proc,))
    timer.start()
    try:
        assert proc.stdout is not None
        out = proc.stdout.read()
    finally:
        timer.cancel()
        stop(proc)
    if proc.returncode < 0:  # the timer killed it
        raise timed_out()
    return out


def lines_matching(
    rg: str,
    ws: Workspace,
    start: str,
    pattern: str,
    include: str | None,
    ancestor: list[str],
    per_file: int,
) -> dict[str, tuple[list[str], bool]]:
    """Root-relative files with lines matching `pattern` (parallel), each with up to
    `per_file` of those lines and whether it had more. A hint of which files to read,
    like files_matching: whoever uses a file reads it again through the walk."""
    types, wanted = _include_args(include)
    with _ignore_file(ancestor, False) as ignore_file, root_cwd(ws) as cwd:
        args = _base_args(rg, False, ignore_file, ordered=False) + types
        args += ["--null", "--no-heading", "--with-filename", "--no-line-number", "--text"]
        args += ["--max-count", str(per_file + 1), "-e", pattern, "--", start or "."]
        out = _output(args, cwd)
    found: dict[str, tuple[list[str], bool]] = {}
    for raw in out.split(b"\n"):
        name, nul, text = raw.partition(b"\x00")
        if not nul:
            continue
        rel = os.fsdecode(name)
        rel = rel[2:] if rel.startswith("./") else rel
        if wanted is not None and not wanted.matches(rel):
            continue
        lines, _ = found.get(rel, ([], False))
        if len(lines) >= per_file:
            found[rel] = (lines, True)
            continue
        lines.append(text.decode("utf-8", "replace"))
        found[rel] = (lines, False)
    return found


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
    cache = DirCache(ws)
    with _ignore_file(ancestor, query.no_ignore) as ignore_file:
        args = _base_args(rg, query.no_ignore, ignore_file)
        args += ["--files", "--null", f"--max-depth={query.max_depth}", "--", start or "."]
        with root_cwd(ws) as cwd:
            proc = spawn(args, cwd)
        try:
            if _collect_listing(proc, result, query, pattern, base, cache, budget):
                proc.wait()
        finally:
            cache.close()
            stop(proc)
    return result


def _collect_listing(
    proc: Any, result: Any, query: Any, pattern: Any, base: Any, cache: DirCache, budget: int
) -> bool:
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
