"""The persona profile's `read` and `edit`: persona's argument names and semantics over
our implementations (the same containment, reads and all-or-nothing edits)."""

from __future__ import annotations

import base64
from typing import Annotated

from fastmcp import FastMCP
from pydantic import BaseModel, ConfigDict, Field

from ..core import limits
from ..core.containment import locate
from ..core.errors import BinaryFileError, EncodingError
from ..core.textio import read_range
from ..services import Services
from .base import DESTRUCTIVE, READ_ONLY, add_tool, bind
from .editing import PatchEdit, patch
from .files import PathArg, read_text_answer


class PersonaEdit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    old_string: Annotated[str, Field(description="Exact text to replace (must match once).")]
    new_string: Annotated[str, Field(description="Replacement text.")]
    replace_all: Annotated[bool, Field(description="Replace every occurrence.")] = False


def read(
    services: Services,
    path: PathArg,
    offset: Annotated[int, Field(ge=1, description="First line (text) to return, 1-based.")] = 1,
    limit: Annotated[
        int, Field(ge=1, description=f"Lines to return (cap {limits.READ_LINES_PER_SEGMENT}).")
    ] = limits.READ_LINES_PER_SEGMENT,
) -> str:
    """Read a file: numbered text lines with offset/limit, or base64 for a binary file."""
    try:
        return read_text_answer(services, path, offset, limit, None)
    except (BinaryFileError, EncodingError):
        pass
    ws = services.workspaces.get()
    start = (offset - 1) * limits.READ_BINARY_CHUNK_BYTES
    with locate(ws, path) as loc:
        data, st = read_range(loc, start, limits.READ_BINARY_CHUNK_BYTES)
    end = start + len(data)
    header = f"{loc.display}: binary, bytes {start}-{end} of {st.st_size}"
    if end < st.st_size:
        header += f" (more: offset={offset + 1})"
    return f"{header}\nbase64:\n{base64.b64encode(data).decode('ascii')}"


def edit(
    services: Services,
    path: PathArg,
    edits: Annotated[
        list[PersonaEdit],
        Field(min_length=1, description="Edits, applied in order to the edited content."),
    ],
) -> str:
    """Replace exact text, one or more edits in order; nothing is written unless all apply."""
    converted = [
        PatchEdit(
            path=path, oldString=e.old_string, newString=e.new_string, replaceAll=e.replace_all
        )
        for e in edits
    ]
    return patch(services, converted)


def register(app: FastMCP, services: Services) -> None:
    if services.settings.profile != "persona":
        return
    add_tool(app, bind(read, services), annotations=READ_ONLY, title="Read")
    add_tool(app, bind(edit, services), annotations=DESTRUCTIVE, title="Edit")
