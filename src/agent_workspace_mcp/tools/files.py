"""File tools: read, write, create directories, delete, move, describe.

Thin by design: every path goes through `locate()` (the containment walk) and every
byte through `core.textio`; this module validates arguments and shapes answers for a
model that pays for each token: relative paths, one-line confirmations, explicit
truncation markers with the argument that continues.
"""

import base64
import binascii
import posixpath
import stat
from datetime import UTC, datetime
from typing import Annotated

from fastmcp import FastMCP
from fastmcp.utilities.types import Image
from pydantic import Field

from ..core import fileops, limits
from ..core.containment import Located, locate
from ..core.editing import unified_diff
from ..core.errors import InvalidArgumentError, TooLargeError, WorkspaceError
from ..core.state import stale_reads
from ..core.state.journal import activity
from ..core.textio import TextDoc, atomic_write, decode_text, format_size, read_bytes, read_range
from ..core.workset import check_sha, short_sha
from ..services import Services
from .base import ADDITIVE, DESTRUCTIVE, READ_ONLY, ExpectedSha, WorkspaceArg, add_tool, bind

# Absolute paths inside a workspace work too; the server instructions say so once.
PathArg = Annotated[str, Field(description="Workspace-relative path.")]

_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"\xff\xd8\xff", "jpeg"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
)


def image_format(head: bytes) -> str | None:
    for magic, fmt in _IMAGE_MAGIC:
        if head.startswith(magic):
            return fmt
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    return None


def split_lines(text: str) -> list[str]:
    """Lines as editors and grep count them: only "\\n" breaks a line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def render_numbered(
    lines: list[str], offset: int, limit: int, budget: int = limits.ANSWER_BYTES
) -> tuple[str, int]:
    """`N: text` lines from `offset` (1-based), at most `limit` lines and `budget` bytes.

    Returns the text and the last line number shown. The first requested line is
    always shown (a single line is capped at READ_CHARS_PER_LINE characters).
    """
    out: list[str] = []
    used = 0
    last = offset - 1
    end = min(len(lines), offset - 1 + limit)
    for index in range(offset - 1, end):
        line = lines[index]
        if len(line) > limits.READ_CHARS_PER_LINE:
            line = line[: limits.READ_CHARS_PER_LINE] + "... (line truncated)"
        rendered = f"{index + 1}: {line}"
        size = len(rendered.encode("utf-8", "surrogatepass")) + 1
        if out and used + size > budget:
            break
        out.append(rendered)
        used += size
        last = index + 1
    return "\n".join(out), last


def read_text_answer(
    services: Services,
    path: str,
    offset: int,
    limit: int,
    workspace: str | None,
    budget: int = limits.ANSWER_BYTES,
) -> str:
    ws = services.workspaces.get(workspace)
    with locate(ws, path) as loc:
        data, _ = read_bytes(loc)
        doc = decode_text(data, loc.display)
        stale_reads.saw(loc, data)
    lines = split_lines(doc.text)
    total = len(lines)
    if total == 0:
        return f"(empty file: {loc.display})"
    if offset > total:
        raise InvalidArgumentError(
            f"{loc.display}: offset {offset} is past the end of the file ({total} lines)"
        )
    limit = min(limit, limits.READ_LINES_PER_SEGMENT)
    body, last = render_numbered(lines, offset, limit, min(budget, limits.READ_BYTES_PER_SEGMENT))
    sha = short_sha(data)
    if last < total:
        more = f"continue with offset={last + 1}; sha256 {sha}"
        return f"{body}\n... (truncated at line {last} of {total}; {more})"
    return f"{body}\n(sha256 {sha})"


def read_file(
    services: Services,
    path: PathArg,
    offset: Annotated[int, Field(ge=1, description="First line to return, 1-based.")] = 1,
    limit: Annotated[
        int,
        Field(
            ge=1,
            description=f"Lines to return (cap {limits.READ_LINES_PER_SEGMENT}).",
        ),
    ] = limits.READ_LINES_PER_SEGMENT,
    workspace: WorkspaceArg = None,
) -> str:
    """Read a text file as numbered lines `N: text`.

    A long file stops at a budget, naming the `offset` to continue from. The last
    line is its sha256 (for `expectedSha256`).
    Binary files: read_binary_file.
    """
    return read_text_answer(services, path, offset, limit, workspace)


def read_files(
    services: Services,
    paths: Annotated[
        list[str],
        Field(min_length=1, max_length=limits.READ_FILES_MAX_PATHS, description="Paths to read."),
    ],
    workspace: WorkspaceArg = None,
) -> str:
    """Read several text files in one call, each answered (or failed) on its own.

    Blocks start with `==> path <==` and share one size budget; files past it are named.
    """
    budget = limits.ANSWER_BYTES
    blocks: list[str] = []
    for index, path in enumerate(paths):
        if budget <= 0:
            rest = ", ".join(paths[index:])
            blocks.append(f"... (answer budget reached; read separately: {rest})")
            break
        try:
            body = read_text_answer(
                services, path, 1, limits.READ_LINES_PER_SEGMENT, workspace, budget
            )
        except WorkspaceError as exc:
            body = f"error: {exc}"
        blocks.append(f"==> {path} <==\n{body}")
        budget -= len(body.encode("utf-8", "surrogatepass"))
    return "\n".join(blocks)


def read_binary_file(
    services: Services,
    path: PathArg,
    offset: Annotated[int, Field(ge=0, description="Byte offset to start at.")] = 0,
    length: Annotated[
        int | None,
        Field(
            ge=1,
            description=f"Bytes to return (default and cap {limits.READ_BINARY_CHUNK_BYTES}).",
        ),
    ] = None,
    workspace: WorkspaceArg = None,
) -> str | list:
    """Read raw bytes as base64; PNG, JPEG, GIF and WebP come back as images."""
    ws = services.workspaces.get(workspace)
    with locate(ws, path) as loc:
        head, st = read_range(loc, 0, 16)
        fmt = image_format(head)
        if fmt and offset == 0 and length is None:
            if st.st_size > limits.READ_IMAGE_MAX_BYTES:
                raise TooLargeError(
                    f"{loc.display}: image is too large ({format_size(st.st_size)}; "
                    f"the limit is {format_size(limits.READ_IMAGE_MAX_BYTES)})"
                )
            data, st = read_bytes(loc, limits.READ_IMAGE_MAX_BYTES)
            stale_reads.saw(loc, data)
            return [
                f"{loc.display}: {fmt} image, {format_size(len(data))}",
                Image(data=data, format=fmt),
            ]
        want = min(length or limits.READ_BINARY_CHUNK_BYTES, limits.READ_BINARY_CHUNK_BYTES)
        data, st = read_range(loc, offset, want)
        if offset == 0 and len(data) == st.st_size:
            stale_reads.saw(loc, data)
    end = offset + len(data)
    header = f"{loc.display}: bytes {offset}-{end} of {st.st_size}"
    if end < st.st_size:
        header += f" (more: offset={end})"
    return f"{header}\nbase64:\n{base64.b64encode(data).decode('ascii')}"


def write_file(
    services: Services,
    path: PathArg,
    content: Annotated[str, Field(description="The complete new file content.")],
    expectedSha256: ExpectedSha = None,
    workspace: WorkspaceArg = None,
) -> str:
    """Create or overwrite a text file atomically (parents are created).

    Keeps an existing file's permissions, CRLF line endings and BOM; refused if it
    changed since you read it.
    """
    ws = services.workspaces.get(workspace)
    with (
        locate(ws, path, defer_parents=True, write=True) as loc,
        services.locks.hold(ws, [loc.real_abs]),
    ):
        current = _replacing(loc, expectedSha256)
        doc = _conventions(loc, current)
        data = doc.encode(content) if doc else content.encode("utf-8", "surrogatepass")
        _check_write_size(loc.display, len(data))
        st = loc.lstat() if current is not None else None
        if st is not None and stat.S_ISREG(st.st_mode):  # its bytes are in hand already
            activity.before_content(loc, current, stat.S_IMODE(st.st_mode))
        else:
            activity.before(loc)
        with loc.parents_made():
            existed = atomic_write(loc, data)
        activity.left_content(loc, data)
        stale_reads.wrote(loc, data)
    kept = ""
    if doc and doc.newline == "\r\n":
        kept = ", kept CRLF line endings"
    if doc and doc.bom:
        kept += ", kept UTF-8 BOM"
    verb = "Updated" if existed else "Created"
    activity.record([loc.display], f"{verb.lower()} {len(data)} bytes")
    answer = f"{verb} {loc.display} ({len(data)} bytes{kept})"
    return answer + _write_diff(loc.display, doc, content, current, len(data))


def _write_diff(
    display: str, doc: TextDoc | None, content: str, current: bytes | None, size: int
) -> str:
    """What a write over an existing text file changed, short and bounded (issue 44):
    clients that render no MCP App show only the answer of what an agent changed."""
    if current is None:
        return ""  # created: the content is the whole story
    if doc is None:
        return f"\n(replaced a binary file of {len(current)} bytes)"
    if max(len(current), size) > limits.WRITE_DIFF_MAX_BYTES:
        return f"\n(diff not shown: over {limits.WRITE_DIFF_MAX_BYTES // 1024} KiB)"
    new = content.replace("\r\n", "\n") if "\r" in content else content
    if new == doc.text:
        return "\n(content unchanged)"
    return "\n" + unified_diff(
        doc.text,
        new,
        display,
        max_lines=limits.WRITE_DIFF_MAX_LINES,
        line_chars=limits.WRITE_DIFF_LINE_CHARS,
    )


def write_binary_file(
    services: Services,
    path: PathArg,
    contentBase64: Annotated[str, Field(description="The complete file content, base64-encoded.")],
    workspace: WorkspaceArg = None,
) -> str:
    """Create or overwrite a file from base64 bytes (atomic; parents created)."""
    try:
        data = base64.b64decode(contentBase64, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgumentError("contentBase64 is not valid base64") from None
    ws = services.workspaces.get(workspace)
    with locate(ws, path, defer_parents=True, write=True) as loc:
        _check_write_size(loc.display, len(data))
        with services.locks.hold(ws, [loc.real_abs]):
            stale_reads.check(loc, retry=AGAIN.format(then="write it"))
            activity.before(loc)
            with loc.parents_made():
                existed = atomic_write(loc, data)
            stale_reads.wrote(loc, data)
    verb = "Updated" if existed else "Created"
    activity.record([loc.display], f"{verb.lower()} {len(data)} bytes (binary)")
    return f"{verb} {loc.display} ({len(data)} bytes)"


def make_directory(services: Services, path: PathArg, workspace: WorkspaceArg = None) -> str:
    """Create a directory and any missing parents (an existing one is fine)."""
    ws = services.workspaces.get(workspace)
    with (
        locate(ws, path, defer_parents=True, write=True) as loc,
        services.locks.hold(ws, [loc.real_abs]),
    ):
        activity.before(loc)
        with loc.parents_made():
            created = fileops.make_directory(loc)
    activity.record([loc.display], "created" if created else "already existed")
    return (
        f"Created directory {loc.display}" if created else f"Directory {loc.display} already exists"
    )


def delete_path(
    services: Services,
    path: PathArg,
    recursive: Annotated[
        bool, Field(description="Required to delete a non-empty directory.")
    ] = False,
    workspace: WorkspaceArg = None,
) -> str:
    """Delete a file, a symlink (not its target) or a directory. Never the workspace root."""
    ws = services.workspaces.get(workspace)
    with (
        locate(ws, path, follow_final=False, write=True) as loc,
        services.locks.hold(ws, [loc.real_abs]),
    ):
        stale_reads.check(loc, retry=AGAIN.format(then="delete it"), tree=True)
        activity.before(loc, recursive=recursive)
        what = fileops.delete(loc, recursive=recursive)
        stale_reads.wrote(loc, None, tree=True)
    activity.record([loc.display], f"deleted {what}")
    return f"Deleted {loc.display} ({what})"


def move_path(
    services: Services,
    source: PathArg,
    destination: PathArg,
    overwrite: Annotated[bool, Field(description="Replace an existing destination.")] = False,
    workspace: WorkspaceArg = None,
) -> str:
    """Move or rename a file or directory (parents are created); an existing
    destination is replaced only with overwrite=true."""
    ws = services.workspaces.get(workspace)
    with (
        locate(ws, source, follow_final=False, write=True) as src,
        locate(ws, destination, follow_final=False, defer_parents=True, write=True) as dst,
        services.locks.hold(ws, [src.real_abs, dst.real_abs]),
    ):
        moving = _guard_move(src, dst, overwrite)
        activity.before(src, recursive=True)
        activity.before(dst, recursive=True)
        with dst.parents_made():
            fileops.move(src, dst, overwrite=overwrite)
        _moved(src, dst, moving)
    activity.record([src.display, dst.display], "moved")
    return f"Moved {src.display} -> {dst.display}"


def rename_path(
    services: Services,
    path: PathArg,
    newName: Annotated[str, Field(description="New name in the same directory (no '/').")],
    overwrite: Annotated[
        bool, Field(description="Replace an existing entry of that name.")
    ] = False,
    workspace: WorkspaceArg = None,
) -> str:
    """Rename a file or directory within its directory."""
    if not newName or "/" in newName or newName in (".", ".."):
        raise InvalidArgumentError("newName must be a plain file name without '/'")
    ws = services.workspaces.get(workspace)
    with locate(ws, path, follow_final=False, write=True) as src:
        if src.is_root:
            raise InvalidArgumentError("refusing to rename the workspace root itself")
        parent = posixpath.dirname(src.display)
        target = posixpath.join(parent, newName) if parent else newName
        with (
            locate(ws, target, follow_final=False, write=True) as dst,
            services.locks.hold(ws, [src.real_abs, dst.real_abs]),
        ):
            moving = _guard_move(src, dst, overwrite)
            activity.before(src, recursive=True)
            activity.before(dst, recursive=True)
            fileops.move(src, dst, overwrite=overwrite)
            _moved(src, dst, moving)
    activity.record([src.display, dst.display], "renamed")
    return f"Renamed {src.display} -> {dst.display}"


def file_info(services: Services, path: PathArg, workspace: WorkspaceArg = None) -> str:
    """Type, size, mtime and mode of a path; a regular file also text or binary, line
    count and sha256."""
    ws = services.workspaces.get(workspace)
    with locate(ws, path, follow_final=False) as loc:
        info = fileops.describe(loc)
        if info.sha256:
            stale_reads.saw(loc, sha256=info.sha256)
    mtime = datetime.fromtimestamp(info.mtime, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    rows = [
        f"path: {loc.display}",
        f"type: {info.kind}" + (f" -> {info.link_target}" if info.link_target else ""),
        f"size: {info.size} bytes",
        f"modified: {mtime}",
        f"mode: {info.mode:04o}",
    ]
    if info.binary is not None:
        rows.append("content: binary" if info.binary else f"content: text, {info.lines} lines")
    if info.sha256:
        rows.append(f"sha256: {info.sha256}")
    return "\n".join(rows)


def register(app: FastMCP, services: Services) -> None:
    add_tool(app, bind(read_file, services, inline=True), annotations=READ_ONLY, title="Read file")
    add_tool(
        app, bind(read_files, services, inline=True), annotations=READ_ONLY, title="Read files"
    )
    add_tool(
        app,
        bind(read_binary_file, services, inline=True),
        annotations=READ_ONLY,
        title="Read binary file",
    )
    add_tool(app, bind(file_info, services, inline=True), annotations=READ_ONLY, title="File info")
    add_tool(app, bind(write_file, services), annotations=DESTRUCTIVE, title="Write file")
    add_tool(
        app, bind(write_binary_file, services), annotations=DESTRUCTIVE, title="Write binary file"
    )
    add_tool(app, bind(make_directory, services), annotations=ADDITIVE, title="Make directory")
    add_tool(app, bind(delete_path, services), annotations=DESTRUCTIVE, title="Delete path")
    add_tool(app, bind(move_path, services), annotations=DESTRUCTIVE, title="Move path")
    add_tool(app, bind(rename_path, services), annotations=DESTRUCTIVE, title="Rename path")


AGAIN = "read it again, then {then} if it should still go"
REPLACE = "read it again and merge your change, or pass expectedSha256={sha} to replace it as it is"


def _replacing(loc: Located, expected: str | None) -> bytes | None:
    """Under the path lock, before a whole-file write: the bytes it replaces, after the
    `expectedSha256` check when given, else the stale-read guard's."""
    current = stale_reads.current_bytes(loc)
    if expected is not None:
        check_sha(loc.display, current, expected)
    else:
        stale_reads.check(loc, current, retry=REPLACE)
    return current


def _guard_move(src: Located, dst: Located, overwrite: bool) -> bytes | None:
    """Under the path locks: refuse a move of what changed since it was read (and of a
    destination it replaces); returns the moving file's bytes (None: not a file)."""
    moving = stale_reads.current_bytes(src)
    stale_reads.check(src, moving, retry=AGAIN.format(then="move it"), tree=True)
    if overwrite:
        stale_reads.check(dst, retry=AGAIN.format(then="replace it"), tree=True)
    return moving


def _moved(src: Located, dst: Located, moving: bytes | None) -> None:
    stale_reads.wrote(src, None, tree=True)
    if moving is None:
        stale_reads.forget(dst)  # a directory: what the session saw under that name is gone
    else:
        stale_reads.wrote(dst, moving)


def _conventions(loc: Located, current: bytes | None) -> TextDoc | None:
    """The line-ending and BOM conventions of the file being replaced, if it is text."""
    if current is None:
        return None
    try:
        return decode_text(current, loc.display)
    except WorkspaceError:
        return None


def _check_write_size(display: str, size: int) -> None:
    if size > limits.WRITE_MAX_BYTES:
        raise TooLargeError(
            f"{display}: content is too large ({format_size(size)}; "
            f"the limit is {format_size(limits.WRITE_MAX_BYTES)})"
        )
