"""What a tool call reaches (issue 43): which paths it touches, and whether it runs programs.

Every decision about a call (the approval gate's `--confirm-path` and `--confirm
destructive`, the write guard behind them, the audit line's paths) is taken on what
the call's arguments *resolve to*, never on how the agent spelled them: `sub/../x`, an
absolute path, a symlink the repository ships and the paths inside a `patch` edit or an
`apply_patch` diff all come out as the same real, root-relative path here, resolved by
the containment walk the write itself uses. A folder a call deletes, moves or renames
covers every entry below it, walked by fd without following a link, and a moved one
also covers where each of them lands.

The argument tables are closed: a tool argument is either listed as a path (with how
it names one) or as not a path, and tests/core/test_callscope.py fails for a registered
tool whose argument is in neither, so a new tool cannot take a path this module does
not know.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from . import patches
from .containment import Located, locate
from .errors import WorkspaceError
from .limits import TOUCHED_ENTRIES_MAX
from .osflags import DIR_FLAGS
from .workspaces import Workspace

# The tools that run a program. `--confirm exec`, the command surface and the runner's
# clearance check (core.exec.runner) all read this one set; registering a tool that
# executes under another name fails (tools/base.add_tool).
RUNS_PROGRAMS = frozenset({"run_command", "bash", "start_job", "run_task"})

# An app-only tool and the model-facing tool it does the work of: the gate decides the
# twin as the tool itself (`--confirm undo` covers the review panel's undo).
TWINS = {"review_undo": "undo"}

# Tools that undo recorded work: the paths they touch come from the records, so the gate
# asks the tool's own dry run (which reports them) instead of reading the arguments.
REVERTS = frozenset({"undo", "review_undo", "restore_file"})

# How each argument names paths: one path, a list, a new name beside `path`, edits with
# a `path` each, a unified diff.
PATH_ARGUMENTS = {
    "path": "one",
    "source": "one",
    "destination": "one",
    "paths": "many",
    "newName": "sibling",
    "edits": "edits",
    "patch": "diff",
}
# Arguments that name a directory a program starts in (not a path the call changes).
PLACE_ARGUMENTS = frozenset({"cwd"})
# Every other argument any tool takes; a name in neither table fails the test.
OTHER_ARGUMENTS = frozenset(
    {
        "workspace",
        "content",
        "contentBase64",
        "expectedSha256",
        "oldString",
        "newString",
        "replaceAll",
        "dryRun",
        "recursive",
        "overwrite",
        "offset",
        "limit",
        "length",
        "pattern",
        "include",
        "ignoreCase",
        "maxResults",
        "contextLines",
        "noIgnore",
        "maxDepth",
        "after",
        "command",
        "timeoutMs",
        "background",
        "name",
        "maxRuntimeMs",
        "runner",
        "task",
        "timeoutSeconds",
        "jobId",
        "tailBytes",
        "steps",
        "to",
        "change",
        "session",
        "force",
        "before",
        "ids",
        "since",
        "stat",
        "staged",
        "text",
        "tags",
        "query",
        "tag",
        "title",
        "goal",
        "changeId",
        "stage",
        "append",
        "all",
        "status",
        "updates",
        "id",
        "kind",
        "depth",
        "file",
    }
)


@dataclass
class Touched:
    """The real paths one call touches, relative to the primary root, each once."""

    paths: list[str] = field(default_factory=list)
    deletes: bool = False  # removes a file or folder (or replaces one by a move)
    complete: bool = True  # False: a folder held more than TOUCHED_ENTRIES_MAX entries
    entries: int = 0  # the entries below the folders it covers (a delete's real count)
    # Where a move puts a folder or a link (and the names that place has through a link
    # the root holds): what is inside it afterwards (a link's target included, which the
    # move does not walk) is inside this path.
    landings: list[str] = field(default_factory=list)
    # The names these paths also have through a link the root holds (`ci/evil.yml` is
    # `.github/workflows/evil.yml` when that folder links to `ci/`): see `links_held`.
    linked: list[str] = field(default_factory=list)
    # The entries it touches that are links, as entries (not what they reach).
    links: list[str] = field(default_factory=list)

    def add(self, path: str) -> None:
        if path not in self.paths:
            self.paths.append(path)

    @property
    def names(self) -> list[str]:
        """Every name the call's paths go by: what they resolve to, then their linked names."""
        return self.paths + [p for p in self.linked if p not in self.paths]


def named_paths(args: dict[str, Any]) -> list[str]:
    """The paths the arguments name, as given (the audit line of a call that resolved
    none itself): the same table `touched` resolves, without touching the disk; a diff's
    paths as its parser reads them."""
    found: list[str] = []
    for name, value in args.items():
        how = PATH_ARGUMENTS.get(name)
        if how in ("one", "sibling") and isinstance(value, str):
            found.append(value)
        elif how == "many" and isinstance(value, list):
            found.extend(v for v in value if isinstance(v, str))
        elif how == "edits" and isinstance(value, list):
            found.extend(
                e["path"] for e in value if isinstance(e, dict) and isinstance(e.get("path"), str)
            )
        elif how == "diff" and isinstance(value, str):
            with contextlib.suppress(WorkspaceError):
                for file in patches.parse(value):
                    found.extend(p for p in (file.old_path, file.new_path) if p and p not in found)
    for name in PLACE_ARGUMENTS:
        if isinstance(args.get(name), str):
            found.append(args[name])
    return found


def canonical(tool: str) -> str:
    return TWINS.get(tool, tool)


def touched(ws: Workspace, tool: str, args: dict[str, Any]) -> Touched:
    """Every path `tool(**args)` names, resolved as the write will resolve it (the entry
    itself and, when it is a link, its target), with what lies below a folder."""
    found = Touched()
    entries: dict[str, str | None] = {}  # argument -> the entry it names, resolved
    for name, value in args.items():
        how = PATH_ARGUMENTS.get(name)
        if how is None or value is None:
            continue
        if how == "one" and isinstance(value, str):
            entries[name] = _resolve(ws, value, found)
        elif how == "many" and isinstance(value, list):
            for item in value:
                if isinstance(item, str):
                    _resolve(ws, item, found)
        elif how == "sibling" and isinstance(value, str) and isinstance(args.get("path"), str):
            parent = posixpath.dirname(args["path"].rstrip("/"))
            entries[name] = _resolve(ws, posixpath.join(parent, value) if parent else value, found)
        elif how == "edits" and isinstance(value, list):
            for edit in value:
                if isinstance(edit, dict) and isinstance(edit.get("path"), str):
                    _resolve(ws, edit["path"], found)
        elif how == "diff" and isinstance(value, str):
            _diff_paths(ws, value, found)
    tool = canonical(tool)
    if tool in MOVES:
        source, destination = MOVES[tool]
        _carried(entries.get(source), entries.get(destination), found)
    if tool == "delete_path" or (tool in MOVES and args.get("overwrite")):
        found.deletes = True
    if tool == "delete_path" or tool in MOVES:
        for link in list(found.links):  # it takes these links, and what they hold, away
            held, whole = names_held(ws, link)
            for name in held:
                if name not in found.paths and name not in found.linked:
                    found.linked.append(name)
            if not whole or len(found.linked) > TOUCHED_ENTRIES_MAX:
                found.complete = False  # not all looked at: the gate asks
                break
    return found


def taken(ws: Workspace, loc: Located, rel: str) -> tuple[list[str], bool]:
    """What a write at the located entry (`rel` from the primary root) changes besides
    it: every entry below it when it is a folder, and the names each link among them
    (itself included) gives what its folder holds; False when not all were looked at."""
    st = loc.lstat()
    if st is not None and stat.S_ISLNK(st.st_mode):
        return names_held(ws, rel)
    if st is None or not stat.S_ISDIR(st.st_mode) or not loc.name:
        return [], True
    names: list[str] = []
    for path, kind in _walk_below(loc.dir_fd, loc.name, rel):
        if path is None:
            return names, False
        names.append(path)
        if kind == "link":
            held, whole = names_held(ws, path)
            names.extend(held)
            if not whole or len(names) > TOUCHED_ENTRIES_MAX:
                return names, False
    return names, True


def names_held(ws: Workspace, link: str) -> tuple[list[str], bool]:
    """The names a link to a folder gives what that folder holds (`link`: the link's path
    from the primary root): every entry below its target, named below the link, walked
    by fd up to TOUCHED_ENTRIES_MAX (False past it). A call that deletes or moves
    `.github/workflows -> ../ci` takes `.github/workflows/ci.yml` from CI as surely as
    one that deletes the file."""
    if not ws.confined:
        return [], True
    try:
        with locate(ws.anchor or ws, link, follow_final=True, defer_parents=True) as loc:
            st = loc.lstat()
            if st is None or not stat.S_ISDIR(st.st_mode):
                return [], True  # a file's link is decided by its own name
            names: list[str] = []
            for path in entries_below(loc.dir_fd, loc.name, link):
                if path is None:
                    return names, False
                names.append(path)
            return names, True
    except (WorkspaceError, OSError):
        return [], True  # dangling, or reaching out of the root: it holds nothing here


# The tools that carry a folder, with everything in it, to a new place: the arguments
# naming its source and its destination.
MOVES = {"move_path": ("source", "destination"), "rename_path": ("path", "newName")}


def _carried(src: str | None, dst: str | None, found: Touched) -> None:
    """Where each entry below a moved folder lands: `stage/workflows/ci.yml`, moved as
    `stage` -> `.github`, becomes `.github/workflows/ci.yml`, a path neither argument
    names. `src` and `dst` are the resolved ends (None: the tool refuses that path); the
    entries are those already found below the source (walked by fd)."""
    if src is None or dst is None or "." in (src, dst) or dst == src:
        return
    found.landings.append(dst)
    prefix = src + "/"
    for path in [p for p in found.paths if p.startswith(prefix)]:
        found.add(dst + path[len(src) :])


def _diff_paths(ws: Workspace, text: str, found: Touched) -> None:
    """The paths of a unified diff, read by the parser `apply_patch` itself uses (so
    every spelling it accepts, `+++ "/dev/null"` included, is seen the same way)."""
    try:
        files = patches.parse(text)
    except WorkspaceError:
        return  # the tool refuses the same diff before writing anything
    for file in files:
        for path in (file.old_path, file.new_path):
            if path is not None:
                _resolve(ws, path, found)
        if file.new_path is None:
            found.deletes = True


def _resolve(ws: Workspace, user_path: str, found: Touched) -> str | None:
    """Adds what `user_path` reaches to `found`; the entry itself, resolved (None when
    the walk refuses it)."""
    entry = None
    for follow in (False, True):
        try:
            with locate(ws, user_path, follow_final=follow, defer_parents=True) as loc:
                rel = primary_rel(ws, loc.real_parts)
                found.add(rel)
                if not follow:
                    entry = rel
                    named = _named(ws, loc.display)
                    if named is not None and named != rel:
                        # Through a linked folder (`.github/workflows` -> `ci/`): what
                        # reads the named path (CI, a build) reads this file there, so
                        # the name is decided too.
                        found.add(named)
                st = loc.lstat()
                if not follow and st is not None and stat.S_ISLNK(st.st_mode):
                    found.links.append(rel)
                if follow or st is None or not stat.S_ISDIR(st.st_mode):
                    continue
                _below(loc.dir_fd, loc.name, rel, found)
        except WorkspaceError:
            continue  # outside or malformed: the tool refuses it with the same walk
        except OSError:
            found.complete = False
    return entry


def link_folders(globs: Iterable[str]) -> list[str]:
    """The literal folders the globs protect inside, as seen from the root: an anchored
    glob's leading literal part (`.github/workflows` for `.github/workflows/**`, `app`
    for `app/*/migrations/**`), and an unanchored glob that is a plain name (`secrets/`,
    `Makefile`) at the root. `links_held` walks below them for links; every other root
    entry that is a link it looks at anyway."""
    found: list[str] = []
    for line in globs:
        glob = line.strip()
        if not glob or glob.startswith(("#", "!")):
            continue
        parts = glob.strip("/").split("/")
        literal: list[str] = []
        for part in parts:
            if any(c in part for c in "*?[\\") or part in ("", ".", ".."):
                break
            literal.append(part)
        folder = "/".join(literal)  # empty for `*.pem`, `**/requirements/*.txt`
        if folder and folder not in found:
            found.append(folder)
    return found


def links_held(
    ws: Workspace, folders: Iterable[str], shipped: Iterable[str] = ()
) -> tuple[list[tuple[str, str]], bool]:
    """The links through which a protected name can reach another file, as (the name a
    glob sees, the real path it reaches), and whether all were looked at: each root entry
    that is a link (`Makefile -> build/rules.txt`, `.github -> meta`), each of `folders`
    that resolves elsewhere (`.github/workflows -> ../ci`), and every link below one of
    `folders` (`.github/workflows/ci.yml -> ../../shared/ci.yml`), walked by fd up to
    TOUCHED_ENTRIES_MAX entries. A subpath session's folder is looked at as a root too,
    for the plain names (`secrets/`, `Makefile`): it is where its agent's project starts.
    Links elsewhere in the tree (under an unanchored glob's name,
    `services/api/Dockerfile`, or below a wildcard, `app/*/migrations`) are looked at
    only when named in `shipped` (paths from the primary root: the links the repository
    tracks under a protected name, core.shipped)."""
    if not ws.confined:
        return [], True  # the globs name paths of a root; an unconfined server has none
    # A subpath session's paths are named from the primary root, and so are the links: a
    # root link into the session's folder (`.github/workflows -> ../app/ci`) names its
    # files though the session cannot see the link.
    tops = [("", list(folders))]
    if ws.anchor is not None and ws.subpath is not None and ws.subpath.parts:
        plain = [folder for folder in tops[0][1] if "/" not in folder]
        tops.append(("/".join(ws.subpath.parts) + "/", plain))
        ws = ws.anchor
    links: list[tuple[str, str]] = []

    def add(name: str, real: str | None) -> None:
        if real is not None and real != name and (name, real) not in links:
            links.append((name, real))

    complete = True
    for prefix, names in tops:
        try:
            entries = _entries_at(ws, prefix.rstrip("/") or ".")
        except (WorkspaceError, OSError):
            entries = {}
        for name, kind in entries.items():
            if kind == "link":
                add(prefix + name, _real(ws, prefix + name))
        for folder in names:
            if entries.get(folder.split("/", 1)[0]) not in ("link", "folder"):
                continue  # nothing there, or a file: no link below it
            real, below, whole = _links_below(ws, prefix + folder)
            add(prefix + folder, real)
            for name in below:
                add(name, _real(ws, name))
            complete = complete and whole
    for name in shipped:  # what each reaches is read from the tree, not from the index
        add(name, _real(ws, name))
    return links, complete


def _real(ws: Workspace, name: str) -> str | None:
    """The real path `name` reaches, links followed; None when the walk refuses it."""
    try:
        with locate(ws, name, follow_final=True, defer_parents=True) as loc:
            return primary_rel(ws, loc.real_parts)
    except (WorkspaceError, OSError):
        return None


def _links_below(ws: Workspace, folder: str) -> tuple[str | None, list[str], bool]:
    """The real path `folder` reaches and the links below it, each named below `folder`
    as a glob sees it; False when more than TOUCHED_ENTRIES_MAX entries were there."""
    try:
        with locate(ws, folder, follow_final=True, defer_parents=True) as loc:
            real = primary_rel(ws, loc.real_parts)
            st = loc.lstat()
            if st is None or not stat.S_ISDIR(st.st_mode):
                return real, [], True
            found: list[str] = []
            for path, kind in _walk_below(loc.dir_fd, loc.name, folder):
                if path is None:
                    return real, found, False
                if kind == "link":
                    found.append(path)
            return real, found, True
    except (WorkspaceError, OSError):
        return None, [], True  # the walk refuses it: nothing a write reaches through it


def add_linked(found: Touched, links: list[tuple[str, str]], complete: bool = True) -> None:
    """Adds the names `found`'s paths have through `links` to `found.linked`, and those of
    its landings to `found.landings`: CI, a build or a protected glob reads the file by
    that name, so the gate decides that name too. `complete=False` (not every link was
    looked at) makes `found` incomplete, which the gate asks about."""
    found.complete = found.complete and complete
    for kept, paths in ((found.linked, list(found.paths)), (found.landings, list(found.landings))):
        for path in paths:
            for alias in aliases(path, links):
                if alias not in kept and alias not in found.paths:
                    kept.append(alias)


def aliases(path: str, links: list[tuple[str, str]]) -> Iterator[str]:
    """The names `path` (real, root-relative) also has through `links`."""
    for name, real in links:
        if path == real:
            yield name
        elif real == ".":
            yield f"{name}/{path}"
        elif path.startswith(real + "/"):
            yield name + path[len(real) :]


def _entries_at(ws: Workspace, rel: str) -> dict[str, str]:
    """The entries of the folder `rel` (the root: "."), each as "link", "folder" or
    "file" (read by fd, never followed)."""
    with locate(ws, rel, follow_final=True, defer_parents=True) as loc:
        fd = os.open(loc.name or ".", DIR_FLAGS, dir_fd=loc.dir_fd)
    try:
        with os.scandir(fd) as it:
            return {e.name: _kind(e) for e in sorted(it, key=lambda e: e.name)}
    finally:
        os.close(fd)


def _kind(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return "link"
    return "folder" if entry.is_dir(follow_symlinks=False) else "file"


def _named(ws: Workspace, shown: str) -> str | None:
    """The path as named (normalized), relative to the primary root as the paths it
    resolves to are (a subpath session's name gets its folder in front); None where the
    name is no path of the root as written (unconfined, absolute, above the root)."""
    if not ws.confined or shown in (".", "..") or shown.startswith(("/", "../")):
        return None
    return primary_rel(ws, tuple(shown.split("/")))


def primary_rel(ws: Workspace, real_parts: tuple[str, ...]) -> str:
    """Real components below `ws` as a path relative to the primary root (a subpath
    session's paths get its components in front), as `--confirm-path` globs are."""
    if not ws.confined:  # unconfined: relative to the base when inside it, else absolute
        base = tuple(p for p in ws.base.split("/") if p)
        if real_parts[: len(base)] == base:
            return "/".join(real_parts[len(base) :]) or "."
        return "/" + "/".join(real_parts)
    prefix = ws.subpath.parts if ws.anchor is not None and ws.subpath is not None else ()
    return "/".join((*prefix, *real_parts)) or "."


def _below(dir_fd: int, name: str, rel: str, found: Touched) -> None:
    for entry, kind in _walk_below(dir_fd, name, rel):
        if entry is None:
            found.complete = False
            return
        found.entries += 1
        found.add(entry)
        if kind == "link":
            found.links.append(entry)


def entries_below(dir_fd: int, name: str, rel: str) -> Iterator[str | None]:
    """Every entry below a directory (files, folders, links, `.git` included), by fd and
    never through a link; None once TOUCHED_ENTRIES_MAX were given (the rest unseen)."""
    for path, _kind in _walk_below(dir_fd, name, rel):
        yield path


def _walk_below(dir_fd: int, name: str, rel: str) -> Iterator[tuple[str | None, str]]:
    """`entries_below`, each entry with its kind ("link", "folder" or "file")."""
    count = 0
    stack: list[tuple[int, str]] = [(os.open(name or ".", DIR_FLAGS, dir_fd=dir_fd), rel)]
    try:
        while stack:
            top, prefix = stack.pop()
            try:
                try:
                    with os.scandir(top) as it:
                        kinds = sorted((e.name, _kind(e)) for e in it)
                except OSError:
                    kinds = []
                for child, kind in kinds:
                    count += 1
                    if count > TOUCHED_ENTRIES_MAX:
                        yield None, ""
                        return
                    path = f"{prefix}/{child}" if prefix != "." else child
                    yield path, kind
                    if kind == "folder":
                        with contextlib.suppress(OSError):
                            stack.append((os.open(child, DIR_FLAGS, dir_fd=top), path))
            finally:
                os.close(top)
    finally:
        for top, _ in stack:
            os.close(top)
