"""`--confirm-notify URL` (issue 48, item 5): a pending approval is announced where the
person is, as a small JSON POST (ntfy, Slack and Teams incoming webhooks all take one).

What is sent is what a lock screen may show: the approval's id, the tool, the workspace's
name, the rule that asked, who asked and where to answer; never a diff, file contents,
arguments or a credential. Sent once per request, within CONFIRM_NOTIFY_SECONDS of the
call's wait for a person; a failure is logged and journaled and changes nothing about the
call, which still waits for a person.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from .errors import ConfigError
from .limits import CONFIRM_NOTIFY_SECONDS

log = logging.getLogger("agent_workspace_mcp")


def check(url: str) -> str:
    """The webhook URL, or one line saying why it cannot be one."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"--confirm-notify: {url[:80]!r} is not an http(s) URL")
    return url


def message(
    record: dict[str, Any], why: str, workspace: str, console: str | None
) -> dict[str, Any]:
    """The announcement: no summary, no arguments (they hold file contents)."""
    text = f"{record.get('tool')} in {workspace} waits for your approval ({why})"
    return {
        "id": record.get("id"),
        "tool": record.get("tool"),
        "workspace": workspace,
        "rule": why,
        "asked_by": record.get("subject") or "the agent",
        "console": console,
        "text": text,  # what Slack and Teams show, and ntfy's body
    }


def post(url: str, body: dict[str, Any]) -> str | None:
    """POST `body` within CONFIRM_NOTIFY_SECONDS; None when delivered, else why not."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body, ensure_ascii=False).encode("utf-8"),
        headers={"Content-Type": "application/json", "User-Agent": "agent-workspace-mcp"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=CONFIRM_NOTIFY_SECONDS) as answer:
            answer.read(1024)
    except urllib.error.HTTPError as exc:
        return f"the webhook answered {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return f"the webhook could not be reached ({getattr(exc, 'reason', exc)})"
    return None
