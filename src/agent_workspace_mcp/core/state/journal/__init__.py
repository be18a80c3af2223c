"""The journal: one entry per call, what it touched and how it ended, in `.workspace-mcp/`.

How the pieces relate, in the order a call meets them:

- `activity` is the hook point. Whoever wraps a call opens a capture (`capture()`); the
  tool body reports what it changed (`record(paths, detail)`) and what a path held before
  (`before`, for the checkpoint). Outside a capture every hook does nothing, so tools run
  without a journal in core code and tests.
- `calls` is one journaled call, however it arrives (an agent's tool call through
  middleware.journal, an operator's action in the console): it opens the capture and the
  checkpoint recorder, then writes the entry and its checkpoint line under one state lock,
  success or failure.
- `entries` is the store (`Memory`): journal entries and notes as JSON lines in the
  backbone's on-disk format, read back newest first in bounded windows, and how an entry
  or a note is rendered for an agent (one line per record, breaks escaped).

The middleware (middleware/journal.py) is only the FastMCP adapter: it names the tool and
the workspace and hands the call to `calls`.
"""
