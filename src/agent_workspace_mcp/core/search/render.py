"""Search results as answers: stable formats, relative paths, explicit truncation."""

from __future__ import annotations

import json
from typing import Any

from ..limits import ANSWER_BYTES, GREP_LINE_CHARS
from .results import GrepResult, ListResult


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}es" if word.endswith("ch") else f"{n} {word}s"


def _clip(text: str) -> str:
    return text if len(text) <= GREP_LINE_CHARS else text[:GREP_LINE_CHARS] + "... (line truncated)"


RULES_HID = ".gitignore rules hid some files from this search; noIgnore=true includes them"


def render_grep(result: GrepResult, context: int, shown: Any, max_results: int) -> str:
    """`path:LINE: text` per match (`path-LINE- text` for context), then a count summary."""
    if not result.hits:
        return f"no matches ({RULES_HID})" if result.rules_hid else "no matches"
    out: list[str] = []
    used = 0
    previous: tuple[str, int] | None = None
    shown_matches = 0
    for hit in result.hits:
        path = shown(hit.path)
        if (
            context
            and previous is not None
            and (previous[0] != hit.path or hit.line != previous[1] + 1)
        ):
            out.append("--")
        sep = ":" if hit.is_match else "-"
        line = f"{path}{sep}{hit.line}{sep} {_clip(hit.text)}"
        used += len(line.encode("utf-8", "replace")) + 1
        if used > ANSWER_BYTES and out:
            out.append(
                f"... (answer size limit reached after {shown_matches} matches; "
                "narrow the path or pattern)"
            )
            break
        out.append(line)
        shown_matches += hit.is_match
        previous = (hit.path, hit.line)
    summary = f"{_plural(result.matches, 'match')} in {_plural(result.files, 'file')}"
    if result.more:
        summary += f" (stopped at maxResults={max_results}; more matches exist)"
    elif result.rules_hid:
        summary += f" ({RULES_HID})"
    out.append(summary)
    return "\n".join(out)


def render_list(result: ListResult, limit: int, shown: Any) -> str:
    hid = RULES_HID.replace("this search", "this listing")
    if not result.entries:
        return f"no files found ({hid})" if result.rules_hid else "no files found"
    out = [shown(e.path) + ("/" if e.is_dir else "") for e in result.entries]
    if result.more:
        last = json.dumps(shown(result.entries[-1].path), ensure_ascii=False)
        why = "answer size limit reached" if result.budget_hit else f"stopped at limit={limit}"
        out.append(
            f"... ({why} after {len(result.entries)} entries; more exist: the same call "
            f"with after={last} continues)"
        )
    elif result.rules_hid:
        out.append(f"({hid})")
    return "\n".join(out)
