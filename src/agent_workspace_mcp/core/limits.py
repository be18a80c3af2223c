"""Every number that limits the server's behaviour, named, with where it comes from.

Sources: "seed" is the Limits table of `workspace-mcp.md` (the backbone document);
"issue N" is the project issue that set it; "ours" is a choice made here, with why.
Nothing outside this module may hard-code a limit.
"""

from __future__ import annotations

KIB = 1024
MIB = 1024 * KIB

# --- reading -----------------------------------------------------------------
READ_LINES_PER_SEGMENT = 2000  # seed: read_file lines per segment (hard cap, limit is clamped)
READ_BYTES_PER_SEGMENT = 1 * MIB  # seed: read_file bytes per segment (~1 MiB)
READ_CHARS_PER_LINE = 2000  # seed: characters per rendered line, then "... (line truncated)"
# issue 2: every answer stays under ~25k tokens (Claude Code rejects larger tool
# results). Code averages 3-4 characters per token, so 64 KiB of rendered text is
# about 16-22k tokens and leaves room for the framing.
ANSWER_BYTES = 64 * KIB
# ours: the hard ceiling every text answer is cut to (at a line boundary, with a marker),
# whatever produced it; ~80 KiB is ~25k tokens for dense text. Tools aim for ANSWER_BYTES.
ANSWER_HARD_BYTES = 80 * KIB
MAX_FILE_BYTES = 16 * MIB  # seed: file size that can be read or edited
BINARY_SNIFF_BYTES = 8 * KIB  # seed: binary detection window (NUL in the first 8 KiB)
READ_FILES_MAX_PATHS = 50  # ours: one read_files call; more is a listing, not a batch
# ours: raw bytes per read_binary_file call. Base64 grows by 4/3 and tokenizes at
# roughly 1.5 characters per token, so 48 KiB stays inside the answer budget.
READ_BINARY_CHUNK_BYTES = 48 * KIB
# ours: images are returned as MCP image content, which clients do not count as
# text tokens; 5 MiB matches the largest image the common chat clients accept.
READ_IMAGE_MAX_BYTES = 5 * MIB
WRITE_MAX_BYTES = MAX_FILE_BYTES  # seed: the same 16 MiB bound applies to what we write

# --- editing -----------------------------------------------------------------
# ours: a unified diff of an edit is a confirmation, not a review; 200 lines is about
# 8 KiB and shows any ordinary edit whole. Longer diffs end with a count of the rest.
EDIT_DIFF_MAX_LINES = 200
# ours (issue 44): write_file over an existing file answers with its diff, shorter than an
# edit's (a whole-file rewrite can touch every line), and only for files up to this size
# (difflib's cost grows faster than the file).
WRITE_DIFF_MAX_LINES = 40
WRITE_DIFF_MAX_BYTES = 1024 * 1024
# ours: a line of that diff is shown up to this many characters, like grep's matches
# (a minified or generated file's one 10 KB line was otherwise echoed twice, -old +new).
WRITE_DIFF_LINE_CHARS = 400
# ours: how many candidate line windows the near-miss search scores with difflib;
# bounds its cost on large files (each score is O(window length)).
EDIT_CANDIDATE_WINDOWS = 400
PATCH_MAX_FILES = 200  # ours: one apply_patch/patch call; more is a migration, not an edit
PATCH_MAX_BYTES = 4 * MIB  # ours: the patch text itself

# --- containment -------------------------------------------------------------
# ours: the same bound as Linux's MAXSYMLINKS (40), so a symlink chain that the
# kernel would refuse is refused here too, and a loop ends.
SYMLINK_HOPS = 40
PATH_MAX_CHARS = 4096  # ours: PATH_MAX on Linux; longer input is refused before any syscall

# --- search and listing (seed) -------------------------------------------------
GREP_DEFAULT_RESULTS = 100
GREP_MAX_RESULTS = 1000
GREP_BYTES_PER_FILE = 1 * MIB
LIST_DEFAULT_ENTRIES = 500
LIST_MAX_ENTRIES = 5000
LIST_DEFAULT_DEPTH = 6
LIST_MAX_DEPTH = 12
IGNORED_DIRS = (".git", "node_modules", ".cache", ".workspace-mcp")
# ours: one grep call's wall-clock budget (rg run or Python scan); past it the call
# fails with a sentence instead of holding the client (which gives up near 60 s).
GREP_TIME_BUDGET_SECONDS = 20.0
# ours: a matched line is shown up to this many characters; minified files have
# megabyte lines that would otherwise fill the whole answer with one match.
GREP_LINE_CHARS = 400
GREP_MAX_CONTEXT = 10  # ours: contextLines cap; more is reading, use read_file
# ours (issue 13): when a search found fewer results than asked, how long we may look for
# one .gitignore'd entry to say that rules hid files; past it the answer says nothing.
RULES_CHECK_SECONDS = 0.25
RULES_CHECK_CACHE_SECONDS = 10.0  # ours: its answer is reused this long per search root
# ours: how much of rg's stderr is kept (only a regex parse error is ever shown, and it
# comes first); the rest is drained and dropped so rg never blocks on a full pipe.
RG_STDERR_KEPT_BYTES = 16 * KIB

# --- command execution (seed unless marked) ------------------------------------
RUN_TIMEOUT_DEFAULT_MS = 120_000
RUN_TIMEOUT_MIN_MS = 1_000
RUN_TIMEOUT_MAX_MS = 600_000
OUTPUT_COLLAPSE_BYTES = 256 * KIB  # above this only the head and the tail are kept
OUTPUT_HEAD_BYTES = 32 * KIB
OUTPUT_TAIL_BYTES = 32 * KIB
# What a model sees: the answer budget collapses output the same way above ANSWER_BYTES,
# which is smaller than the seed's 256 KiB, so this is where output is shortened.
OUTPUT_SHORTENED_ABOVE_BYTES = min(OUTPUT_COLLAPSE_BYTES, ANSWER_BYTES)
KILL_GRACE_SECONDS = 3.0  # between SIGTERM and SIGKILL, for commands and jobs
# ours: after the command itself exited, how long we keep reading a pipe that a
# grandchild still holds open before giving up on it (issue 5).
PIPE_DRAIN_GRACE_SECONDS = 0.5
# issue 5: clients give up on a call after about 60 s; a command still running after
# this long is handed to the job registry instead of being killed.
PROMOTE_AFTER_DEFAULT_MS = 45_000
# A client that speaks the tasks extension (SEP-2663) polls a task instead of holding the
# call open: a command still running after this becomes its task (the spec's
# "immediate-result shortcut" answers quicker ones in the call).
TASK_PROMOTE_AFTER_MS = 1_000
# How often a task client is told to poll tasks/get (SEP-2663 `pollIntervalMs`).
TASK_POLL_INTERVAL_MS = 1_000
# persona document: WORKSPACE_SHELL_MAX_TIMEOUT caps the bash tool's timeout (seconds).
SHELL_MAX_TIMEOUT_DEFAULT_SECONDS = 600
PROGRESS_INTERVAL_SECONDS = 2.0  # ours: how often a long command reports progress
JOB_MAX_RUNTIME_DEFAULT_MS = 1_800_000
JOB_MAX_RUNTIME_MIN_MS = 1_000
JOB_MAX_RUNTIME_MAX_MS = 7_200_000
JOB_LOG_CAP_BYTES = 64 * MIB
JOB_TAIL_DEFAULT_BYTES = 8192
JOB_TAIL_MAX_BYTES = 262_144
JOB_LIST_RECENT = 20
TASK_TIMEOUT_DEFAULT_SECONDS = 600  # ours: run_task default (tests and builds are slow)
TASK_MAX_PATHS = 50  # ours: paths per run_task call

# --- HTTP (ours) ---------------------------------------------------------------------
# Session -> subject/subpath records kept by the HTTP layer. The SDK closes idle sessions
# after 30 minutes without telling us; the oldest records are dropped past this bound so
# a long-running server cannot grow without limit.
HTTP_TRACKED_SESSIONS = 10_000
# Open HTTP sessions (each holds the SDK's transport and streams in memory; the 2026 SDK
# advisories were memory exhaustion by sessions that never expire and have no cap): a new
# one past either bound is refused with 503 and a sentence; idle ones expire
# (--session-idle-timeout, 30 minutes as FastMCP 4.1 chose).
# ours: the defaults of --sessions-per-credential (an agent with subagents opens a handful)
# and --sessions-max (per server process)
HTTP_SESSIONS_PER_SUBJECT = 64
HTTP_SESSIONS_MAX = 1_000

# --- input bounds (issue 19) ---------------------------------------------------------
# ours: an error quotes at most this much of a caller's value, then its length; enough
# to recognise a path or a name, never a megabyte in the model's context.
ECHO_CHARS = 120
# ours (issue 19): an error is one line of at most this many characters ("a few hundred")
ERROR_MAX_CHARS = 500
ECHO_LISTED = 10  # ours: "Available: a, b, ... and N more" names at most this many
IDENTIFIER_MAX_CHARS = 200  # ours: names and ids (the longest we mint is a 60-char slug)
# ours: resources/read; ours and skill://<name>/<file> URIs are far shorter, and FastMCP
# quotes a URI it cannot find whole in its error.
RESOURCE_URI_MAX_CHARS = 512
NAME_MAX_CHARS = 255  # Linux NAME_MAX: one path component (rename_path's newName)
GLOB_MAX_CHARS = 1000  # ours: a 1 MB glob took 36 s to compile; 1,000 characters takes ms
# ours: how many patterns a glob's braces may expand to (`{a,b}{c,d}` is 4); reaching
# wcmatch's default of 1,000 took 0.9 s, and real globs need a handful.
GLOB_MAX_EXPANSIONS = 100
TEXT_ARG_MAX_CHARS = 10_000  # ours: titles, goals, notes, task text: a note, not a document
# Linux MAX_ARG_STRLEN (32 pages): exec refuses one longer argument, so a longer command
# word or bash script could never run anyway.
COMMAND_ARG_MAX_CHARS = 128 * KIB
SHA256_HEX_CHARS = 64
# ours: how deep an argument value may nest (our deepest schema is 3: edits[].path) and
# how many items one list or object argument may hold.
ARGUMENT_MAX_DEPTH = 16
ARGUMENT_MAX_ITEMS = 1000
ARGUMENT_DEFAULT_CHARS = 4096  # a string argument not named below: PATH_MAX, as for paths
# Every string argument's maximum length in characters, by argument name (list items
# count under their list's name), checked before any work. A tool may refuse less.
ARGUMENT_CHARS = {
    **dict.fromkeys(
        ("path", "paths", "source", "destination", "cwd", "file", "after"), PATH_MAX_CHARS
    ),
    "newName": NAME_MAX_CHARS,
    **dict.fromkeys(("content", "oldString", "newString"), WRITE_MAX_BYTES),
    "contentBase64": -(-WRITE_MAX_BYTES // 3) * 4,  # base64 of the largest write
    "patch": PATCH_MAX_BYTES,
    **dict.fromkeys(("pattern", "include"), GLOB_MAX_CHARS),  # grep's regex too
    "command": COMMAND_ARG_MAX_CHARS,
    "expectedSha256": SHA256_HEX_CHARS,
    **dict.fromkeys(("goal", "title", "note", "text", "query"), TEXT_ARG_MAX_CHARS),
    **dict.fromkeys(
        (
            "workspace",
            "changeId",
            "change",
            "taskId",
            "jobId",
            "name",
            "runner",
            "task",
            "stage",
            "status",
            "tag",
            "tags",
            "since",
            "kind",
            "to",
            "before",
            "id",
            "ids",
            "session",
        ),
        IDENTIFIER_MAX_CHARS,
    ),
}

# --- misc (ours) ---------------------------------------------------------------------
TOOL_SEARCH_RESULTS = 5  # --tool-search: tools per search_tools answer (FastMCP's default)
GITIGNORE_MAX_BYTES = 1 * MIB  # a .gitignore larger than this is read only this far
# issue 18, --workers: more processes than cores only add memory; 32 covers big nodes.
WORKERS_MAX = 32
WORKER_READY_SECONDS = 60.0  # a worker that has not bound its loop by then failed to start
WORKER_RESTART_DELAY_SECONDS = 1.0  # before replacing a worker that died (no busy loop)
WORKER_STABLE_SECONDS = 60.0  # a worker dying sooner doubles the next delay ...
WORKER_RESTART_MAX_DELAY_SECONDS = 30.0  # ... up to this (a crash loop stays quiet)
# SIGTERM to SIGKILL for workers: a worker takes at most 3 s (HTTP graceful) + 5 s
# (SHUTDOWN_CLEANUP_SECONDS); orphans then take KILL_GRACE: all within a pod's 20 s grace.
WORKER_STOP_SECONDS = 10.0
SUPERVISOR_TICK_SECONDS = 0.25  # reaping and orphan-deadline checks
ORPHAN_SWEEP_SECONDS = 1.0  # how often the supervisor looks for orphaned jobs past deadline
ORPHAN_DEADLINE_SLACK_SECONDS = 2.0  # past maxRuntimeMs before the supervisor stops one
REMOTE_KILL_WAIT_SECONDS = 1.0  # a kill through another worker waits this long for the record
LOCK_STRIPES = 256  # cross-worker path locks: files hashed onto this many lock files
# ours (issue 47): threads running synchronous work off the event loop at once
# (handoff.py), and how long one may sit idle before it ends: anyio's defaults (its
# thread limiter's 40 tokens, its workers' 10 s), which ran that work before.
HANDOFF_THREADS = 40
HANDOFF_IDLE_SECONDS = 10.0
JOB_RECORD_MAX_BYTES = 16_384  # a job record is a few hundred bytes; bigger ones are not ours
JOBS_REMEMBERED = 200  # finished jobs past this are forgotten (their logs stay on disk)
HINT_DIR_ENTRIES = 5000  # a directory larger than this gets no "did you mean" hint
SHA_SHOWN = 16  # ours: hex digits of sha256 answers show; expectedSha256 takes >= 8
# ours: every "did you mean" (paths, symbols, tools, flags, profiles, clients): difflib's
# ratio at least this ("utlis" ~ "utils", "Sesion" ~ "Session", "sc" ~ "src", not
# "a" ~ "b"), or a candidate that starts with what was typed, once it is this long.
NEAR_MISS_RATIO = 0.75
NEAR_MISS_PREFIX_CHARS = 3
EDIT_MATCHES_LISTED = 10  # ambiguous-match errors name at most this many lines
EDIT_MATCHES_COUNTED = 1000  # occurrences counted before "matches N times" stops counting
BWRAP_PROBE_SECONDS = 20.0  # start-up check that bubblewrap can create its namespaces
JWT_LEEWAY_SECONDS = 30  # issue 8: exp/nbf checked "with small leeway"
JWKS_FETCH_SECONDS = 10.0  # fetching the issuer's JWKS
JWKS_CACHE_SECONDS = 300  # ours: the issuer's keys are fetched again after this
LATENCY_BUCKETS_SECONDS = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    10,
    60,
    300,
)  # ours: tool-call histogram buckets
COMMAND_SHOWN_CHARS = 300  # ours: a command line quoted in an answer or error, then "..."
CHECK_LOG_LINES = 5  # `check` shows the server's last stderr lines when a step fails
# ours (issue 15): grep's sorted probe runs until it fills maxResults or the parallel scan
# beside it ends; a probe with no match at all this early is a sparse query and is
# stopped at once (measured with bench/search.py: a sorted rg reports Django's first
# `import` line after ~6 ms).
GREP_PROBE_FIRST_MATCH_SECONDS = 0.012
# ...and one whose pace (answer share per second, checked every 10 ms) projects a full
# answer later than this: the parallel scan would likely end first anyway.
GREP_PROBE_PROJECTED_SECONDS = 1.5
GREP_PROBE_CHECK_SECONDS = 0.01
# ours (issue 36): when, after the parallel scan starts, its pace is looked at to decide
# whether a sorted probe beside it is worth starting (a dense query: `import` in Django
# has hundreds of matches by the first look; a sparse one a handful or none). The later
# looks serve big trees and cold disks (Django x20 uncached: rg alone took 22 s).
GREP_PROBE_LOOKS_SECONDS = (0.005, 0.015, 0.05, 0.15, 0.5, 1.5, 5.0)
GREP_PROBE_MARGIN = 0.5  # ours: a probe starts when its projected fill is within half of that
# ...and a probe so started has this share of the scan's expected remaining time (at
# least GREP_PROBE_FIRST_MATCH_SECONDS) to find its first match in path order.
GREP_PROBE_PATIENCE_SHARE = 0.25
# ours (issue 36): the parallel scan keeps, in path order, the files with this many matches
# beyond maxResults (a match its re-check through the containment walk drops is replaced);
# trees whose last full-scan time is kept, for the probe's give-up rule.
GREP_SCAN_SPARE_MATCHES = 50
GREP_SCAN_TIMES_KEPT = 64
DIR_FD_CACHE = 32  # directory fds list_files keeps open while sniffing rg's results
# ours: directory fds a grep's re-check keeps open (its scan, then its probe or the files
# taken after it; one at a time but for a probe beside its scan). Matching files are
# sparse, so few share a folder; small, so many concurrent greps stay far below a
# 1024-fd limit (a walk per file held as many while it ran).
GREP_DIR_FD_CACHE = 8

# --- code navigation (issue 16) ---------------------------------------------------------
OUTLINE_SIGNATURE_CHARS = 200  # ours: one outline line's signature; the rest is read_symbol
# ours (issue 28): bytes of source a signature is cut from (its whitespace is collapsed
# first, so a few times OUTLINE_SIGNATURE_CHARS)
OUTLINE_SIGNATURE_SCAN_BYTES = 4 * OUTLINE_SIGNATURE_CHARS
# ours (issue 28): tree-sitter finds a node's parent and siblings by walking down from the
# root, so work per definition grows with nesting; past these a file's outline (or its
# references) and a whole navigation call stop and say so, well inside clients' ~60 s.
CODE_FILE_SECONDS = 5.0
# ours (issue 43): past this size a file is parsed with a deadline (through a read
# callback, which makes node.text slow afterwards) and its definitions are found by a
# walk that looks at the clock instead of tree-sitter's query (fast, but unstoppable and
# superlinear on a node with millions of children); Django's largest module is ~100 KB.
OUTLINE_QUERY_MAX_BYTES = 1 * 1024 * 1024
CODE_CALL_SECONDS = 20.0
# ours (issue 28): outline shows nesting up to this depth by indentation; deeper lines are
# indented no further (a 24,000-level file would spend the answer on spaces)
OUTLINE_INDENT_MAX_DEPTH = 32
# ours: files whose definitions are kept, keyed by content digest (a few KiB each)
OUTLINE_CACHE_FILES = 256
SYMBOL_MATCHES_LISTED = 50  # ours: definitions one find_symbol/read_symbol answer lists

# --- frames (issue 19) -----------------------------------------------------------------
# ours: one stdio line; a 16 MiB write, JSON-escaped or base64-encoded, fits.
STDIO_FRAME_MAX_BYTES = 32 * MIB
# the MCP SDK's DEFAULT_MAX_REQUEST_BODY_SIZE: FastMCP 4.2 gives no way to raise it, so
# over HTTP one request (and so one write_file) is at most 4 MiB.
HTTP_FRAME_MAX_BYTES = 4 * MIB
FRAME_ID_MAX_CHARS = IDENTIFIER_MAX_CHARS  # a request id is echoed in its reply
FRAME_METHOD_MAX_CHARS = IDENTIFIER_MAX_CHARS  # the longest MCP method name is 36

# --- state (seed) ------------------------------------------------------------------
STATE_DIR_NAME = ".workspace-mcp"  # per-workspace state directory
JOURNAL_MAX_BYTES_DEFAULT = 5 * MIB  # WORKSPACE_MCP_JOURNAL_MAX_BYTES; journal and notes rotate
STATE_READ_BYTES = 1 * MIB  # reads: last 1 MiB of the current file, then of `.1`
JOURNAL_FIELD_CHARS = 300  # `detail` and `result` are truncated to this
# ours (issue 28): the longest a call waits for the state lock (another process's undo
# or prune holds it for a second or two); past it the call fails naming the holder,
# well inside clients' ~60 s request limit.
STATE_LOCK_WAIT_SECONDS = 10.0
STATE_LOCK_POLL_SECONDS = 0.005  # first retry of a busy lock; doubles up to 0.1 s
# ours (issue 28): start-up removal of temp files an interrupted write left (core.sweep).
# A temp file younger than this may be another live server's write in flight (a 16 MiB
# write with fsync takes well under a second here).
TMP_STALE_SECONDS = 10.0
TMP_SWEEP_DELAY_SECONDS = 1.0  # after start-up, so the walk never slows `initialize`
TMP_SWEEP_MAX_ENTRIES = 200_000  # entries walked per workspace (Django's tree is 10,165)
WORK_LOG_DEFAULT = 50
WORK_LOG_MAX = 500
RECALL_DEFAULT = 20
RECALL_MAX = 100
REMEMBER_MAX_TAGS = 20
REMEMBER_TAG_CHARS = 50
REMEMBER_TEXT_CHARS = 10_000  # ours: a note is a note, not a document (use change_doc)
CHANGE_RECENT_ENTRIES = 10  # change_status shows the last 10 tagged journal entries
CHANGE_DOC_MAX_BYTES = 1 * MIB  # ours: one change_doc call
SLUG_MAX_CHARS = 60  # ours: change ids stay readable in paths and answers

# --- checkpoints (issue 17: every write can be undone) ---------------------------
# ours: the content store under .workspace-mcp/checkpoints/ holds at most this much;
# past it the oldest checkpoints are pruned first (work_log then says which entries are
# no longer undoable). 256 MiB is a few thousand edits of ordinary source files.
CHECKPOINT_STORE_MAX_BYTES = 256 * MIB
CHECKPOINT_PRUNE_TO = 0.8  # ours: prune down to 80% of the cap, so pruning is rare
# ours: a file above this is recorded as not restorable (its size and time only),
# the same bound as reading and editing.
CHECKPOINT_FILE_MAX_BYTES = MAX_FILE_BYTES
# ours: one call records at most this many paths (a recursive delete or move of a
# directory); beyond it the call is recorded as not restorable.
CHECKPOINT_MAX_PATHS = 10_000
CHECKPOINT_CALL_MAX_BYTES = 64 * MIB  # ours: content one call may add to the store
# ours: the index keeps this many calls; older lines are dropped (as pruned).
CHECKPOINT_INDEX_MAX_LINES = 5_000
# ours: a manifest up to this size is kept in its index line; larger ones are objects.
CHECKPOINT_INLINE_MANIFEST_BYTES = 2 * KIB
# ours: a stored object younger than this is never collected, so a call that stored it
# and has not yet written its index line (another process, mid-call) keeps it.
CHECKPOINT_GC_GRACE_SECONDS = 3600
# --- a command's changes (issue 46: recorded like an edit) --------------------------
# ours: the before/after scan of a command stops past this many entries (ten Django
# trees); a larger tree is recorded as far as the scan went and the answer says so.
TREE_SCAN_MAX_ENTRIES = 250_000
# ours: content the first scan of a never-seen tree stores (later scans store only what
# changed); a file past it is recorded by its digest only, so not restorable.
TREE_BASELINE_MAX_BYTES = 128 * MIB
# ours: workspaces whose tree index a process keeps (an inotify instance each; the
# kernel's default is 128 per user): a server has a few; tests make hundreds.
TREE_INDEXES_KEPT = 8
COMMAND_CHANGES_SHOWN = 8  # ours: the answer's "changed N files:" line names this many
UNDO_DIFF_MAX_BYTES = 1 * MIB  # ours: undo shows line counts for text files up to this
UNDO_MAX_STEPS = 100  # ours: undo(steps) at most; a larger range is `to` or `change`
UNDO_LINES_SHOWN = 30  # ours: per-path lines in an undo answer; the rest are counted

# --- skills (agentskills.io limits, as FastMCP 4.2 enforces them) -----------------
SKILL_FILES_MAX = 512
SKILL_TOTAL_MAX_BYTES = 16 * MIB
# ours: the skill tool answers with the whole SKILL.md, which must fit the answer budget
SKILL_MD_MAX_BYTES = 48 * KIB
SKILL_FILES_LISTED = 200  # ours: bundled paths shown by the skill tool; the rest are counted

# --- audit (ours; "rotated like the journal", issue 7) ---------------------------------
AUDIT_FIELD_CHARS = 300
AUDIT_PATHS_LISTED = 50  # paths one audit record names; the rest are counted

# --- git (seed unless marked) -------------------------------------------------------
GIT_STATUS_TIMEOUT_SECONDS = 10.0
GIT_DIFF_TIMEOUT_SECONDS = 30.0
GIT_LOG_TIMEOUT_SECONDS = 10.0  # ours, like git_status
GIT_OUTPUT_BYTES = 64 * KIB  # first 32 KiB + last 32 KiB beyond this
GIT_LOG_DEFAULT = 20  # ours
GIT_LOG_MAX = 200  # ours
GIT_ALTERNATES_MAX_BYTES = 64 * KIB  # ours: an alternates file is a few paths
# issue 36: workspace views whose repository check and filter-driver list are kept
# (re-used while their fingerprint holds), and how much of a config file is scanned for
# `include` (one that includes others is never cached).
GIT_CHECKS_CACHED = 64
GIT_CONFIG_SCAN_BYTES = 1 * MIB

# --- shutdown ------------------------------------------------------------------
# ours: how long a signal-triggered shutdown waits for cleanup before exiting anyway,
# so a stuck cleanup can never keep a desktop client's server process alive.
SHUTDOWN_CLEANUP_SECONDS = 5.0

# --- operator console (issue 31) ----------------------------------------------------
CONSOLE_DIFF_LINES = 400  # ours: diff lines shown per file; the rest are counted
CONSOLE_DIFF_MAX_BYTES = 2 * MIB  # ours: a file larger than this is shown by size only
CONSOLE_ENTRIES = 200  # ours: timeline entries per page
CONSOLE_HISTORY_ENTRIES = 50  # ours: one file's history per page (each diffed for counts)
CONSOLE_POLL_SECONDS = 0.5  # ours: how often the live stream looks for new entries
CONSOLE_TOKEN_BYTES = 32  # ours: the one-time login token and the session signing key
CONSOLE_SESSION_SECONDS = 12 * 3600  # ours: a signed-in browser signs in again after this
OPERATOR_TOKEN_MIN_CHARS = 16  # ours: the console's credential over HTTP (it can undo all)

# --- approvals (issue 32) ----------------------------------------------------------------
# Clients give up on a request after about 60 s (Claude Desktop, the SDKs' defaults): a
# call waits for a person at most this long, then answers "pending" with the approval id.
CONFIRM_WAIT_SECONDS = 20.0
CONFIRM_POLL_SECONDS = 0.25  # ours: how often a waiting call looks for the decision
CONFIRM_TIMEOUT_DEFAULT = 300.0  # ours: no answer within this refuses the call
CONFIRM_TIMEOUT_MAX = 24 * 3600.0  # ours
CONFIRM_USE_SECONDS = 600.0  # ours: an approval must be used within this of the decision
CONFIRM_KEPT = 500  # ours: approval records kept per workspace (oldest decided go first)
CONFIRM_SUMMARY_MAX_CHARS = 8_000  # ours: what the person is shown of one call
CONFIRM_LIST_MAX = 50  # ours: files named in a delete's preview
# ours (issue 48): `--confirm risky` asks about a call that deletes more entries than this
# (a folder of generated files is routine; a source tree is not)
RISKY_DELETE_ENTRIES = 20
# ours (issue 48, --confirm-hook): a reviewer program answers within this, or it denies
# (a person's wait is CONFIRM_WAIT_SECONDS; the program's must leave room for one)
CONFIRM_HOOK_SECONDS = 10.0
CONFIRM_HOOK_OUTPUT_BYTES = 4_096  # ours: what is read of its answer
CONFIRM_HOOK_STDERR_CHARS = 300  # ours: its stderr tail kept with a denial
# ours (issue 48, --confirm-notify): the webhook's answer is waited for at most this, out
# of the call's CONFIRM_WAIT_SECONDS for a person
CONFIRM_NOTIFY_SECONDS = 3.0
# ours (issue 48, grants): the longest a person's "and the same kind" lasts, and the
# console's default (a working session; a grant must not outlive the person's attention)
GRANT_MAX_SECONDS = 8 * 3600
GRANT_MINUTES_DEFAULT = 30
# ours (issue 48, edit-then-approve): a write's arguments kept with its request for the
# person to edit; larger ones are approved or denied as they are
CONFIRM_EDIT_MAX_BYTES = 256 * 1024
# ours (issue 46, --stage-commands): mounting or unmounting a command's copy-on-write view
# (fuse-overlayfs answers in milliseconds; a hung FUSE daemon must not hang the call)
STAGE_MOUNT_SECONDS = 10.0
CONFIRM_OUTPUT_SHOWN_CHARS = 1_500  # ours: a staged command's output tail in its request
# ours (issue 43): entries walked below a folder a call deletes, moves or renames, to
# match --confirm-path globs and count what a delete removes; past it the call is
# treated as touching a protected path (asked, never waved through).
TOUCHED_ENTRIES_MAX = 20_000
# ours (issue 43): one page of the review panel's data, under the answer budget with room
# for the envelope, so the panel always gets whole JSON; a file's diff lines in one page
# when its diff alone would exceed it; call ids listed.
REVIEW_PAGE_BYTES = 48_000
REVIEW_FILE_LINES = 400
REVIEW_IDS = 500
# ours (issue 43): how long the console keeps the list of subpath sessions' state
# directories it found by one walk (it polls for new entries every few seconds).
CONSOLE_VIEWS_SECONDS = 10.0
# ours (issue 43): a client's name or version as shown (clientInfo is free text).
CLIENT_NAME_CHARS = 80
# ours (issue 43): entries the walk for `.git` / `.workspace-mcp` looks at before and after
# a command (Django 5.2's tree has ~7,600; a monorepo with node_modules can have 10^6):
# past it the answer says what was not checked.
REPO_GUARD_ENTRIES_MAX = 500_000
# ours (issue 43): how often a running job's tree is looked at for a `.git` or
# `.workspace-mcp` it created (one bounded walk each time).
JOB_GUARD_SECONDS = 5.0

# --- many agents (issue 34) ----------------------------------------------------------------
ACTIVE_SESSION_SECONDS = (
    600.0  # ours: workspace_list names sessions that changed files this recently
)
ACTIVE_SESSIONS_SHOWN = 10  # ours: at most this many sessions per workspace there
# The stale-read guard (core.state.stale_reads): what each session last read or wrote of each file.
SEEN_PATHS_PER_SESSION = 512  # ours: a long session reads a few hundred files; older forgotten
SEEN_SESSIONS = 256  # ours: session records kept per workspace (least recently used go first)
SEEN_WRITERS = 4096  # ours: files whose last writer is remembered, to name it in a refusal
# ours (issue 47): a record kept as a log (core.state.foldlog) is rewritten folded past this
# many bytes (or twice its bound in lines): 4,096 writers of ~200 bytes, appended twice over.
FOLDLOG_COMPACT_BYTES = 4 * MIB
STALE_DIFF_LINES = 40  # ours: lines of "what changed" a refusal shows
# ours (issue 44): a file a session reads is kept for that diff up to this size (most
# source files; a refusal of a bigger one names the file without a diff).
SEEN_KEPT_BYTES = 256 * KIB
STALE_DIFF_CHARS = 4_000  # ours: and characters (one minified line can be a megabyte)

# --- start-up (issue 36) -----------------------------------------------------------------
# ours: answers kept for the next start (core.answercache); each key is one settings
# and client combination, so a handful is normal; the oldest go past this.
STARTUP_CACHE_ENTRIES = 64
STARTUP_CACHE_ENTRY_BYTES = 1 * MIB  # ours: tools/list is ~20 KiB; a larger file is refused
# ours: what the early reader keeps of stdin before the server is ready; a client that
# sends more before its first answer waits for the server as before.
STARTUP_EARLY_READ_BYTES = 1 * MIB
STARTUP_EARLY_LINE_BYTES = 64 * KIB  # ours: a longer frame is never an initialize or tools/list
STARTUP_KEYED_FRAMES = 16  # ours: requests looked at for one to keep; tools/list comes by the 3rd

# --- symbol index (issue 36) --------------------------------------------------------------
# ours: files whose defined names are kept per workspace (in memory and in the state
# directory), each under its stat signature and content digest; Django has ~2,900 source
# files, the Linux kernel ~60,000. Past it the least recently used go.
SYMBOL_INDEX_FILES = 100_000
# ours (issue 47): definition-shaped lines kept per file by find_symbol's prefilter; a file
# with more is parsed whatever they say (the prefilter only ever narrows by what it read)
SHAPE_LINES_PER_FILE = 64
# ours (issue 47): (content, word) pairs the reference index keeps, in memory and in
# references.json (a pair is a few line numbers: ~10 MB at the bound), and the files it
# knows the content digest of (the symbol index's bound, for the same trees)
REFERENCE_INDEX_ENTRIES = 200_000
REFERENCE_INDEX_FILES = SYMBOL_INDEX_FILES
