"""bench/search.py's summary over runs (issue 47, item 3): each query's ratio in every
run, and its lowest, median and highest, so a target held in every run is read off the
highest. No timing here: the ratios come from the benchmark."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import search  # (bench/ is a directory of scripts, not a package)


def one_run(*ratios: float) -> list[dict]:
    queries = ("full scan: def get_queryset", "full scan: SuspiciousOperation")
    return [
        {"corpus": "django", "query": query, "ratio": ratio}
        for query, ratio in zip(queries, ratios, strict=True)
    ]


def test_the_spread_is_read_off_every_run() -> None:
    table = search.spread([one_run(1.12, 1.10), one_run(1.24, 1.08), one_run(1.15, 1.21)])
    first, second = table
    assert first["query"] == "full scan: def get_queryset"
    assert first["ratios"] == [1.12, 1.24, 1.15]
    assert (first["min"], first["median"], first["max"]) == (1.12, 1.15, 1.24)
    assert (second["min"], second["median"], second["max"]) == (1.08, 1.10, 1.21)


def test_the_printed_table_names_every_run_and_the_range(capsys) -> None:
    search.print_spread(search.spread([one_run(1.12, 1.10), one_run(1.24, 1.08)]))
    out = capsys.readouterr().out
    assert "run 1   run 2" in out
    assert "1.12x   1.24x  (1.12x to 1.24x, median 1.18x)" in out
