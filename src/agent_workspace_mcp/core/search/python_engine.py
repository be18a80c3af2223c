"""The pure-Python engine: used when no ripgrep binary is available.

It walks iteratively (a tree deeper than the recursion limit is fine), directory by
directory from fds opened with O_NOFOLLOW, never follows a symlink (so loops cannot
happen), never opens anything but regular files (FIFOs, sockets and devices are
skipped), and sorts each directory by name bytes exactly as `rg --sort path` does.
Regexes run on the `regex` module with a time budget for the whole call, so a
catastrophic pattern ends with an error instead of hanging the server.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from ..containment import open_root
from ..errors import WorkspaceError
from ..fdread import read_regular
from ..limits import (
    ANSWER_BYTES,
    BINARY_SNIFF_BYTES,
    GITIGNORE_MAX_BYTES,
    GREP_BYTES_PER_FILE,
    GREP_TIME_BUDGET_SECONDS,
    RULES_CHECK_SECONDS,
)
from ..osflags import DIR_FLAGS
from .results import (
    GrepQuery,
    GrepResult,
    ListQuery,
    ListResult,
    add_listed_dir,
    add_listed_file,
    listing_base,
    take,
)
from .rules import Glob, compile_glob, fs_sort_key, is_ignored_dir_name

if TYPE_CHECKING:  # imported lazily: only searches need them, not start-up
    from pathspec import GitIgnoreSpec

    from ..workspaces import Workspace


class SearchTimeout(WorkspaceError):
    pass


class _Ignores:
    """Stack of `.gitignore` specs: the deepest directory's decision wins, as in git."""

    def __init__(self, ancestor: list[str], enabled: bool) -> None:
        from pathspec import GitIgnoreSpec

        self.enabled = enabled
        # (directory relative to root, spec); the rebased ancestor rules are root-relative.
        self.stack: list[tuple[str, GitIgnoreSpec]] = []
        self.base: GitIgnoreSpec | None = (
            GitIgnoreSpec.from_lines(ancestor) if enabled and ancestor else None
        )

    def ignored(self, rel: str, is_dir: bool, stack: list[tuple[str, GitIgnoreSpec]]) -> bool:
        if not self.enabled:
            return False
        candidate = rel + "/" if is_dir else rel
        for directory, spec in reversed(stack):
            inner = candidate[len(directory) + 1 :] if directory else candidate
            decision = spec.check_file(inner).include
            if decision is not None:
                return decision
        if self.base is not None:
            decision = self.base.check_file(candidate).include
            if decision is not None:
                return decision
        return False


def _read_gitignore(dir_fd: int) -> GitIgnoreSpec | None:
    from pathspec import GitIgnoreSpec

    data = read_regular(dir_fd, ".gitignore", GITIGNORE_MAX_BYTES)
    if data is None:
        return None
    lines = data.decode("utf-8", "replace").splitlines()
    return GitIgnoreSpec.from_lines(lines) if lines else None


def walk_files(
    ws: Workspace,
    start: str,
    start_is_dir: bool,
    *,
    ancestor_rules: list[str],
    no_ignore: bool,
    max_depth: int | None,
    include: Glob | None,
    dirs: bool = False,
) -> Generator[tuple[str, int | None], None, None]:
    """Yield (root-relative path, dir_fd) for each eligible regular file, in rg order.

    With `dirs`, every eligible directory within `max_depth` is yielded too, as
    (path, None), just before its contents. The dir_fd is only valid until the next
    item is requested.
    """
    ignores = _Ignores(ancestor_rules, not no_ignore)
    root_fd = open_root(ws)
    try:
        if not start_is_dir:
            parent, _, name = start.rpartition("/")
            fd = _open_dirs(root_fd, parent)
            try:
                if include is None or include.matches(start):
                    yield start, fd
            finally:
                if fd != root_fd:
                    os.close(fd)
            return
        start_fd = _open_dirs(root_fd, start)
        # Each frame: (dir fd, dir rel path, depth, sorted pending entries, ignore stack)
        stack: list[tuple[int, str, int, list[tuple[str, bool]], list[Any]]] = []

        def push(fd: int, rel: str, depth: int, ignore_stack: list[Any]) -> None:
            if ignores.enabled:
                spec = _read_gitignore(fd)
                if spec is not None:
                    ignore_stack = [*ignore_stack, (rel if rel != "." else "", spec)]
            entries = []
            with os.scandir(fd) as it:
                for entry in it:
                    try:
                        mode = entry.stat(follow_symlinks=False).st_mode
                    except OSError:
                        continue
                    if stat.S_ISDIR(mode):
                        entries.append((entry.name, True))
                    elif stat.S_ISREG(mode):
                        entries.append((entry.name, False))
                    # symlinks, FIFOs, sockets and devices are never listed or opened
            entries.sort(key=lambda e: fs_sort_key(e[0]), reverse=True)
            stack.append((fd, rel, depth, entries, ignore_stack))

        push(start_fd, start or ".", 0, [])
        while stack:
            fd, rel, depth, entries, ignore_stack = stack[-1]
            if not entries:
                stack.pop()
                if fd != root_fd:
                    os.close(fd)
                continue
            name, is_dir = entries.pop()
            child = name if rel in ("", ".") else f"{rel}/{name}"
            if is_dir:
                if is_ignored_dir_name(name):
                    continue
                too_deep = max_depth is not None and depth + 1 >= max_depth
                if (too_deep and not dirs) or ignores.ignored(child, True, ignore_stack):
                    continue
                if dirs and (max_depth is None or depth + 1 <= max_depth):
                    yield child, None
                if too_deep:
                    continue
                try:
                    child_fd = os.open(name, DIR_FLAGS, dir_fd=fd)
                except OSError:
                    continue
                push(child_fd, child, depth + 1, ignore_stack)
                continue
            if max_depth is not None and depth + 1 > max_depth:
                continue
            if ignores.ignored(child, False, ignore_stack):
                continue
            if include is not None and not include.matches(child):
                continue
            yield child, fd
    finally:
        os.close(root_fd)


def rules_hide_something(
    ws: Workspace,
    start: str,
    ancestor_rules: list[str],
    budget: float = RULES_CHECK_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> bool:
    """Whether .gitignore rules exclude at least one entry below `start`.

    Only asked when rules apply where the search starts (rules above it, or a .gitignore
    in it). Walks by fd like the search and stops at the first excluded entry; a tree
    too large to answer within `budget` gets False (the answer then just says nothing).
    """
    ignores = _Ignores(ancestor_rules, True)
    deadline = clock() + budget
    root_fd = open_root(ws)
    fds: list[int] = []
    try:
        fds.append(_open_dirs(root_fd, start) if start else os.dup(root_fd))
        if not ancestor_rules and _read_gitignore(fds[-1]) is None:
            # No rule where the search starts: the common rule-free tree costs nothing.
            # (Rules only in deeper .gitignore files are not reported.)
            return False
        pending: list[tuple[int, str, list[Any]]] = [(fds[-1], start, [])]
        while pending:
            if clock() > deadline:
                return False
            fd, rel, stack = pending.pop()
            spec = _read_gitignore(fd)
            if spec is not None:
                stack = [*stack, (rel, spec)]
            with os.scandir(fd) as entries:
                children = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
            for name, is_dir in children:
                child = f"{rel}/{name}" if rel else name
                if is_dir and is_ignored_dir_name(name):
                    continue
                if ignores.ignored(child, is_dir, stack):
                    return True
                if is_dir:
                    try:
                        fds.append(os.open(name, DIR_FLAGS, dir_fd=fd))
                    except OSError:
                        continue
                    pending.append((fds[-1], child, stack))
        return False
    except OSError:
        return False
    finally:
        for fd in fds:
            if fd != root_fd:
                os.close(fd)
        os.close(root_fd)


def _open_dirs(root_fd: int, rel: str) -> int:
    fd = root_fd
    for part in [p for p in rel.split("/") if p not in ("", ".")]:
        nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
        if fd != root_fd:
            os.close(fd)
        fd = nxt
    return fd


def read_head(dir_fd: int, name: str, size: int) -> bytes | None:
    return read_regular(dir_fd, name, size)


def searchable_text(data: bytes, truncated: bool) -> str | None:
    """The part of a file that is searched: None for binary; only whole lines of the cap."""
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return None
    if truncated:
        cut = data.rfind(b"\n")
        data = data[: cut + 1] if cut >= 0 else b""
    return data.decode("utf-8", "replace")


def line_matcher(
    query: GrepQuery,
    deadline: float,
    budget: float = GREP_TIME_BUDGET_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> Callable[[list[str]], list[int]]:
    """A function giving the indexes of the lines that match, within the time budget."""
    import regex

    flags = regex.V0 | (regex.IGNORECASE if query.ignore_case else 0)
    compiled = regex.compile(query.pattern, flags)
    prefilter = regex.compile(query.pattern, flags | regex.MULTILINE)

    def matching(lines: list[str]) -> list[int]:
        try:
            text = "\n".join(lines)
            if not prefilter.search(text, timeout=max(deadline - clock(), 0.001), concurrent=True):
                return []
            return [
                i
                for i, line in enumerate(lines)
                if compiled.search(line, timeout=max(deadline - clock(), 0.001), concurrent=True)
            ]
        except TimeoutError:
            raise SearchTimeout(
                f"the pattern took longer than {budget:g} s (catastrophic "
                "backtracking?); simplify it or narrow the path"
            ) from None

    return matching


def grep(
    ws: Workspace,
    start: str,
    start_is_dir: bool,
    query: GrepQuery,
    ancestor: list[str],
    budget: float = GREP_TIME_BUDGET_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> GrepResult:
    matching = line_matcher(query, clock() + budget, budget, clock)
    result = GrepResult()
    files = walk_files(
        ws,
        start,
        start_is_dir,
        ancestor_rules=ancestor,
        no_ignore=query.no_ignore,
        max_depth=None,
        include=compile_glob(query.include),
    )
    try:
        for rel, dir_fd in files:
            if dir_fd is None:  # a directory: only listings ask for those
                continue
            lines = searched_lines(dir_fd, rel.rsplit("/", 1)[-1])
            if not lines:
                continue
            if not take(result, query, rel, matching(lines), lines):
                break
    finally:
        files.close()
    return result


def searched_lines(dir_fd: int, name: str) -> list[str] | None:
    """The lines grep searches in a file: None for binary, only whole lines of the first 1 MiB."""
    data = read_head(dir_fd, name, GREP_BYTES_PER_FILE + 1)
    return None if data is None else lines_searched_in(data)


def lines_searched_in(data: bytes) -> list[str] | None:
    """`data` is up to GREP_BYTES_PER_FILE + 1 bytes of a file's start; None if binary."""
    text = searchable_text(data[:GREP_BYTES_PER_FILE], len(data) > GREP_BYTES_PER_FILE)
    if text is None:
        return None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def list_files(
    ws: Workspace,
    start: str,
    start_is_dir: bool,
    query: ListQuery,
    ancestor: list[str],
    budget: int = ANSWER_BYTES,
) -> ListResult:
    result = ListResult()
    base = listing_base(start, start_is_dir)
    files = walk_files(
        ws,
        start,
        start_is_dir,
        ancestor_rules=ancestor,
        no_ignore=query.no_ignore,
        max_depth=query.max_depth,
        include=compile_glob(query.pattern),
        dirs=query.pattern is None,
    )
    try:
        for rel, dir_fd in files:
            if dir_fd is None:
                if not add_listed_dir(result, query, rel, budget):
                    break
                continue
            name = rel.rsplit("/", 1)[-1]

            def binary(dir_fd: int = dir_fd, name: str = name) -> bool | None:
                head = read_head(dir_fd, name, BINARY_SNIFF_BYTES)
                return None if head is None else b"\x00" in head

            if not add_listed_file(result, query, rel, base, binary, budget):
                break
    finally:
        files.close()
    return result
