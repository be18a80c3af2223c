"""The persona profile's `read` and `edit`: persona's argument names and semantics over
our implementations (the same containment, reads and all-or-nothing edits)."""

from __future__ import annotations

from typing import Annotated

from fastmcp import FastMCP
from pydantic import BaseModel, ConfigDict, Field

from ..core import limits
from ..core.errors import BinaryFileError, EncodingError
from ..services import Services
from .base import DESTRUCTIVE, READ_ONLY, add_tool, bind
from .editing import PatchEdit, patch
from .files import PathArg, read_binary_file, read_text_answer


class PersonaEdit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    old_string: Annotated[str, Field(description="Exact text to replace (must match once).")]
    new_string: Annotated[str, Field(description="Replacement text.")]
    replace_all: Annotated[bool, Field(description="Replace every occurrence.")] = False


def read(
    services: Services,
    path: PathArg,
    offset: Annotated[
        int, Field(ge=1, description="Text: first line, 1-based. Binary: first byte, 1-based.")
    ] = 1,
    limit: Annotated[
        int,
        Field(ge=1, description=f"Text: lines to return (cap {limits.READ_LINES_PER_SEGMENT})."),
    ] = limits.READ_LINES_PER_SEGMENT,
) -> str | list:
    """Read a file: numbered text lines with offset/limit, or base64 for a binary file."""
    try:
        return read_text_answer(services, path, offset, limit, None)
    except (BinaryFileError, EncodingError):
        return read_binary_file(services, path, offset=offset - 1)


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
    add_tool(app, bind(read, services, inline=True), annotations=READ_ONLY, title="Read")
    add_tool(app, bind(edit, services), annotations=DESTRUCTIVE, title="Edit")
