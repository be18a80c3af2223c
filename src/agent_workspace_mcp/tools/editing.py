"""Edit tools: `edit_file`, `patch` (several exact edits) and `apply_patch` (unified diff).

All three share one path: load the files into a `Workset` (located, locked, decoded),
change text in memory, and only when every edit or hunk succeeded hand the result to
`transaction.commit()`, which writes atomically and restores earlier files if a later
write fails. Answers carry the replacement count and a short unified diff.
"""

from typing import Annotated

from fastmcp import FastMCP
from pydantic import BaseModel, ConfigDict, Field

from ..core import limits, patches
from ..core.editing import Edit, EditError, apply_edit, unified_diff
from ..core.errors import InvalidArgumentError, WorkspaceError
from ..core.state.journal import activity
from ..core.transaction import commit
from ..core.workset import FileState, LoadError, Workset
from ..services import Services
from .base import DESTRUCTIVE, ExpectedSha, WorkspaceArg, add_tool, bind
from .files import PathArg

OldString = Annotated[str, Field(description="Exact text to replace (once, unless replaceAll).")]
NewString = Annotated[str, Field(description="Replacement text.")]
ReplaceAll = Annotated[bool, Field(description="Replace every occurrence.")]
DryRun = Annotated[bool, Field(description="Show the diff, write nothing.")]


class PatchEdit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: PathArg
    oldString: OldString
    newString: NewString
    replaceAll: ReplaceAll = False
    expectedSha256: ExpectedSha = None


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _summary(dry_run: bool, verb: str, what: str) -> str:
    return (
        f"Dry run, nothing written: would have {verb} {what}"
        if dry_run
        else f"{verb.capitalize()} {what}"
    )


def edit_file(
    services: Services,
    path: PathArg,
    oldString: OldString,
    newString: NewString,
    replaceAll: ReplaceAll = False,
    dryRun: DryRun = False,
    expectedSha256: ExpectedSha = None,
    workspace: WorkspaceArg = None,
) -> str:
    """Replace an exact string in a text file; answers with a short diff.

    oldString must match once (or pass replaceAll). A match found only after normalizing
    whitespace, line endings or quotes is used and reported; else the error names the
    closest lines.
    """
    with Workset(services.workspaces.get(workspace), services.locks) as work:
        (state,) = work.load([path])
        activity.record([state.display])
        state.check_sha(expectedSha256)
        outcome = apply_edit(
            state.original_text, Edit(oldString, newString, replaceAll), state.display
        )
        state.text = outcome.text
        changes = work.changes()
        write_or_preview(changes, dryRun)
    detail = _plural(outcome.replacements, "replacement")
    activity.record(detail=detail)
    head = _summary(dryRun, "edited", f"{state.display}: {detail}")
    if outcome.notes:
        head += f" ({'; '.join(outcome.notes)})"
    return f"{head}\n{_diff(state)}"


def patch(
    services: Services,
    edits: Annotated[
        list[PatchEdit],
        Field(
            min_length=1,
            max_length=limits.PATCH_MAX_FILES * 5,
            description="Edits, applied in order.",
        ),
    ],
    dryRun: DryRun = False,
    workspace: WorkspaceArg = None,
) -> str:
    """Apply exact-string edits across one or more files, all or nothing.

    Edits apply in order, each to the file as already edited; if one fails
    (`edit[N] failed: <reason>`), nothing changes.
    """
    with Workset(services.workspaces.get(workspace), services.locks) as work:
        try:
            states = work.load([edit.path for edit in edits])
        except LoadError as exc:
            raise EditError(f"edit[{exc.index}] failed: {exc}") from None
        activity.record([s.display for s in work.order])
        replacements = 0
        notes: list[str] = []
        for index, (edit, state) in enumerate(zip(edits, states, strict=True)):
            try:
                state.check_sha(edit.expectedSha256)
                outcome = apply_edit(
                    state.text or "",
                    Edit(edit.oldString, edit.newString, edit.replaceAll),
                    state.display,
                )
            except WorkspaceError as exc:
                raise EditError(f"edit[{index}] failed: {exc}") from None
            state.text = outcome.text
            replacements += outcome.replacements
            notes.extend(f"edit[{index}] {note}" for note in outcome.notes)
        changes = work.changes()
        write_or_preview(changes, dryRun)
        diffs = [_diff(s) for s in work.changed()]
    detail = f"{_plural(len(edits), 'edit')} across {_plural(len(work.order), 'file')}"
    activity.record(detail=detail)
    head = _summary(dryRun, "patched", f"{detail} ({_plural(replacements, 'replacement')})")
    if notes:
        head += f" ({'; '.join(notes)})"
    return "\n".join([head, *[d for d in diffs if d]])


def apply_patch(
    services: Services,
    patch: Annotated[
        str,
        Field(
            min_length=1,
            max_length=limits.PATCH_MAX_BYTES,
            description="The diff, as `git diff` prints it.",
        ),
    ],
    dryRun: DryRun = False,
    workspace: WorkspaceArg = None,
) -> str:
    """Apply a unified diff, all or nothing.

    Hunks are found by context near the stated lines (stale numbers still apply); a
    hunk that does not apply is named and nothing is written.
    """
    file_patches = patches.parse(patch)
    if len(file_patches) > limits.PATCH_MAX_FILES:
        raise InvalidArgumentError(f"the patch touches more than {limits.PATCH_MAX_FILES} files")
    paths: list[str] = []
    may_be_missing: set[str] = set()
    for fp in file_patches:
        for p in (fp.old_path, fp.new_path):
            if p is not None and p not in paths:
                paths.append(p)
        if fp.old_path is None or (fp.new_path is not None and fp.new_path != fp.old_path):
            may_be_missing.add(fp.new_path or "")
    with Workset(services.workspaces.get(workspace), services.locks) as work:
        loaded = work.load(paths, may_be_missing=frozenset(may_be_missing))
        states = dict(zip(paths, loaded, strict=True))
        activity.record([s.display for s in work.order])
        for fp in file_patches:
            _apply_file_patch(fp, states)
        changes = work.changes()
        write_or_preview(changes, dryRun)
        diffs = [_diff(s) for s in work.changed()]
    detail = _plural(len(changes), "file")
    activity.record(detail=f"{detail} changed")
    return "\n".join([_summary(dryRun, "patched", detail), *[d for d in diffs if d]])


def register(app: FastMCP, services: Services) -> None:
    add_tool(app, bind(edit_file, services), annotations=DESTRUCTIVE, title="Edit file")
    add_tool(app, bind(patch, services), annotations=DESTRUCTIVE, title="Patch files")
    add_tool(app, bind(apply_patch, services), annotations=DESTRUCTIVE, title="Apply unified diff")


def write_or_preview(changes: list, dry_run: bool) -> None:
    if dry_run:
        activity.record(result="dry run, nothing written")
    else:
        for change in changes:
            activity.before_content(change.loc, change.before, change.mode)
        commit(changes)


def _diff(state: FileState) -> str:
    return unified_diff(
        state.original_text,
        state.text or "",
        state.display,
        created=state.before is None,
        deleted=state.text is None,
    )


def _apply_file_patch(fp: patches.FilePatch, states: dict) -> None:
    if fp.old_path is None:  # added file
        target = states[fp.new_path]
        if target.before is not None:
            raise patches.PatchError(
                f"{target.display} already exists; the patch adds it as a new file"
            )
        target.text = patches.apply_hunks("", fp)
        return
    source = states[fp.old_path]
    if source.before is None:
        raise patches.PatchError(f"not found: {source.display}")
    result = patches.apply_hunks(source.text or "", fp)
    if fp.new_path is None:  # deleted file
        if result.strip():
            raise patches.PatchError(
                f"{source.display}: the patch deletes the file but does not remove all its lines"
            )
        source.text = None
        return
    if fp.new_path != fp.old_path:  # rename (with or without changes)
        target = states[fp.new_path]
        if target.before is not None:
            raise patches.PatchError(
                f"{target.display} already exists; the patch renames {source.display} onto it"
            )
        target.doc = source.doc
        target.mode = source.mode
        target.text = result
        source.text = None
        return
    source.text = result
