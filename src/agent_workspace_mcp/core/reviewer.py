"""`--confirm-hook CMD` (issue 48, item 4): a reviewer program answers first.

Before a person is asked, the program gets the request as one JSON object on stdin
(the tool, its arguments, what the person would be shown, the rule that asked) and
answers on stdout, within CONFIRM_HOOK_SECONDS, with `approve`, `deny` or `ask` (a
person decides), as a bare word or as `{"decision": ..., "reason": ...}`. It fails
closed: a crash, a timeout, a non-zero exit or anything else on stdout is a denial,
with the program's stderr tail kept in the decision.

The program must be out of the agent's reach, or the agent rewrites its reviewer: its
executable is resolved like git and bwrap (PATH entries outside every root, or an
absolute path), and neither it nor any argument naming an existing file may lie inside
a root; the server refuses to start otherwise. It runs as the user, outside the
sandbox, in the server's working directory, with the server's environment (a reviewer
may need its own credentials); it never sees the approval key's directory named.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError
from .exec.commands import which
from .limits import CONFIRM_HOOK_OUTPUT_BYTES, CONFIRM_HOOK_SECONDS, CONFIRM_HOOK_STDERR_CHARS

DECISIONS = ("approve", "deny", "ask")


@dataclass(frozen=True)
class Verdict:
    decision: str  # one of DECISIONS
    note: str  # the reason it gave, or why it counts as a denial


def resolve(command: str, roots: Sequence[str], path_dirs: Sequence[str]) -> list[str]:
    """The hook's argv with its program resolved; ConfigError when it cannot be trusted."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ConfigError(f"--confirm-hook: cannot split {command!r}: {exc}") from None
    if not argv:
        raise ConfigError("--confirm-hook: no program given")
    program = argv[0]
    found = os.path.realpath(program) if "/" in program else which(program, path_dirs)
    if found is None or not os.path.isfile(found) or not os.access(found, os.X_OK):
        raise ConfigError(
            f"--confirm-hook: {program!r} is not an executable program here (PATH entries "
            "inside a workspace are not searched)"
        )
    for part in [found, *argv[1:]]:
        real = os.path.realpath(part) if os.path.exists(part) else None
        if real is not None and _inside(real, roots):
            raise ConfigError(
                f"--confirm-hook: {part!r} lies inside a workspace, where the agent could "
                "rewrite its own reviewer; install it outside every root"
            )
    return [found, *argv[1:]]


def _inside(path: str, roots: Sequence[str]) -> bool:
    return any(
        root != "/" and (path == root or path.startswith(root.rstrip("/") + "/")) for root in roots
    )


def review(argv: list[str], request: dict[str, Any]) -> Verdict:
    """Ask the reviewer program about one request; never raises (a failure denies)."""
    data = json.dumps(request, ensure_ascii=False, default=str).encode("utf-8")
    try:
        done = subprocess.run(
            argv,
            input=data,
            capture_output=True,
            timeout=CONFIRM_HOOK_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        return Verdict(
            "deny", f"it did not answer within {CONFIRM_HOOK_SECONDS:g} s" + _tail(exc.stderr)
        )
    except OSError as exc:
        return Verdict("deny", f"it could not start ({exc.strerror})")
    if done.returncode != 0:
        return Verdict("deny", f"it exited with status {done.returncode}" + _tail(done.stderr))
    return _parse(done.stdout[:CONFIRM_HOOK_OUTPUT_BYTES], done.stderr)


def _parse(out: bytes, err: bytes | None) -> Verdict:
    text = out.decode("utf-8", "replace").strip()
    if text in DECISIONS:
        return Verdict(text, "")
    try:
        answer = json.loads(text)
    except ValueError:
        answer = None
    if isinstance(answer, dict) and answer.get("decision") in DECISIONS:
        reason = answer.get("reason")
        return Verdict(str(answer["decision"]), reason[:200] if isinstance(reason, str) else "")
    return Verdict("deny", f"its answer was not approve, deny or ask: {text[:80]!r}" + _tail(err))


def _tail(err: bytes | None) -> str:
    if not err:
        return ""
    text = " ".join(err.decode("utf-8", "replace").split())
    return f"; stderr: …{text[-CONFIRM_HOOK_STDERR_CHARS:]}" if text else ""
