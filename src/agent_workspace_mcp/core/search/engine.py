"""Pick an engine and run a query against a located path.

`SearchEngine("auto")` uses ripgrep when its binary is found (next to the interpreter
first, then PATH) and the Python engine otherwise; "rg" and "python" force one (tests
run both over the same tree and compare answers).
"""

from __future__ import annotations

import stat
import time
from typing import Any

from ..containment import locate
from ..errors import ConfigError, NotFoundError, WorkspaceError, WrongTypeError
from ..limits import GITIGNORE_MAX_BYTES, RULES_CHECK_CACHE_SECONDS
from ..textio import kind_of, read_bytes
from ..workspaces import Workspace
from . import python_engine, rgproc, ripgrep_engine
from .results import GrepQuery, GrepResult, ListQuery, ListResult
from .rules import ancestor_rules, compile_glob, validate_regex

ENGINES = ("auto", "rg", "python")


class SearchEngine:
    def __init__(self, mode: str = "auto") -> None:
        if mode not in ENGINES:
            raise ConfigError(f"search engine must be one of {', '.join(ENGINES)}, got {mode!r}")
        self.rg = None if mode == "python" else rgproc.find_rg()
        # (root, start, ancestor rules, the start's .gitignore identity) -> (when, answer)
        self._rules_cache: dict[tuple[Any, ...], tuple[float, bool]] = {}
        if mode == "rg" and self.rg is None:
            raise ConfigError("search engine 'rg' requested but no ripgrep binary was found")

    @property
    def name(self) -> str:
        return "ripgrep" if self.rg else "python"

    def grep(self, ws: Workspace, path: str | None, query: GrepQuery) -> tuple[GrepResult, str]:
        validate_regex(query.pattern)
        compile_glob(query.include)
        start, is_dir, ancestors = self._start(ws, path, query.no_ignore)
        if self.rg:
            result = ripgrep_engine.grep(self.rg, ws, start, query, ancestors)
        else:
            result = python_engine.grep(ws, start, is_dir, query, ancestors)
        if not query.no_ignore and not result.more and is_dir:
            result.rules_hid = self._rules_hid(ws, start, ancestors)
        return result, start

    def files_matching(
        self, ws: Workspace, path: str | None, pattern: str, include: str | None
    ) -> list[str] | None:
        """Every file with a line matching `pattern`, sorted, by ripgrep on every core;
        None without ripgrep (then grep's cap applies: the caller falls back to it)."""
        if not self.rg:
            return None
        validate_regex(pattern)
        start, _, ancestors = self._start(ws, path, False)
        return sorted(
            ripgrep_engine.files_matching(self.rg, ws, start, pattern, include, ancestors)
        )

    def lines_matching(
        self, ws: Workspace, path: str | None, pattern: str, include: str | None, per_file: int
    ) -> dict[str, tuple[list[str], bool]] | None:
        """Files with lines matching `pattern`, each with up to `per_file` of them and
        whether it had more; None without ripgrep (the caller falls back)."""
        if not self.rg:
            return None
        validate_regex(pattern)
        start, _, ancestors = self._start(ws, path, False)
        return ripgrep_engine.lines_matching(
            self.rg, ws, start, pattern, include, ancestors, per_file
        )

    def list_files(
        self, ws: Workspace, path: str | None, query: ListQuery
    ) -> tuple[ListResult, str]:
        compile_glob(query.pattern)
        start, is_dir, ancestors = self._start(ws, path, query.no_ignore)
        # Without a pattern the listing shows every directory, empty ones included, which
        # `rg --files` cannot see; the fd walk lists both (and is as fast for a listing).
        if self.rg and query.pattern is not None:
            result = ripgrep_engine.list_files(self.rg, ws, start, is_dir, query, ancestors)
        else:
            result = python_engine.list_files(ws, start, is_dir, query, ancestors)
        if not query.no_ignore and not result.more and is_dir:
            result.rules_hid = self._rules_hid(ws, start, ancestors)
        return result, start

    def _rules_hid(self, ws: Workspace, start: str, ancestors: list[str]) -> bool:
        """Cached briefly, since agents search in bursts, but only while the rules that
        ask the question are unchanged: a .gitignore written, edited or removed where the
        search starts (or above it) is seen by the next call."""
        key = (ws.root, start, tuple(ancestors), _gitignore_identity(ws, start))
        now = time.monotonic()
        cached = self._rules_cache.get(key)
        if cached is not None and now - cached[0] < RULES_CHECK_CACHE_SECONDS:
            return cached[1]
        value = python_engine.rules_hide_something(ws, start, ancestors)
        if len(self._rules_cache) > 256:
            self._rules_cache.clear()
        self._rules_cache[key] = (now, value)
        return value

    @staticmethod
    def _start(ws: Workspace, path: str | None, no_ignore: bool) -> tuple[str, bool, list[str]]:
        """The search start relative to the root, whether it is a directory, ancestor rules."""
        with locate(ws, path or ".") as loc:
            st = loc.lstat()
            if st is None:
                raise NotFoundError(f"not found: {loc.display}")
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                raise WrongTypeError(
                    f"{loc.display}: is a {kind_of(st.st_mode)}; search a directory or file"
                )
            is_dir = stat.S_ISDIR(st.st_mode)
            parts = loc.real_parts
        start = "/".join(parts)
        ancestors: list[str] = []
        if is_dir and parts and not no_ignore:
            ancestors = ancestor_rules(lambda directory: _read_gitignore(ws, directory), parts)
        return start, is_dir, ancestors


def _gitignore_identity(ws: Workspace, directory: str) -> tuple[int, ...] | None:
    """What changes when the .gitignore in `directory` is written, replaced or removed."""
    rel = f"{directory}/.gitignore" if directory else ".gitignore"
    try:
        with locate(ws, rel if ws.confined else "/" + rel) as loc:
            st = loc.lstat()
    except WorkspaceError:
        return None
    if st is None:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _read_gitignore(ws: Workspace, directory: str) -> str | None:
    rel = f"{directory}/.gitignore" if directory else ".gitignore"
    try:
        with locate(ws, rel if ws.confined else "/" + rel) as loc:
            if loc.lstat() is None:
                return None
            data, _ = read_bytes(loc, GITIGNORE_MAX_BYTES)
    except WorkspaceError:
        return None
    return data.decode("utf-8", "replace")
