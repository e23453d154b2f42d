"""`ci-tool history import` and the readers after it, on mutated copies of a real unrecorded.json: every
mutation imports (and then reads back) or is our located error; never "unexpected"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_tool.cli import main
from tests.ci_tool.history.unrecorded_mutations import HOWS, REPLACEMENTS, as_text, mutate, paths, real_record

BASE = real_record()
PATHS = list(paths(BASE))


def import_and_read(folder: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Import the text as RUN_DIR/unrecorded.json, then every reader of the imported run; the first failing
    exit code and everything printed."""
    run_dir = folder / "run"
    run_dir.mkdir(exist_ok=True)
    (run_dir / "unrecorded.json").write_text(text)
    history = str(folder / "h.sqlite")
    code = main(["history", "import", str(run_dir), "--history", history])
    if code == 0:
        for verb in (["report", "latest"], ["history", "--json"], ["durations", "export"], ["site", "--output",
                     str(folder / "site")]):  # fmt: skip
            code = main([*verb, "--history", history]) or code
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    path=st.sampled_from(PATHS),
    how=st.sampled_from(HOWS),
    replacement=st.sampled_from(REPLACEMENTS),
)
def test_a_mutated_record_imports_or_is_our_error(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], path: Any, how: str, replacement: Any
) -> None:
    folder = tmp_path_factory.mktemp("fuzz")
    code, printed = import_and_read(folder, as_text(mutate(BASE, path, how, replacement)), capsys)
    assert code in (0, 1)
    assert "unexpected" not in printed and "Traceback" not in printed


def _value_at(record: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        record = record[key]
    return record


TEXT_PATHS = [path for path in PATHS if isinstance(_value_at(BASE, path), str)]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    path=st.sampled_from(TEXT_PATHS),
    text=st.text(st.characters() | st.sampled_from("\ud800\udbff\udc00\udfff"), max_size=6),
)
def test_any_text_in_a_text_field_imports_or_is_our_error(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], path: Any, text: str
) -> None:
    """Any code point, lone surrogates (\\ud800-\\udfff, which JSON can write) among them."""
    folder = tmp_path_factory.mktemp("text")
    code, printed = import_and_read(folder, as_text(mutate(BASE, path, "replace", text)), capsys)
    assert code in (0, 1)
    assert "unexpected" not in printed and "Traceback" not in printed


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("stages", 0, "stage", "failed"), 2**63, "(stages[0].stage.failed): expected a count (an integer from 0 to "
         "9223372036854775807), found 9223372036854775808"),
        (("run", "started_at"), "NaN", "(run.started_at): expected a finite timestamp (seconds since the epoch) from "
         "0 to 3.25037e+10, found 'NaN'"),
        (("run", "started_at"), 1e300, "(run.started_at): expected a finite timestamp (seconds since the epoch) from "
         "0 to 3.25037e+10, found 1e+300"),
        (("run", "state"), "passed", "(run.state): expected interrupted (stage 'A10-PyTorch-2' is interrupted), "
         "found 'passed'"),
        (("stages", 0, "stage", "state"), "passed", "(stages[0].stage.state): expected failed, unstable or "
         "interrupted (its test 'a.py::test_bad' failed), found 'passed'"),
        (("stages", 0, "stage", "run_id"), "another", "(stages[0].stage.run_id): expected the run's id "
         "'20261201-101010-abcd', found 'another'"),
        (("stages", 0, "tests", 1, "duration_seconds"), [], "(stages[0].tests[1].duration_seconds): expected a "
         "finite number of seconds (a duration) from 0 to 3.1536e+08, found a JSON list"),
        (("stages", 0, "tests", 0, "outcome"), "exploded", "(stages[0].tests[0].outcome): expected a TestOutcome "
         "(passed, failed, error, skipped), found 'exploded'"),
        (("run", "details"), {"x": float("nan")}, ": expected the run's records as JSON, found NaN, which JSON does "
         "not have"),
        (("stages", 0, "tests", 0, "message"), "a\ud800b", "(stages[0].tests[0].message): expected a text without "
         "a lone UTF-16 surrogate (JSON can write \\ud800; no UTF-8 file or database holds it), found 'a\\ud800b'"),
        (("run", "details"), {"note": ["\udfff"]}, "(run.details.note[0]): expected a text without a lone UTF-16 "
         "surrogate (JSON can write \\ud800; no UTF-8 file or database holds it), found '\\udfff'"),
        (("run", "details"), {"\udfff": 1}, "(run.details): expected a text without a lone UTF-16 surrogate (JSON "
         "can write \\ud800; no UTF-8 file or database holds it), found the key '\\udfff'"),
    ],
    ids=["count-past-an-sql-integer",
         "started-at-nan-text", "started-at-huge", "interrupted-edited-to-passed", "failed-stage-edited-to-passed",
         "stage-of-another-run", "duration-a-list", "unknown-outcome", "details-nan", "surrogate-in-a-text",
         "surrogate-in-details", "surrogate-in-a-key"],
)  # fmt: skip
def test_a_bad_record_is_located_by_its_json_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], path: tuple[Any, ...], value: Any, message: str
) -> None:
    code, printed = import_and_read(tmp_path, as_text(mutate(BASE, path, "replace", value)), capsys)
    separator = " " if message.startswith("(") else ""
    assert (code, printed) == (1, f"error: {tmp_path / 'run' / 'unrecorded.json'}{separator}{message}\n")
    assert not (tmp_path / "h.sqlite").exists()


def test_a_run_left_running_imports_as_interrupted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = mutate(mutate(BASE, ("run", "state"), "replace", "running"), ("run", "finished_at"), "replace", None)
    code, printed = import_and_read(tmp_path, as_text(record), capsys)
    assert (code, printed.splitlines()[0]) == (
        0,
        f"recorded run 20261201-101010-abcd (interrupted, 2 stages, 4 tests) in {tmp_path / 'h.sqlite'}",
    )
