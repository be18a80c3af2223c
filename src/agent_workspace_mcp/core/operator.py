"""Messages for the operator. Always stderr: in stdio mode stdout is the protocol stream."""

import sys


def say(message: str) -> None:
    sys.stderr.write(f"agent-workspace-mcp: {message}\n")
    sys.stderr.flush()
