"""bench/budget.py's comparison (issue 47, item 5): the recorded table reads back as
written, and a figure is flagged exactly when it is worse than its recorded ratio by
more than the budget (10% for p50, p95 and the scalars, 20% for p99). No timing here:
the figures themselves come from the benchmark, never from a test."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import budget  # noqa: E402  (bench/ is a directory of scripts, not a package)

ROWS = [
    {
        "figure": "read_file",
        "floor": "bare tool",
        "p50_ms": 2.0,
        "p50_x": 1.2,
        "p95_ms": 3.0,
        "p95_x": 1.5,
        "p99_ms": 5.0,
        "p99_x": 2.0,
    },
]
COLD = {"figure": "cold start (initialize)", "p50_ms": 210.0, "p50_x": 1.4}


def test_the_recorded_table_reads_back_as_written() -> None:
    text = f"intro\n{budget.START}\n{budget.table(ROWS, COLD, 20000)}\n{budget.END}\n"
    assert budget.recorded(text) == budget.as_figures(ROWS, COLD, 20000)


def test_the_performance_doc_holds_a_budget_table() -> None:
    figures = budget.recorded((BENCH.parent / "docs" / "PERFORMANCE.md").read_text())
    assert "read_file 10 KB" in figures and "write_file 10 KB" in figures
    assert figures["tools/list bytes"]["bytes"] > 0


def test_only_a_figure_past_its_budget_is_flagged() -> None:
    before = budget.as_figures(ROWS, COLD, 20000)
    within = budget.as_figures(  # p50 +9.2%, p95 +9.3%, p99 +19.5%, cold +9.3%, bytes +9.995%
        [{**ROWS[0], "p50_x": 1.31, "p95_x": 1.64, "p99_x": 2.39}], {**COLD, "p50_x": 1.53}, 21_999
    )
    assert budget.over_budget(within, before) == []
    past = budget.as_figures(  # p50 +10.8%, p99 +20.5%, bytes +10.005%
        [{**ROWS[0], "p50_x": 1.33, "p95_x": 1.5, "p99_x": 2.41}], COLD, 22_001
    )
    flagged = budget.over_budget(past, before)
    assert [f.split(":")[0] for f in flagged] == [
        "read_file p50",
        "read_file p99",
        "tools/list bytes",
    ]


def test_each_figure_is_the_median_of_its_runs() -> None:
    runs = [[{**ROWS[0], "p95_x": value, "p95_ms": value * 2}] for value in (1.5, 3.0, 1.6)]
    (merged,) = budget.median_rows(runs)
    assert merged["p95_x"] == 1.6 and merged["p95_ms"] == 3.2
    assert merged["p50_x"] == ROWS[0]["p50_x"] and merged["floor"] == "bare tool"


def test_a_figure_without_a_recorded_budget_is_flagged() -> None:
    """A table of the old shape (or none) must not read as every figure within budget."""
    now = budget.as_figures(ROWS, COLD, 20000)
    old_shape = "| read_file | 2.00 | 1.20 | 3.00 | 1.50 | 5.00 | 2.00 |"
    before = budget.recorded(f"{budget.START}\n{old_shape}\n{budget.END}")
    flagged = budget.over_budget(now, before)
    assert "read_file p50: not in the recorded table (record it with --write)" in flagged
    assert len(flagged) == 5  # three percentiles, the cold start, the bytes
