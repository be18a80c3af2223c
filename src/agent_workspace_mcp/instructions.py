"""The server instructions sent to clients at initialize."""

INSTRUCTIONS = """\
Workspace tools for reading, searching and editing files in the configured project \
workspaces. Paths are workspace-relative (absolute paths inside a workspace work \
too); call workspace_list to see the workspaces \
and pass `workspace` to target one other than the primary.

Reading: read_file returns numbered lines `N: text`; when an answer is truncated it \
says which `offset` continues it. Binary files: read_binary_file.

Skills: resource://skills lists the installed Agent Skills; load one with the skill \
tool when a task matches its description. Larger work: track it with change_create, \
change_doc, task_add and task_update; change_status re-orients in one call.

Session convention: at the start of a session, call work_log (what happened recently) \
and recall (notes saved deliberately) to recover context. After finishing a chunk of \
work, call remember with what changed and what should happen next.
"""

# Said only where the undo tools are served (not with --no-checkpoints, --read-only or
# a profile whose surface has no undo).
UNDO = """
Undo: every file change is recorded; undo reverts the last ones (or every call after a \
work_log entry id), restore_file puts one path back.
"""


def instructions(*, undo: bool) -> str:
    return INSTRUCTIONS + UNDO if undo else INSTRUCTIONS
