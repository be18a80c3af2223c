"""bench/writes.py's summary over runs (issue 47, item 4): each derived figure's spread
is its lowest, median and highest p50 over the runs, so a target held in every run is
read off the highest. No timing here: the figures come from the benchmark."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import writes  # (bench/ is a directory of scripts, not a package)

STDIO = argparse.Namespace(in_process=False, stdio=True)
FIGURES = (
    "durable write (floor)",
    "new empty file (floor)",
    "bare FastMCP, read 10 KB",
    "bare FastMCP, durable write",
    "bare FastMCP, same on the loop",
    "read_file 10 KB",
    "write_file 10 KB",
    "write_file 10 KB, one line changed",
    "write_file 10 KB, new content",
)


def one_run(read: float, write: float) -> dict:
    samples = {name: [1.0, 1.0, 1.0] for name in FIGURES}
    samples["read_file 10 KB"] = [read - 1, read, read + 5]  # the median, not the mean
    samples["write_file 10 KB"] = [write, write, write]
    return writes.summed_up(samples, STDIO)


def test_a_runs_figures_come_from_its_medians() -> None:
    run = one_run(read=3.0, write=4.25)
    assert run["derived_ms"]["write_file - read_file"] == 1.25
    assert run["derived_ms"]["new content - one line changed"] == 0.0
    assert [row["figure"] for row in run["rows"]] == list(FIGURES)


def test_what_a_new_object_adds_is_set_beside_a_new_files_cost() -> None:
    samples = {name: [1.0, 1.0] for name in FIGURES}
    samples["write_file 10 KB, one line changed"] = [3.5, 3.5]
    samples["write_file 10 KB, new content"] = [4.0, 4.1, 9.0]
    run = writes.summed_up(samples, STDIO)
    assert run["derived_ms"]["new content - one line changed"] == 0.6
    assert {"figure": "new empty file (floor)", "p50_ms": 1.0, "p95_ms": 1.0} in run["rows"]


def test_the_spread_is_read_off_every_run() -> None:
    runs = [one_run(3.0, 4.2), one_run(3.0, 4.6), one_run(3.0, 4.4)]
    over = writes.spread(runs)["write_file - read_file"]
    assert over == {"min": 1.2, "median": 1.4, "max": 1.6}
