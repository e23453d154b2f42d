"""The two hand-off files read back through typed_json: the rows written, or what is wrong at its JSON path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tool.errors import PerfError
from ci_tool.history.perf_results import PerfResult
from ci_tool.outcomes import PerfVerdict
from ci_tool.perf.handoff import StageStamp, append_results, read_results, read_snapshot, write_snapshot

ROW = PerfResult("r1", "A10-PyTorch-Perf-1", "gpu-c-s-b", "A10", "tps", 10.0, PerfVerdict.PASSED, 5.0, baseline=9.0,
                 threshold=0.1, note="n", test_id="t", post_merge=True, branch="main", commit="ab12", noise=0.5,
                 rounds=5)  # fmt: skip
STAMP = StageStamp("r2", "A10-PyTorch-1", False, "cd34", 0.0, 100.0)


def test_a_snapshot_reads_back_as_written(tmp_path: Path) -> None:
    write_snapshot(tmp_path / "s.json", [ROW])
    assert read_snapshot(tmp_path / "s.json").rows == (ROW,)


BAD_SNAPSHOTS = [
    ("not a list", {}, ":1:1: expected an array, found {}"),
    ("a value not a number", {"value": "fast"}, ":1:{col} ([0].value): expected a number, found 'fast'"),
    ("an empty case", {"case": ""}, ":1:{col} ([0].case): expected a non-empty case, found ''"),
    ("no round", {"rounds": 0}, ":1:{col} ([0].rounds): expected a count of rounds >= 1, found 0"),
]  # fmt: skip


@pytest.mark.parametrize(("change", "message"), [r[1:] for r in BAD_SNAPSHOTS], ids=[r[0] for r in BAD_SNAPSHOTS])
def test_a_bad_snapshot_says_where(tmp_path: Path, change: dict[str, object], message: str) -> None:
    """Before typed_json read them: `expected a list of perf results, found value 'fast', not a finite number`,
    at the file alone."""
    path = tmp_path / "s.json"
    write_snapshot(path, [ROW])
    text = json.dumps([{**json.loads(path.read_text())[0], **change}] if change else change)
    path.write_text(text)
    with pytest.raises(PerfError) as raised:
        read_snapshot(path)
    key = f'"{next(iter(change), "")}": '
    assert str(raised.value) == f"{path}{message}".replace("{col}", str(text.find(key) + len(key) + 1))


def test_handed_back_rows_are_stamped_and_bad_lines_refused_by_line_and_path(tmp_path: Path) -> None:
    path = tmp_path / "p.perf.jsonl"
    append_results(path, [ROW])
    row = json.loads(path.read_text())
    line = json.dumps({**row, "gpu": ""})
    gpu_column = line.index('"gpu": ') + len('"gpu": ') + 1
    with open(path, "a") as out:
        out.write("\n" + line + "\n{\n")
    handed = read_results([path], STAMP)
    stamped = [(r.run_id, r.stage, r.commit, r.case_id) for r in handed.rows]
    assert stamped == [("r2", "A10-PyTorch-1", "cd34", "gpu-c-s-b")]
    assert handed.refused == (
        f"{path}:3:{gpu_column} (gpu): expected a non-empty gpu, found ''",
        f"{path}:4:2: expected JSON, found a syntax error: Expecting property name enclosed in double quotes",
    )
