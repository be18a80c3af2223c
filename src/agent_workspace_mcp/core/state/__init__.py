"""The state directory (`.workspace-mcp/` in each workspace): what the server remembers.

How the pieces relate, from the bottom up:

- `files` locates a state path by identity (a `.workspace-mcp` or a folder in it
  planted as a symlink is replaced, never followed) and opens a state file without
  following links or blocking, regular with one link. Everything else stands on it.
- `records` reads and atomically replaces whole JSON/text files (approvals, changes,
  the symbol index); `foldlog` keeps a mapping as a log of JSON lines appended under a
  lock and folded by readers without one, reading only what was appended since (the
  stale-read records: a change costs one line, however much is remembered); `streams`
  appends JSON lines and reads them back newest first in bounded windows (the journal,
  the notes, the checkpoint index).
- `locks` holds every lock: `state_lock` (threads and processes, bounded wait, naming the
  holder) around each read-modify-write of the files above, and `PathLocks` (per
  resolved path, striped flocks) around each tool's check-and-change of a workspace file.
- The nouns built on them: `journal` (a package: the `activity` hook tools report what
  they changed into, `calls` writing one entry per call with its checkpoint line under one
  state lock, `entries` the store of journal entries and notes, with work_log, remember
  and recall on top); `approvals` (requests and decisions, sealed by core.proofkey);
  `stale_reads` (the guard: what each session last read or wrote of each file);
  `changes` (change records, stage docs, tasks). The checkpoint store (core.checkpoints)
  keeps its objects and index here too, through `files`, `records`, `streams` and
  `locks`.

Nothing here trusts what it reads: the directory is inside the workspace, so anything
in it may have been planted or damaged; a damaged record costs the memory, never a
wrong action (core.safejson, the proofs of core.proofkey).
"""
