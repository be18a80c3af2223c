"""`--confirm`: the calls a person decides (issue 32), failing closed.

A call the operator chose (`--confirm` tools or classes, `--confirm-path` globs) runs
only with an approval of exactly its arguments (core.state.approvals: digest-bound, single
use, short-lived). Without one, the person is shown what will happen (the diff of an
edit, a patch or a write; argv and directory of a command; the files a delete removes)
and asked where `--confirm-via` allows: through the client (`input_required` on
2026-07-28, elicitation on 2025-11-25, only if it declares elicitation) and in the
operator console. No answer within CONFIRM_WAIT_SECONDS: the call answers "pending"
with the approval id (clients give up at about 60 s), and the agent repeats it once
approved. No answer within `--confirm-timeout`: refused. No one to ask: refused.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import logging
import os
import stat
import warnings
from typing import Any

import anyio
import mcp_types
from fastmcp.exceptions import ToolError
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field

from ..core import announce, edits, handoff, limits, proofkey, reviewer, risk
from ..core.callscope import (
    REVERTS,
    RUNS_PROGRAMS,
    Touched,
    add_linked,
    aliases,
    canonical,
    entries_below,
    link_folders,
    links_held,
    names_held,
    primary_rel,
    taken,
    touched,
)
from ..core.checkpoints import undoing
from ..core.containment import Located, ProtectedPathError, checking_writes, locate
from ..core.echo import echo, listing
from ..core.errors import ConfigError, WorkspaceError
from ..core.exec import staging
from ..core.nearmiss import closest
from ..core.shipped import ShippedLinks
from ..core.state.approvals import APPROVED, DENIED, PENDING, ApprovalRefused, Approvals, digest
from ..core.state.grants import Grants
from ..core.state.journal import activity
from ..core.textio import read_bytes
from ..requestctx import current_subject, history_subject, session_and_client
from ..services import Services

CLASSES = ("exec", "destructive", "write", "risky")
# Tools with dryRun whose preview is what the person is shown (the diff an edit would
# write, the paths an undo would put back).
PREVIEWED = ("edit_file", "patch", "apply_patch", "undo", "review_undo")
ASK = "approval"  # the key of our input request
# Why a staged command is held before its change set is known (it then names the rule).
STAGED_RULES = "--confirm risky/--confirm-path: what the command changes"
log = logging.getLogger("agent_workspace_mcp")


class ApprovalGate(Middleware):
    def __init__(self, services: Services) -> None:
        self.services = services
        settings = services.settings
        self.approvals = Approvals(settings.confirm_timeout)
        self.grants = Grants()
        self.asked = set(settings.confirm)
        self.via = set(settings.confirm_via)
        self.paths = None
        from pathspec import GitIgnoreSpec

        if settings.confirm_path:
            self.paths = GitIgnoreSpec.from_lines(settings.confirm_path)
        # --confirm risky (issue 48): the policy's rules, each path rule as one spec.
        self.risky = risk.chosen(settings.risky_rules) if "risky" in self.asked else ()
        self.risky_paths = [
            (rule, GitIgnoreSpec.from_lines(rule.paths)) for rule in self.risky if rule.paths
        ]
        # Where a link the root holds could give a file a protected name (core.callscope).
        globs = [*settings.confirm_path, *(g for rule in self.risky for g in rule.paths)]
        self.link_folders = link_folders(globs)
        self.path_rules = self.paths is not None or bool(self.risky_paths)  # any path decides
        # Links deep in the tree under a protected name, from the repository's index.
        self.shipped = ShippedLinks(services.git_reader)
        self.writes: dict[str, bool] = {}
        self.ours: dict[str, str] = {}
        # --stage-commands (issue 46): a command runs against a copy-on-write view first,
        # and the person approves what it changed, not only its argv.
        self.stage = services.stage is not None
        # A forged record must not be able to decide; the key must be out of the agent's
        # reach (core.proofkey), else the server does not start with approvals on.
        if not settings.unconfined:
            proofkey.check_outside(services.registry.roots())
        self.announced: set[str] = set()  # ids announced to --confirm-notify (once each)
        # --confirm-hook (issue 48): a reviewer program out of the agent's reach.
        self.hook: list[str] | None = None
        if settings.confirm_hook:
            from ..core.exec.commands import safe_path_dirs

            roots = services.registry.roots()
            dirs = safe_path_dirs(os.environ.get("PATH", ""), roots)
            self.hook = reviewer.resolve(settings.confirm_hook, roots, dirs)
        try:
            self.approvals.key  # noqa: B018  (made or checked now: a start-up error)
        except WorkspaceError as exc:
            raise ConfigError(f"--confirm: {exc}") from None

    def wait(self) -> float:
        """How long a call waits for a person before answering "pending"
        (`--confirm-wait`, else CONFIRM_WAIT_SECONDS, read at call time)."""
        chosen = self.services.settings.confirm_wait
        return chosen if chosen is not None else limits.CONFIRM_WAIT_SECONDS

    def configure(self, registered: dict[str, bool], renames: dict[str, str]) -> None:
        """The registered tools (our name -> writes) and the profile's renames; a
        `--confirm` name that is neither a class nor a tool is a ConfigError."""
        self.writes = dict(registered)
        self.ours = {served: ours for ours, served in renames.items()}
        known = [*CLASSES, *registered, *renames.values(), *RUNS_PROGRAMS]
        for name in self.asked:
            if name not in known:
                close = closest(name, known)
                hint = f"; did you mean {close[0]}?" if close else ""
                raise ConfigError(
                    f"--confirm: '{echo(name)}' is no tool and no class ({listing(CLASSES)}){hint}"
                )

    # --- which calls ---------------------------------------------------------------------

    def named(self, tool: str, args: dict[str, Any]) -> str | None:
        """Why this call needs a person by its tool and class alone ('--confirm exec'),
        or None. `tool` is our canonical name (a panel tool decides as its twin)."""
        if tool in self.asked:
            return f"--confirm {tool}"
        for rule in self.risky:
            if rule.network and tool in RUNS_PROGRAMS and self.services.settings.sandbox_network:
                return f"--confirm risky ({rule.name}: {rule.why})"
            if rule.forced_revert and tool in REVERTS and args.get("force"):
                return f"--confirm risky ({rule.name}: {rule.why})"
        if "exec" in self.asked and tool in RUNS_PROGRAMS:
            return "--confirm exec"
        if "destructive" in self.asked and (
            tool == "delete_path"
            or (tool in ("move_path", "rename_path") and args.get("overwrite"))
            or (tool in REVERTS and args.get("force"))
        ):
            return "--confirm destructive"
        if "write" in self.asked and self._writes(tool):
            return "--confirm write"
        return None

    def _writes(self, tool: str) -> bool:
        return self.writes.get(tool, tool in RUNS_PROGRAMS or tool in REVERTS)

    def needs_scope(self, tool: str) -> bool:
        """Whether the decision needs the paths the call resolves to."""
        protected = self.paths is not None or bool(self.risky)
        return (protected and self._writes(tool) and tool not in RUNS_PROGRAMS) or (
            "destructive" in self.asked and tool == "apply_patch"
        )

    def by_paths(self, tool: str, scope: Touched) -> str | None:
        """Why the paths this call resolves to need a person, or None."""
        if "destructive" in self.asked and scope.deletes:
            return "--confirm destructive"
        if self.risky and self._writes(tool) and (why := self._risky(tool, scope)):
            return why
        if self.paths is None or not self._writes(tool):
            return None
        if not scope.complete:
            return (
                f"--confirm-path (more than {limits.TOUCHED_ENTRIES_MAX} entries below "
                "what it changes were not all looked at)"
            )
        for path in scope.names:
            if self.protects(path):
                return f"--confirm-path ({path})"
        for path in scope.landings:
            if self.protects(_inside(path)):
                return f"--confirm-path ({path}: what lands there is protected)"
        return None

    def _risky(self, tool: str, scope: Touched) -> str | None:
        """Which rule of --confirm risky asks about these paths, said for the request."""
        removed = max(len(scope.paths), scope.entries)
        deletes = scope.deletes and tool not in ("move_path", "rename_path")
        for rule in self.risky:
            over = rule.deletes_over
            if deletes and over is not None and (removed > over or not scope.complete):
                return f"--confirm risky ({rule.name}: {removed} entries; {rule.why})"
        for path in scope.names:
            hit = self._risky_rule(path)
            if hit is not None:
                return f"--confirm risky ({hit.name}: {path} {hit.why})"
        for path in scope.landings:  # a folder or link moved to `.github/workflows`
            hit = self._risky_rule(_inside(path))
            if hit is not None:
                return f"--confirm risky ({hit.name}: what lands at {path} {hit.why})"
        if not scope.complete and self.risky_paths:
            return (
                f"--confirm risky (more than {limits.TOUCHED_ENTRIES_MAX} entries below "
                "what it changes were not all looked at)"
            )
        return None

    def _risky_rule(self, rel: str) -> risk.Rule | None:
        for rule, spec in self.risky_paths:
            if spec.match_file(rel.lstrip("/")):
                return rule
        return None

    def protects(self, rel: str) -> bool:
        if self.risky_paths and self._risky_rule(rel) is not None:
            return True
        return self.paths is not None and self.paths.match_file(rel.lstrip("/"))

    def guard(self, allowed: set[str]):
        """The write check for one call: a write that resolves to a protected path not in
        `allowed` (what the person approved, or nothing) is refused at its open, under
        any name a link the root holds gives it."""
        # per workspace, looked at once a call: the links, and whether all were looked at
        links: dict[str, tuple[list[tuple[str, str]], bool]] = {}

        def check(loc: Located) -> None:
            ws = loc.workspace
            rel = primary_rel(ws, loc.real_parts)
            below, seen = taken(ws, loc, rel)
            covered: list[str | None] = [rel, *below, *([] if seen or allowed else [None])]
            if ws.name not in links:
                links[ws.name] = self._links(ws)
            held, whole = links[ws.name]
            named = [a for p in covered if p is not None for a in aliases(p, held)]
            # Links not all looked at (a protected folder past TOUCHED_ENTRIES_MAX): the
            # gate asked about the call, and only an approved one goes on.
            for path in [*covered, *named, *([] if whole or allowed else [None])]:
                if path is None or (path not in allowed and self.protects(path)):
                    raise ProtectedPathError(
                        f"{loc.display} resolves to {path or rel}, which --confirm-path "
                        "protects and no approval of this call covers; call again to be asked"
                    )

        return check

    async def scope(
        self, context: MiddlewareContext, call_next, tool: str, ws, args: dict[str, Any]
    ) -> Touched:
        """The paths the call touches: resolved from its arguments, or for an undo, the
        ones its own dry run reports (they come from the records, not the arguments)."""
        if tool not in REVERTS:
            found = await handoff.run_sync(lambda: self._linked(ws, touched(ws, tool, args)))
        elif tool == "restore_file":
            found = await handoff.run_sync(lambda: self._linked(ws, self._restore_paths(ws, args)))
        else:
            preview = context.message.model_copy(update={"arguments": {**args, "dryRun": True}})
            with activity.isolated() as seen:
                await call_next(context.copy(message=preview))
            found = Touched(complete=len(seen.paths) < limits.UNDO_LINES_SHOWN)
            for path in seen.paths:
                found.add(primary_rel(ws, tuple(p for p in path.split("/") if p)))
            await handoff.run_sync(lambda: self._linked(ws, found))
        return found

    def _linked(self, ws, found: Touched) -> Touched:
        """`found` with the names its paths have through links, when a path rule could
        match one of them (the approval of the call covers those names too)."""
        if self.path_rules:
            add_linked(found, *self._links(ws))
        return found

    def _links(self, ws) -> tuple[list[tuple[str, str]], bool]:
        """`links_held`, with the tracked links deep in the tree whose name a rule could
        match (the link's own, or one inside it)."""
        shipped = [
            link
            for link in self.shipped.of(ws)
            if self.protects(link) or self.protects(_inside(link))
        ]
        return links_held(ws, self.link_folders, shipped)

    def _restore_paths(self, ws, args: dict[str, Any]) -> Touched:
        found = Touched()
        path, before = args.get("path"), args.get("before")
        if not isinstance(path, str) or not isinstance(before, str):
            return found
        try:
            result = undoing.restore(
                ws,
                self.services.checkpoints(ws),
                self.services.locks,
                path,
                before,
                subject=history_subject(self.services.settings.share_history),
                dry_run=True,
            )
        except WorkspaceError:
            return found  # the tool refuses the same arguments itself
        for _verb, rel, _note in result.lines:
            found.add(primary_rel(ws, tuple(p for p in rel.split("/") if p)))
        return found

    # --- what the person sees --------------------------------------------------------------

    async def summary(
        self,
        context: MiddlewareContext,
        call_next,
        tool: str,
        ws,
        args: dict[str, Any],
        scope: Touched | None,
    ) -> str:
        shown = {k: v for k, v in args.items() if k != "workspace"}
        head = f"{tool} in workspace {ws.name}"
        if scope is not None and scope.paths:
            head += "\ntouches: " + _listed(scope.paths)
            linked = [p for p in scope.linked if p not in scope.paths]
            if linked:  # why a call on `shared/ci.yml` is asked about as a workflow
                head += "\nthrough a link, also: " + _listed(linked)
        if tool in PREVIEWED:  # the tool's own dry run: exactly the diff it would write
            preview = context.message.model_copy(update={"arguments": {**args, "dryRun": True}})
            with activity.isolated():
                result = await call_next(context.copy(message=preview))
            body = "\n".join(getattr(c, "text", "") for c in getattr(result, "content", []))
        elif tool in ("write_file", "create_file") and isinstance(args.get("content"), str):
            body = await handoff.run_sync(lambda: _write_diff(ws, args))
        elif tool == "delete_path" and isinstance(args.get("path"), str):
            body = await handoff.run_sync(lambda: _delete_listing(ws, args["path"]))
        elif tool in RUNS_PROGRAMS:
            cwd = args.get("cwd") or "."
            command = args.get("command", args.get("script", args.get("name")))
            rest = {k: v for k, v in shown.items() if k not in ("command", "cwd")}
            body = f"command: {json.dumps(command, ensure_ascii=False)}\nin directory: {cwd}"
            if rest:
                body += f"\nand: {json.dumps(rest, ensure_ascii=False, sort_keys=True)}"
        else:
            body = json.dumps(shown, ensure_ascii=False, sort_keys=True, indent=1, default=str)
        text = f"{head}\n{body}"
        cap = limits.CONFIRM_SUMMARY_MAX_CHARS
        return text if len(text) <= cap else text[:cap] + f"\n… ({len(text) - cap} more chars)"

    # --- the gate --------------------------------------------------------------------------

    async def on_call_tool(self, context: MiddlewareContext, call_next):
        # One wait per call, whoever is asked: the answer must reach the client in time.
        wait = self.wait()
        deadline = anyio.current_time() + wait
        tool = context.message.name
        args = dict(context.message.arguments or {})
        ours = canonical(self.ours.get(tool, tool))
        why = self.named(ours, args)
        scope: Touched | None = None
        # --stage-commands under the path rules: a command no rule names by its argv runs
        # against a view, and what it changed decides (`by_rules` below).
        by_rules = why is None and self.stage and ours in RUNS_PROGRAMS
        if why is None and not by_rules and not self.needs_scope(ours):
            return await call_next(context)
        try:
            ws = self.services.workspaces.get(args.get("workspace"))
        except WorkspaceError:
            return await call_next(context)  # the tool names the unknown workspace itself
        if self.needs_scope(ours):
            scope = await self.scope(context, call_next, ours, ws, args)
            why = why or self.by_paths(ours, scope)
        elif why is not None and self._writes(ours) and ours not in RUNS_PROGRAMS:
            # The request records what the call resolves to: a grant is bound to it.
            scope = await self.scope(context, call_next, ours, ws, args)
        allowed = set(scope.names) if scope is not None and why is not None else set()
        guarded = self.path_rules and self._writes(ours)

        async def proceed(edited: dict[str, Any] | None = None) -> Any:
            """Run the call (with the person's version of its arguments, if they edited)."""
            if ours in RUNS_PROGRAMS and why is not None:
                activity.clear_exec()
            ctx = context
            if edited is not None:
                message = context.message.model_copy(update={"arguments": edited})
                ctx = context.copy(message=message)
            if not guarded:
                return await call_next(ctx)
            with checking_writes(self.guard(allowed)):
                return await call_next(ctx)

        if why is None and not by_rules:
            return await proceed()
        why = why or STAGED_RULES  # until the change set names the rule it meets
        subject = current_subject()
        # The resolved paths are part of what is approved: the same arguments reaching
        # other files (a link swapped since) are another call.
        call_digest = digest(tool, args, scope.names if scope is not None else None)

        async def off(fn, *a, **kw):
            try:
                return await handoff.run_sync(lambda: fn(*a, **kw))
            except WorkspaceError as exc:  # the state cannot be read or written: fail closed
                raise ToolError(
                    f"not run: {tool} needs a person's approval ({why}): {exc}"
                ) from None

        staged = self.stage and ours in RUNS_PROGRAMS

        async def run(record: dict[str, Any]) -> Any:
            by, via = record.get("decided_by"), record.get("via")
            activity.approved(
                f"{record['id']} approved by {by} via {via} (digest {call_digest[:12]})"
            )
            if staged:  # what lands is the change set shown, the command does not run again
                return await self._land(ws, tool, record, set(record.get("paths") or ()))
            if record.get("edit"):
                return await self._edited(ws, record, ours, args, scope, proceed)
            return await proceed()

        used = await off(self.approvals.take, ws, subject=subject, call_digest=call_digest)
        if used is not None:
            return await run(used)
        ctx = context.fastmcp_context
        session, client = session_and_client(ctx)

        async def granted(paths: list[str] | None) -> bool:
            """Whether a live grant covers this call reaching `paths` (journaled)."""
            grant = await off(
                self.grants.covering,
                ws,
                subject=subject,
                session=session,
                tool=tool,
                why=why,
                paths=paths,
                call_digest=call_digest,
            )
            if grant is not None:
                activity.approved(
                    f"granted by {grant['granted_by']} ({grant['id']}, {grant['kind']}, "
                    f"from {grant['from']})"
                )
            return grant is not None

        # A staged command's change set decides its grant (below).
        if not staged and await granted(scope.names if scope is not None else None):
            return await proceed()
        staged_ref: tuple[str, str] | None = None  # (the change set's digest, what is shown)
        asked = None
        if staged:
            asked = await off(self.approvals.asked, ws, subject=subject, call_digest=call_digest)
            if asked is not None and by_rules:
                why = str(asked.get("rule") or why)
            if asked is None:  # nothing waiting for this call: run it against a view
                ran = await self._stage(context, call_next, ws, tool, args)
                if not isinstance(ran, tuple):
                    return ran  # it changed nothing, or never ran: its own answer
                ref, shown, proposal = ran
                staged_ref = ref, shown
                # The request names what the change set changes, links included: what
                # lands may reach no protected name beyond those (the guard at landing).
                scope = await handoff.run_sync(lambda: self._changed(ws, proposal))
                if by_rules:
                    if not proposal.landable:  # no approval could land it: say so, ask no one
                        raise ToolError(
                            f"not landed: {tool} ran staged; {_unlandable(proposal)}\n"
                            + _tail(proposal.answer)
                        )
                    rule = self._staged_rule(ours, scope)
                    if rule is None:  # what it changed meets no rule: it lands now
                        return await self._land(ws, tool, None, set(), ref)
                    why = rule
                    # A grant covers a change set within what the person let through (the
                    # same rule, paths among those they saw or inside their folder).
                    if await granted(scope.names):
                        return await self._land(ws, tool, None, set(scope.names), ref)

        async def ask(announce_it: bool = True) -> dict[str, Any]:
            """The pending request for this call, showing what will run (refused if a
            person denied this very call lately), announced to the person's webhook."""
            if asked is not None:
                record = asked
            else:
                shown = (
                    staged_ref[1]
                    if staged_ref is not None
                    else await self.summary(context, call_next, ours, ws, args, scope)
                )
                record = await off(
                    self.approvals.request,
                    ws,
                    tool=tool,
                    call_digest=call_digest,
                    summary=shown,
                    subject=subject,
                    session=session,
                    client=client,
                    staged=None if staged_ref is None else staged_ref[0],
                    paths=scope.names if scope is not None else None,
                    rule=why,
                    arguments=_editable(ours, args),
                )
            if record["status"] == DENIED:
                raise _refused(record, why)
            if announce_it:
                await self._announce(ws, record, why)
            return record

        async def run_if_approved(record: dict[str, Any]) -> Any:
            if record["status"] == APPROVED:
                used = await off(self.approvals.take, ws, subject=subject, call_digest=call_digest)
                if used is not None:
                    return await run(used)
            return None

        if self.hook is not None and ASK not in (getattr(ctx, "input_responses", None) or {}):
            record = await ask(announce_it=False)
            if record["status"] == PENDING:
                record = await self._review(ws, record, tool, args, why, call_digest)
            if record["status"] == PENDING:  # the reviewer passed it to a person
                await self._announce(ws, record, why)
            if (done := await run_if_approved(record)) is not None:
                return done
            if record["status"] == DENIED:
                raise _refused(record, why)
        if "client" in self.via and _can_elicit(ctx):
            asked = await self._ask_client(ctx, ws, tool, call_digest, subject, client)
            if isinstance(asked, mcp_types.InputRequiredResult):
                return asked
            if asked is None:  # the client's first round: ask it
                record = await ask()
                if _modern(ctx):
                    activity.approved(f"{record['id']} asked of the client (input_required)")
                    return _input_required(record, why)
                asked = await self._elicit(ctx, ws, record, why, call_digest, client, deadline)
            if asked is not None and (done := await run_if_approved(asked)) is not None:
                return done
            if asked is not None and asked["status"] == DENIED:
                raise _refused(asked, why)
        if "console" not in self.via:
            if "client" in self.via and _can_elicit(ctx):  # asked, and no answer came
                raise ToolError(
                    f"not run: {tool} needs a person's approval ({why}) and the client's "
                    f"prompt got no answer within {wait:g} s; call "
                    "again to be asked again (the operator can add --confirm-via console)"
                )
            raise ToolError(
                f"not run: {tool} needs a person's approval ({why}) and no one can be asked: "
                "this client declares no elicitation and --confirm-via leaves out the console "
                "(the operator can add --confirm-via console)"
            )
        record = await self._wait(ws, await ask(), deadline)
        if (done := await run_if_approved(record)) is not None:
            return done
        if record["status"] != PENDING:
            raise _refused(record, why)
        left = max(0, int(float(record["expires"]) - self.approvals.clock()))
        activity.approved(f"{record['id']} pending in the console")
        activity.record(result="pending approval")
        if record.get("staged"):
            return ToolResult(
                content=(
                    f"Not landed yet: {tool} ran against a staged copy of the workspace and "
                    f"its changes wait for a person's approval ({why}; {record['id']} in the "
                    f"operator console; no answer within {wait:g} s). Repeat this exact call "
                    f"once approved (approval_status('{record['id']}') says when): the staged "
                    f"changes land then and the command does not run again; with no answer in "
                    f"{left} s they are discarded."
                )
            )
        return ToolResult(
            content=(
                f"Not run yet: {tool} needs a person's approval ({why}). Asked as "
                f"{record['id']} in the operator console; no answer within "
                f"{wait:g} s. "
                f"Repeat this exact call once it is approved (approval_status('{record['id']}') "
                f"says when); with no answer in {left} s it is refused."
            )
        )

    async def _edited(
        self, ws, record: dict[str, Any], ours: str, args: dict[str, Any], scope, proceed
    ) -> Any:
        """Run the call as the person edited it, and tell the agent what they changed."""
        try:
            edit = json.loads(str(record["edit"]))
            changed = edits.merged(ours, args, edit)
        except (ValueError, WorkspaceError) as exc:
            raise ToolError(
                f"not run: the person's version of this call is unusable ({exc})"
            ) from None
        if ours == "apply_patch":  # the edited diff may reach only the files shown
            reach = await handoff.run_sync(lambda: touched(ws, ours, changed))
            shown = set(scope.paths if scope is not None else ())
            if not reach.complete or not set(reach.paths) <= shown:
                raise ToolError(
                    "not run: the person's version of this patch reaches other files than the "
                    f"approved ones ({record['id']}); call again to be asked"
                )
        result = await proceed(changed)
        what = _what_changed(args, changed)
        note = str(record.get("note") or "").strip()
        told = (
            f"\n[{record.get('decided_by')} changed your proposal before approving it "
            f"({record['id']}): {what}"
            + (f"; their note: {echo(note)}" if note else "")
            + ". The file now holds their version: read it before you edit it again.]"
        )
        return ToolResult(content=_text(result) + told)

    async def _announce(self, ws, record: dict[str, Any], why: str) -> None:
        """Tell the person a request waits (--confirm-notify), once per request; a failure
        is journaled and logged and decides nothing."""
        url = self.services.settings.confirm_notify
        if url is None or record["status"] != PENDING or record["id"] in self.announced:
            return
        self.announced.add(record["id"])
        settings = self.services.settings
        console = f"http://{settings.host}:{settings.port}/console" if settings.http else None
        body = announce.message(record, why, ws.name, console)
        failed = await handoff.run_sync(lambda: announce.post(url, body))
        if failed:
            log.warning("approval %s was not announced: %s", record["id"], failed)
            activity.approved(f"{record['id']} not announced: {failed}")
        else:
            activity.approved(f"{record['id']} announced to the webhook")

    async def _review(
        self, ws, record: dict[str, Any], tool: str, args: dict[str, Any], why: str, digest_: str
    ) -> dict[str, Any]:
        """The reviewer program's answer settled on the request: approved or denied by it,
        or left pending for a person (`ask`). Any failure of the program is a denial."""
        assert self.hook is not None
        request = {
            "id": record["id"],
            "tool": tool,
            "arguments": {k: v for k, v in args.items()},
            "shown": record.get("summary", ""),
            "rule": why,
            "workspace": ws.name,
            "subject": record.get("subject"),
        }
        hook = self.hook  # narrowed above; a lambda would not see that
        verdict = await handoff.run_sync(lambda: reviewer.review(hook, request))
        name = os.path.basename(hook[0])
        if verdict.decision == "ask":
            activity.approved(f"{record['id']} passed to a person by the reviewer {name}")
            return record
        by = f"the reviewer program {name}" + (f" ({verdict.note})" if verdict.note else "")
        try:
            settled = await handoff.run_sync(
                lambda: self.approvals.decide(
                    ws,
                    record["id"],
                    approve=verdict.decision == "approve",
                    by=by,
                    via="hook",
                    call_digest=digest_,
                )
            )
        except (ApprovalRefused, WorkspaceError):  # decided meanwhile (a person was quicker)
            settled = await handoff.run_sync(
                lambda: self.approvals.get(ws, record["id"], operator=True)
            )
        activity.approved(f"{record['id']} {settled['status']} by {by} via hook")
        return settled

    # --- staged commands (--stage-commands) ------------------------------------------------

    async def _stage(self, context: MiddlewareContext, call_next, ws, tool: str, args) -> Any:
        """Run the command against a copy-on-write view; (digest, what the person is shown)
        of its change set, or the call's own answer when there is nothing to approve."""
        with activity.staging() as box:
            activity.clear_exec()
            result = await call_next(context)
        proposal = box.proposal
        if proposal is None or getattr(result, "is_error", False):
            return result  # it never ran (refused, bad arguments): nothing was staged
        if not proposal.changes and proposal.landable:
            return ToolResult(
                content=f"{_text(result)}\n[ran staged: it changed nothing in the workspace]"
            )
        ref, shown = await handoff.run_sync(lambda: self._staged_request(ws, tool, args, box))
        return ref, shown, proposal

    def _changed(self, ws, proposal: staging.Proposal) -> Touched:
        """A staged change set as the path rules see a file tool's call: every path it
        changes, what it deletes, a link it places (what the link reaches lands there), and
        the names the root's links give those paths."""
        found = Touched(complete=proposal.complete)  # `deletes` stays False: see _staged_rule
        for rel, (before, after) in proposal.changes.items():
            # relative to the session's root; the rules read the primary root's names
            name = primary_rel(ws, tuple(p for p in rel.split("/") if p))
            found.add(name)
            if after.get("t") == "-":
                found.entries += 1
            elif after.get("t") == "l":
                found.landings.append(name)
            if before.get("t") == "l":  # a link taken away: so are the names it gave
                held, whole = names_held(ws, name)
                found.linked.extend(n for n in held if n not in found.linked)
                found.complete = found.complete and whole
        return self._linked(ws, found)

    def _staged_rule(self, tool: str, found: Touched) -> str | None:
        """Which rule asks about a staged change set: removing more than the policy's
        bound (the entries it removes, not the paths it changes), else the path rules."""
        for rule in self.risky:
            if rule.deletes_over is not None and found.entries > rule.deletes_over:
                return f"--confirm risky ({rule.name}: {found.entries} entries; {rule.why})"
        return self.by_paths(tool, found)

    def _staged_request(self, ws, tool: str, args: dict[str, Any], box) -> tuple[str, str]:
        store = self.services.checkpoints(ws)
        ref = staging.store_proposal(store, box.proposal)
        command = args.get("command", args.get("script", args.get("name")))
        output = _tail(box.answer)
        shown = (
            f"{tool} in workspace {ws.name}\n"
            f"command: {json.dumps(command, ensure_ascii=False)}\n"
            f"in directory: {args.get('cwd') or '.'}\n"
            "it ran in the sandbox against a copy-on-write view; these changes land only if "
            f"approved:\n{staging.describe(box.proposal, store)}\n"
            f"its output:\n{output}"
        )
        cap = limits.CONFIRM_SUMMARY_MAX_CHARS
        return ref, shown if len(shown) <= cap else shown[:cap] + "\n… (cut)"

    async def _land(
        self,
        ws,
        tool: str,
        record: dict[str, Any] | None,
        allowed: set[str],
        ref: str | None = None,
    ) -> Any:
        """A staged command's change set, exactly as shown, into the tree: approved by
        `record`, or (None) meeting no rule; a write that reaches a protected name not in
        `allowed` (a link made since the change set was looked at) is refused at its open."""
        ref = record.get("staged") if record is not None else ref
        # Landed with no question: answered as any recorded command is (nothing to add).
        by = (
            f"\n[staged changes landed, approved by {record.get('decided_by')} ({record['id']})]"
            if record is not None
            else ""
        )

        def work() -> str:
            store = self.services.checkpoints(ws)
            proposal = staging.load_proposal(store, str(ref))
            guard = self.guard(allowed) if self.path_rules else None
            with checking_writes(guard) if guard is not None else contextlib.nullcontext():
                changes = staging.land(ws, store, self.services.locks, proposal)
            recorder = activity.current_recorder()
            if recorder is not None:
                recorder.effect(changes)
            activity.record(paths=[rel for rel, (_, a) in changes.items() if a.get("t") != "d"])
            line = staging.landed(changes, store)
            return f"{proposal.answer}{by}" + (f"\n{line}" if line else "")

        if not ref:
            raise ToolError("not landed: the approval names no staged changes")
        try:
            text = await handoff.run_sync(work)
        except WorkspaceError as exc:
            raise ToolError(f"not landed: {exc}") from None
        activity.record(result="staged changes landed")
        return ToolResult(content=text)

    async def _wait(self, ws, record: dict[str, Any], deadline: float) -> dict[str, Any]:
        """The record once decided, or as it is at the deadline."""
        approval_id = record["id"]
        while record["status"] == PENDING and anyio.current_time() < deadline:
            await anyio.sleep(limits.CONFIRM_POLL_SECONDS)
            try:
                record = await handoff.run_sync(
                    lambda: self.approvals.get(ws, approval_id, operator=True)
                )
            except WorkspaceError:
                break  # pruned or the state is gone: refused below
        return record

    async def _ask_client(self, ctx, ws, tool: str, call_digest: str, subject, client):
        """The client's answer on a 2026-07-28 retry (input_responses + our request_state),
        settled; None on a first round (nothing answered yet)."""
        if not _modern(ctx):
            return None
        answers = ctx.input_responses or {}
        approval_id = ctx.request_state
        if ASK not in answers or not approval_id:
            return None
        try:
            record = await handoff.run_sync(
                lambda: self.approvals.get(ws, approval_id, subject=current_subject())
            )
        except WorkspaceError:
            return None
        if record.get("digest") != call_digest:
            raise ToolError(
                f"not run: the arguments differ from the ones shown for approval {approval_id}; "
                "call again to be asked about these"
            )
        answer = answers[ASK]
        content = getattr(answer, "content", None) or {}
        approve = getattr(answer, "action", "") == "accept" and content.get("approve") is True
        return await self._settle(
            ws,
            record,
            approve,
            client,
            "input_required",
            getattr(answer, "action", "?"),
            call_digest,
        )

    async def _elicit(self, ctx, ws, record, why: str, call_digest: str, client, deadline):
        """Ask a 2025-11-25 client (elicitation); None when it did not answer in time."""
        try:
            with (
                anyio.fail_after(max(0.0, deadline - anyio.current_time())),
                warnings.catch_warnings(),
            ):
                warnings.simplefilter("ignore")
                answer = await ctx.elicit(_message(record, why), Decision)
        except TimeoutError:
            return None
        action = getattr(answer, "action", "cancel")
        approve = (
            action == "accept" and getattr(getattr(answer, "data", None), "approve", 0) is True
        )
        return await self._settle(ws, record, approve, client, "elicitation", action, call_digest)

    async def _settle(
        self, ws, record, approve: bool, client, how: str, action: str, call_digest: str
    ):
        who = f"the client ({client or 'unnamed'}; a client may answer on its own)"
        try:
            settled = await handoff.run_sync(
                lambda: self.approvals.decide(
                    ws,
                    record["id"],
                    approve=approve,
                    by=who,
                    via=f"client:{how}:{action}",
                    call_digest=call_digest,
                )
            )
        except ApprovalRefused:
            settled = await handoff.run_sync(
                lambda: self.approvals.get(ws, record["id"], operator=True)
            )
        activity.approved(
            f"{record['id']} {settled['status']} by {who} via client:{how}:{action} "
            f"(digest {call_digest[:12]})"
        )
        return settled


class Decision(BaseModel):
    """The one field both ways of asking a client use (the same schema as _input_required)."""

    approve: bool = Field(default=False, title="Run it")


def _modern(ctx) -> bool:
    rc = getattr(ctx, "request_context", None)
    return rc is not None and rc.protocol_version in MODERN_PROTOCOL_VERSIONS


def _can_elicit(ctx) -> bool:
    try:
        caps = ctx.session.client_capabilities
    except (AttributeError, RuntimeError):
        return False
    return caps is not None and caps.elicitation is not None


def _message(record: dict[str, Any], why: str) -> str:
    return (
        f"Approve this call? ({why}; approval {record['id']}, asked by "
        f"{record.get('subject') or 'the agent'})\n\n{record['summary']}"
    )


def _input_required(record: dict[str, Any], why: str) -> mcp_types.InputRequiredResult:
    schema = {
        "type": "object",
        "required": ["approve"],
        "properties": {"approve": {"type": "boolean", "title": "Run it", "default": False}},
    }
    # Decision's schema, as a 2025-11-25 client is asked through ctx.elicit
    request = mcp_types.ElicitRequest(
        params=mcp_types.ElicitRequestFormParams(
            message=_message(record, why), requested_schema=schema
        )
    )
    return mcp_types.InputRequiredResult(input_requests={ASK: request}, request_state=record["id"])


def _editable(tool: str, args: dict[str, Any]) -> str | None:
    """The arguments a person may edit in the console, kept with the request when small."""
    if tool not in edits.EDITABLE:
        return None
    shown = {k: v for k, v in args.items() if k != "workspace"}
    encoded = json.dumps({"tool": tool, "arguments": shown}, ensure_ascii=False, default=str)
    return encoded if len(encoded) <= limits.CONFIRM_EDIT_MAX_BYTES else None


def _what_changed(before: dict[str, Any], after: dict[str, Any]) -> str:
    """The person's changes as a short diff of each changed argument."""
    parts = []
    for key in sorted(after):
        if before.get(key) == after[key]:
            continue
        old, new = before.get(key), after[key]
        if isinstance(old, str) and isinstance(new, str):
            lines = difflib.unified_diff(
                old.splitlines(), new.splitlines(), f"yours/{key}", f"theirs/{key}", lineterm=""
            )
            diff = "\n".join(list(lines)[: limits.WRITE_DIFF_MAX_LINES])
            parts.append(f"{key}:\n{diff}")
        else:
            parts.append(f"{key} changed")
    return "\n".join(parts) or "nothing"


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in getattr(result, "content", []))


def _refused(record: dict[str, Any], why: str) -> ToolError:
    status = record.get("status")
    if status == DENIED and record.get("staged"):
        return ToolError(
            f"not landed: the staged changes of {record.get('tool')} were denied by "
            f"{record.get('decided_by')} ({record['id']}; {why}); nothing of them reached the "
            "workspace; do not repeat it unchanged"
        )
    if status == DENIED:
        return ToolError(
            f"not run: {record.get('tool')} was denied by {record.get('decided_by')} "
            f"({record['id']}; {why}); do not repeat it unchanged"
        )
    return ToolError(
        f"not run: approval {record['id']} for {record.get('tool')} is {status} with no "
        f"approval ({why}); call again to ask anew"
    )


def _write_diff(ws, args: dict[str, Any]) -> str:
    path, new = args["path"], args["content"]
    try:
        # defer_parents: a file in a folder that does not exist yet is shown whole.
        with locate(ws, path, defer_parents=True) as loc:
            st = None if loc.missing else loc.lstat()
            old = b"" if st is None else read_bytes(loc, limits.CONFIRM_SUMMARY_MAX_CHARS * 4)[0]
    except WorkspaceError as exc:
        return f"(the current file cannot be read: {exc})"
    try:
        before = old.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return f"replaces a binary file of {len(old)} bytes with {len(new)} characters of text"
    lines = difflib.unified_diff(before, new.splitlines(), f"a/{path}", f"b/{path}", lineterm="")
    return "\n".join(lines) or "(no change)"


def _delete_listing(ws, path: str) -> str:
    try:
        with locate(ws, path, follow_final=False) as loc:
            st = loc.lstat()
            if st is None:
                return f"{path} does not exist"
            if not stat.S_ISDIR(st.st_mode):
                return f"removes {path} ({st.st_size} bytes)"
            # Every entry goes: the walk by fd counts them all, `.git` and hidden ones too.
            found: list[str] = []
            count, complete, special = 0, True, set[str]()
            for rel in entries_below(loc.dir_fd, loc.name, loc.real_rel):
                if rel is None:
                    complete = False
                    break
                count += 1
                special.update(p for p in rel.split("/") if p in (".git", ".workspace-mcp"))
                if len(found) < limits.CONFIRM_LIST_MAX:
                    found.append(rel)
    except WorkspaceError as exc:
        return f"(cannot be looked at: {exc})"
    total = f"{count} entries" if complete else f"more than {count} entries"
    also = f" (its {listing(sorted(special))} included)" if special else ""
    more = f"\n… and {count - len(found)} more" if count > len(found) else ""
    return f"removes the folder {path} and all {total} below it{also}:\n" + "\n".join(found) + more


def _tail(output: str) -> str:
    """A staged command's own answer, its end kept (where a failure says why)."""
    cap = limits.CONFIRM_OUTPUT_SHOWN_CHARS
    return output if len(output) <= cap else "…" + output[-cap:]


def _unlandable(proposal: staging.Proposal) -> str:
    reasons = [*proposal.held, *([] if proposal.complete else ["past the checkpoint bounds"])]
    return "its changes cannot land: " + "; ".join(echo(r) for r in reasons)


def _listed(paths: list[str]) -> str:
    more = len(paths) - limits.CONFIRM_LIST_MAX
    return listing(paths[: limits.CONFIRM_LIST_MAX]) + (f" and {more} more" if more > 0 else "")


def _inside(folder: str) -> str:
    """A name inside `folder`, to ask the path rules whether they protect what it holds
    (`.github/workflows/**` protects everything inside `.github/workflows`)."""
    return f"{folder}/-"
