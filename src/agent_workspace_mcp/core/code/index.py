"""Which names each source file defines, kept so `find_symbol` parses a file only when
it changed (issue 36).

`find_symbol` asks ripgrep for the files holding the word, then must parse each to
tell a definition from a use: 240 files for Django's `QuerySet`, 0.6 s. Here each file
that was parsed is remembered as its stat signature (device, inode, size, mtime and
ctime in ns: any write changes ctime) with the content digest and the names it
defines. A later query stats a candidate (one call) and, when the signature is the
same, knows without reading it whether the file can define the name; only files that
do, or that changed, are read and parsed. The in-memory outline cache (by digest) then
usually holds their definitions too.

Kept in memory per workspace and in its state directory (`symbols.json`), so a
restarted server starts warm; bounded by SYMBOL_INDEX_FILES, least recently used out.

Trust: a signature is compared by device and inode, so a path that now leads
elsewhere (a directory swapped for a link) never matches a file read before; every
file that is shown is read again through the containment walk. A planted or damaged
`symbols.json` can at worst make a query read more files, or skip a file it claims
defines nothing: it is a hint about which files to read, never something shown.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import stat
import threading
from collections import OrderedDict

from ..containment import open_dir
from ..errors import WorkspaceError
from ..limits import REFERENCE_INDEX_ENTRIES, REFERENCE_INDEX_FILES, SYMBOL_INDEX_FILES
from ..state.records import read_json, write_json
from ..workspaces import Workspace

log = logging.getLogger(__name__)
STATE_FILE = "symbols.json"
REFERENCES_FILE = "references.json"
Signature = tuple[int, int, int, int, int]


class SymbolIndex:
    """One workspace's files: rel -> (signature, names defined)."""

    def __init__(self, ws: Workspace, persist: bool) -> None:
        self.ws = ws
        self.persist = persist
        self.files: OrderedDict[str, tuple[Signature, frozenset[str]]] = OrderedDict()
        self.dirty = False
        self.lock = threading.Lock()
        if persist:
            self._load()

    def signatures(self, rels: list[str]) -> dict[str, Signature | None]:
        return signatures(self.ws, rels)

    def may_define(self, rel: str, signature: Signature | None, word: str) -> bool:
        """False only when the file is known, unchanged, and defines no `word`."""
        if signature is None:
            return True
        with self.lock:
            known = self.files.get(rel)
            if known is None or known[0] != signature:
                return True
            self.files.move_to_end(rel)
            return word in known[1]

    def learn(self, rel: str, signature: Signature | None, names: frozenset[str]) -> None:
        if signature is None:
            return
        with self.lock:
            if self.files.get(rel) == (signature, names):
                return
            self.files[rel] = (signature, names)
            self.files.move_to_end(rel)
            while len(self.files) > SYMBOL_INDEX_FILES:
                self.files.popitem(last=False)
            self.dirty = True

    def save(self) -> None:
        """Write what was learnt to the state directory; best effort."""
        if not (self.persist and self.dirty):
            return
        with self.lock:
            snapshot = {rel: [list(sig), sorted(names)] for rel, (sig, names) in self.files.items()}
            self.dirty = False
        try:
            write_json(self.ws, {"version": 1, "files": snapshot}, STATE_FILE, hint=True)
        except (OSError, WorkspaceError) as exc:
            log.warning("symbol index not saved in %s: %s", self.ws.name, exc)

    def _load(self) -> None:
        try:
            data = read_json(self.ws, STATE_FILE)
        except WorkspaceError as exc:
            log.warning("symbol index ignored in %s: %s", self.ws.name, exc)
            return
        if not isinstance(data, dict) or data.get("version") != 1:
            return
        files = data.get("files")
        if not isinstance(files, dict):
            return
        for rel, entry in list(files.items())[-SYMBOL_INDEX_FILES:]:
            with contextlib.suppress(TypeError, ValueError, OverflowError):
                sig, names = entry
                signature = tuple(int(n) for n in sig)
                if isinstance(rel, str) and len(signature) == 5 and isinstance(names, list):
                    self.files[rel] = (signature, frozenset(str(n) for n in names))


def signatures(ws: Workspace, rels: list[str]) -> dict[str, Signature | None]:
    """Each file's signature now, from the root (None: not a regular file there)."""
    found: dict[str, Signature | None] = {}
    root = open_dir(ws, ())
    try:
        for rel in rels:
            try:
                st = os.stat(rel, dir_fd=root, follow_symlinks=False)
            except (OSError, ValueError):
                found[rel] = None
                continue
            regular = stat.S_ISREG(st.st_mode)
            found[rel] = (
                (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
                if regular
                else None
            )
    finally:
        os.close(root)
    return found


# (line, enclosing definition) of each reference to one word in one file
Lines = tuple[tuple[int, str | None], ...]
Digest = str  # blake2b-128 of a file's bytes, hex


def content_digest(data: bytes) -> Digest:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


class ReferenceIndex:
    """Where each asked-for word is a reference (outside comments and strings), by
    content digest (issue 47): identical files (a vendored copy, a file a branch switch
    or a formatter rewrote unchanged) are judged once. Each file is remembered as its
    stat signature and the digest it had, so a repeated `find_references` reads only
    the files that hold a reference, and parses none whose content it has judged.

    Like the symbol index: bounded (REFERENCE_INDEX_ENTRIES words over all contents,
    REFERENCE_INDEX_FILES files, least recently used out), kept in the state directory
    (`references.json`), a file's entry never trusted past a changed signature, and only
    a hint of which lines to show: each shown line is read again through the
    containment walk and must still hold the word."""

    def __init__(self, ws: Workspace, persist: bool) -> None:
        self.ws = ws
        self.persist = persist
        self.files: OrderedDict[str, tuple[Signature, Digest]] = OrderedDict()
        self.contents: OrderedDict[Digest, dict[str, Lines]] = OrderedDict()
        self.entries = 0
        self.dirty = False
        self.lock = threading.Lock()
        if persist:
            self._load()

    def known(self, rel: str, signature: Signature | None, word: str) -> Lines | None:
        """What is known of `word` in the file, unread: None unless it is unchanged."""
        if signature is None:
            return None
        with self.lock:
            entry = self.files.get(rel)
            if entry is None or entry[0] != signature:
                return None
            self.files.move_to_end(rel)
            return self._words(entry[1], word)

    def by_content(self, digest: Digest, word: str) -> Lines | None:
        """What is known of `word` in any file with these bytes."""
        with self.lock:
            return self._words(digest, word)

    def _words(self, digest: Digest, word: str) -> Lines | None:
        words = self.contents.get(digest)
        if words is None:
            return None
        self.contents.move_to_end(digest)
        return words.get(word)

    def learn(
        self, rel: str, signature: Signature | None, digest: Digest, word: str, lines: Lines
    ) -> None:
        with self.lock:
            if signature is not None and self.files.get(rel) != (signature, digest):
                self.files[rel] = (signature, digest)
                self.files.move_to_end(rel)
                while len(self.files) > REFERENCE_INDEX_FILES:
                    self.files.popitem(last=False)
                self.dirty = True
            words = self.contents.setdefault(digest, {})
            self.contents.move_to_end(digest)
            if words.get(word) == lines:
                return
            self.entries += word not in words
            words[word] = lines
            while self.entries > REFERENCE_INDEX_ENTRIES and self.contents:
                _, dropped = self.contents.popitem(last=False)
                self.entries -= len(dropped)
            self.dirty = True

    def save(self) -> None:
        if not (self.persist and self.dirty):
            return
        with self.lock:
            snapshot = {
                "version": 2,
                "files": {rel: [list(sig), digest] for rel, (sig, digest) in self.files.items()},
                "contents": {
                    digest: {w: [list(x) for x in ls] for w, ls in words.items()}
                    for digest, words in self.contents.items()
                },
            }
            self.dirty = False
        try:
            write_json(self.ws, snapshot, REFERENCES_FILE, hint=True)
        except (OSError, WorkspaceError) as exc:
            log.warning("reference index not saved in %s: %s", self.ws.name, exc)

    def _load(self) -> None:
        """What a previous server kept; an older format or a damaged entry is dropped
        (it costs only time: the files are judged again)."""
        try:
            data = read_json(self.ws, REFERENCES_FILE)
        except WorkspaceError as exc:
            log.warning("reference index ignored in %s: %s", self.ws.name, exc)
            return
        if not (isinstance(data, dict) and data.get("version") == 2):
            return
        files, contents = data.get("files"), data.get("contents")
        if not (isinstance(files, dict) and isinstance(contents, dict)):
            return
        for digest, words in contents.items():
            with contextlib.suppress(TypeError, ValueError, OverflowError, AttributeError):
                kept = {
                    str(w): tuple((int(line), None if e is None else str(e)) for line, e in ls)
                    for w, ls in words.items()
                }
                if not kept:
                    continue  # never written so: nothing to know, only memory to take
                if self.entries + len(kept) > REFERENCE_INDEX_ENTRIES:
                    break
                self.contents[str(digest)] = kept
                self.entries += len(kept)
        for rel, entry in list(files.items())[-REFERENCE_INDEX_FILES:]:
            with contextlib.suppress(TypeError, ValueError, OverflowError):
                sig, digest = entry
                signature = tuple(int(n) for n in sig)
                if isinstance(rel, str) and len(signature) == 5 and isinstance(digest, str):
                    self.files[rel] = (signature, digest)


_indexes: dict[tuple[str, str], SymbolIndex] = {}
_ref_indexes: dict[tuple[str, str], ReferenceIndex] = {}


def references_for(ws: Workspace, persist: bool) -> ReferenceIndex:
    """The process's reference index of this workspace root."""
    key = (ws.name, ws.root)
    with _indexes_lock:
        found = _ref_indexes.get(key)
        if found is None:
            found = _ref_indexes[key] = ReferenceIndex(ws, persist)
        return found


_indexes_lock = threading.Lock()


def index_for(ws: Workspace, persist: bool) -> SymbolIndex:
    """The process's index of this workspace root (one per root, shared by sessions)."""
    key = (ws.name, ws.root)
    with _indexes_lock:
        found = _indexes.get(key)
        if found is None:
            found = _indexes[key] = SymbolIndex(ws, persist)
        return found
