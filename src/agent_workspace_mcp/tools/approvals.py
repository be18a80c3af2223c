"""`approval_status`: where a call that waits for a person's approval stands (issue 32)."""

import time
from typing import Annotated

from fastmcp import FastMCP
from pydantic import Field

from ..core.state.approvals import APPROVED, DENIED, PENDING, USED
from ..requestctx import current_subject
from ..services import Services
from .base import READ_ONLY, WorkspaceArg, add_tool, bind


def approval_status(
    services: Services,
    id: Annotated[str, Field(description="The approval id a call answered with (ap-…).")],
    workspace: WorkspaceArg = None,
) -> str:
    """Say whether a call that needs a person's approval was approved, denied or expired.

    Approved: repeat the exact same call once to run it (an approval is for those
    arguments only, and is used once).
    """
    assert services.approvals is not None
    ws = services.workspaces.get(workspace)
    record = services.approvals.get(ws, id.strip(), subject=current_subject())
    status, tool = record["status"], record.get("tool")
    if status == PENDING:
        left = max(0, int(float(record["expires"]) - time.time()))
        return f"{record['id']} ({tool}): waiting for a person; refused if unanswered in {left} s"
    if status == APPROVED:
        left = max(0, int(float(record["use_by"]) - time.time()))
        return (
            f"{record['id']} ({tool}): approved by {record.get('decided_by')}; repeat the "
            f"exact call within {left} s to run it (once)"
        )
    if status == DENIED:
        return f"{record['id']} ({tool}): denied by {record.get('decided_by')}; do not repeat it"
    if status == USED:
        return f"{record['id']} ({tool}): approved and already used; a new call asks again"
    return f"{record['id']} ({tool}): expired with no answer, so refused; a new call asks again"


def register(app: FastMCP, services: Services) -> None:
    if services.approvals is None:
        return  # no --confirm: nothing ever waits
    add_tool(app, bind(approval_status, services), annotations=READ_ONLY, title="Approval status")
