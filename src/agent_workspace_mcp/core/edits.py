"""Edit, then approve (issue 48, item 3): the person's version of a proposed change.

For `write_file`, `edit_file`, `patch` and `apply_patch` the person may change what the
call would write before approving it; the call then runs with their version, and its
answer tells the agent what the person changed and why. Only the text being written may
change, never where it goes: a write's `content`, an edit's new strings (same files, same
old strings), a diff whose files are the ones shown or fewer (the approval gate checks
the paths the edited diff resolves to against the approved ones before it runs).
"""

from __future__ import annotations

from typing import Any

from .errors import InvalidArgumentError

# tool -> the arguments a person may change
EDITABLE: dict[str, tuple[str, ...]] = {
    "write_file": ("content",),
    "edit_file": ("newString", "new_string", "edits"),
    "patch": ("edits",),
    "apply_patch": ("patch",),
}


def merged(tool: str, arguments: dict[str, Any], edit: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments with the person's changes; one sentence refusing any change
    to more than the text being written."""
    allowed = EDITABLE.get(tool)
    if allowed is None:
        raise InvalidArgumentError(f"{tool} cannot be edited before approval (only writes)")
    if not edit or any(key not in allowed for key in edit):
        names = ", ".join(allowed)
        raise InvalidArgumentError(f"a person may change only {names} of {tool}")
    for key, value in edit.items():
        if key == "edits":
            _same_places(arguments.get("edits"), value)
        elif not isinstance(value, str):
            raise InvalidArgumentError(f"{key} is text")
    return {**arguments, **edit}


def _same_places(before: object, after: object) -> None:
    """Edits may change their new strings only: same count, paths and old strings."""
    if not isinstance(before, list) or not isinstance(after, list) or len(before) != len(after):
        raise InvalidArgumentError("the edited edits must be the same edits, with new strings")
    for old, new in zip(before, after, strict=True):
        if not isinstance(old, dict) or not isinstance(new, dict):
            raise InvalidArgumentError("each edit is an object")
        fixed = {k: v for k, v in old.items() if k not in ("newString", "new_string")}
        if {k: v for k, v in new.items() if k not in ("newString", "new_string")} != fixed:
            raise InvalidArgumentError(
                "only an edit's newString may change: its path and oldString stay as proposed"
            )
        if not isinstance(new.get("newString", new.get("new_string")), str):
            raise InvalidArgumentError("each edit's newString is text")
