"""JSON read back from files anyone in the workspace could have written (issue 43).

`json.loads` raises RecursionError, not ValueError, for a deeply nested document
(`[[[[...` a few thousand deep), and accepts `1e400` as infinity; a state file planted
or damaged that way made every `write_file` answer an internal error. Every reader of
a state file parses through `loads`, which turns both into the ValueError the readers
already treat as "damaged".
"""

from __future__ import annotations

import json
import math
from typing import Any


def _number(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number out of range: {text[:20]}")
    return value


def _constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


# Made once: json.loads builds a decoder per call when given any hook (a third of parsing
# a short journal line), and sniffs the encoding of bytes, which we always write as UTF-8.
_DECODER = json.JSONDecoder(parse_float=_number, parse_constant=_constant)


def loads(data: str | bytes) -> Any:
    """Parsed JSON; ValueError for anything malformed, too deep or not finite (bytes are
    read as UTF-8, as json.loads reads them: lone surrogates pass)."""
    try:
        if isinstance(data, (bytes, bytearray)):
            data = data.decode("utf-8", "surrogatepass")
        return _DECODER.decode(data)
    except RecursionError:
        raise ValueError("nested too deeply") from None
