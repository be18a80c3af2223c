"""All-or-nothing on disk for changes that span several files.

Everything is validated in memory before `commit()` is called; `commit()` then writes
each file atomically. If file k fails (disk full, permission, a file turned into a
directory meanwhile), files 1..k-1 are put back to their previous bytes (or removed,
if they were created) before the error is raised, so the tree is as it was.

New files under missing directories were located with `defer_parents`: those
directories are created here, just before their file is written, and removed again
on rollback; a dry run or a change rejected in memory never creates one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .containment import Located, forget_created, remove_created
from .errors import WorkspaceError, describe_os_error
from .state import stale_reads
from .textio import atomic_write


class TransactionError(WorkspaceError):
    pass


@dataclass
class Change:
    loc: Located
    before: bytes | None  # None: the file did not exist
    after: bytes | None  # None: delete the file
    mode: int | None = None  # permission bits for a re-created or newly created file


def _unlink(loc: Located) -> None:
    try:
        os.unlink(loc.name, dir_fd=loc.dir_fd)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise WorkspaceError(describe_os_error(exc, loc.display)) from None


def _apply(change: Change, made: list[tuple[int, str]]) -> None:
    if change.after is None:
        _unlink(change.loc)
    else:
        made.extend(change.loc.make_parents())
        # A created file (a rename target) takes the mode it had under its old name.
        atomic_write(change.loc, change.after, mode=change.mode if change.before is None else None)
    stale_reads.wrote(change.loc, change.after)


def _undo(change: Change) -> None:
    if change.before is None:
        _unlink(change.loc)
    else:
        atomic_write(change.loc, change.before, mode=change.mode)
    stale_reads.wrote(change.loc, change.before)


def commit(changes: list[Change]) -> None:
    done: list[Change] = []
    made: list[tuple[int, str]] = []  # directories created for new files, in order
    for change in changes:
        try:
            _apply(change, made)
        except WorkspaceError as exc:
            stuck = []
            for previous in reversed(done):
                try:
                    _undo(previous)
                except WorkspaceError:
                    stuck.append(previous.loc.display)
            remove_created(made)
            if stuck:
                raise TransactionError(
                    f"{exc}; could not restore {', '.join(stuck)} (other files were restored)"
                ) from None
            restored = (
                "no file was changed"
                if not done
                else f"{len(done)} file(s) restored, no file was changed"
            )
            raise TransactionError(f"{exc}; {restored}") from None
        done.append(change)
    forget_created(made)
