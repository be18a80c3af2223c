"""Checkpoints (issue 17): every mutating call's previous state, so any change can be
undone byte for byte, with or without git.

- store.py: content-addressed objects and the call index under `.workspace-mcp/`;
- states.py: what a path holds (file, directory, symlink, nothing) and putting it back;
- recorder.py: one call's checkpoint, before and after;
- history.py: the recorded calls, which are undone, and what an undo restores.
"""
