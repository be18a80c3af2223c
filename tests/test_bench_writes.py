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


def test_split_bodies_are_read_by_their_place_in_each_round(tmp_path: Path) -> None:
    """`--split`: ours times three writes a round (the first is `write_file 10 KB`), the
    bare server two (the first is its threaded durable write); warm-up rounds dropped."""
    import json

    rounds = writes.WARM_UP_CALLS + 2
    ours = [float(100 * r + k) for r in range(rounds) for k in range(3)]
    bare = [float(100 * r + k) for r in range(rounds) for k in range(2)]
    (tmp_path / "ours.json").write_text(json.dumps({"wall_ms": ours, "cpu_ms": ours}))
    (tmp_path / "bare.json").write_text(json.dumps({"wall_ms": bare, "cpu_ms": bare}))
    got = writes.bodies(tmp_path / "ours.json", tmp_path / "bare.json", calls=2)
    first = 100.0 * writes.WARM_UP_CALLS
    assert got["body, wall: write_file 10 KB"] == [first, first + 100]
    assert got["body, cpu: bare durable write"] == [first, first + 100]

    samples = {name: [1.0, 1.0] for name in FIGURES} | {k: v[:1] * 2 for k, v in got.items()}
    samples["bare FastMCP, durable write"] = [first + 1.0] * 2
    samples["write_file 10 KB"] = [first + 2.5] * 2  # 1.5 over the bare durable write
    samples["body, wall: write_file 10 KB"] = [first + 1.0] * 2  # 1.0 of it in the body
    derived = writes.summed_up(samples, STDIO)["derived_ms"]
    assert derived["body: write_file - bare (wall)"] == 1.0
    assert derived["around the body: write_file - bare"] == 0.5


def test_split_refuses_bodies_that_do_not_match_the_calls(tmp_path: Path) -> None:
    import json

    import pytest

    times = json.dumps({"wall_ms": [1.0] * 5, "cpu_ms": [1.0] * 5})
    for name in ("ours.json", "bare.json"):
        (tmp_path / name).write_text(times)
    with pytest.raises(SystemExit, match="not one per call"):
        writes.bodies(tmp_path / "ours.json", tmp_path / "bare.json", calls=2)
