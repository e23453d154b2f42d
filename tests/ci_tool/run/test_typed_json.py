"""The Slurm hand-off as typed JSON: a real stage's plan and result survive the round trip; a file that is
not one (a test may write it) is one located error, and a report without its submission's token is refused.
Then the table's rules other readers rely on: defaults, partial reads, did-you-mean hints."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from ci_tool import typed_json
from ci_tool.errors import SlurmError
from ci_tool.outcomes import TestOutcome
from ci_tool.run.flaky import load_flaky_signatures
from ci_tool.run.invocation import RunSettings
from ci_tool.run.slurm_job import JobFiles, JobReport, JobSpec, new_token, read_report
from ci_tool.stages.priority import Priority, Ranked, Tier
from tests.helpers.failing_suite import planned

TOKEN = "a" * 32


def report_of(fixture_run: Any, *, token: str = TOKEN, job_id: str = "17") -> JobReport:
    """The report of the fixture run's CPU-Generic-1 (every kind of failure, a rerun, a crash, a hang)."""
    return JobReport(fixture_run.stage("CPU-Generic-1"), job_id, "n1", 1.5, 2.5, token)


def test_a_real_stage_result_comes_back_equal(fixture_run: Any) -> None:
    report = report_of(fixture_run)
    assert typed_json.load(typed_json.dump(report), JobReport, file="r.json", error=SlurmError) == report


def test_a_real_plan_and_its_settings_come_back_equal(suite: Path) -> None:
    plan = planned(suite, ("CPU-Generic-1",))[0].plan()
    settings = RunSettings(suite, suite / "out", "r1", flaky_signatures=load_flaky_signatures(), variables={"A": "1"})
    spec = JobSpec(plan, settings, JobFiles(suite / "out" / "slurm"), new_token())
    assert typed_json.load(typed_json.dump(spec), JobSpec, file="job.json", error=SlurmError) == spec


def test_a_plan_s_priority_comes_back_equal(suite: Path) -> None:
    """A Slurm job runs its stage's likeliest failures first too: the priority crosses the hand-off."""
    first = (Ranked("cases/case_basic.py::test_pass", Tier.FAILED), Ranked("cases/case_crash.py", Tier.TOUCHES))
    plan = replace(planned(suite, ("CPU-Generic-1",))[0].plan(), priority=Priority(first))
    spec = JobSpec(plan, RunSettings(suite, suite / "out", "r1"), JobFiles(suite / "out" / "slurm"), new_token())
    assert typed_json.load(typed_json.dump(spec), JobSpec, file="job.json", error=SlurmError).plan.priority == Priority(
        first
    )


def _report_json(fixture_run: Any) -> dict[str, Any]:
    return json.loads(typed_json.dump(report_of(fixture_run)))


def _set(data: dict[str, Any], path: tuple[str | int, ...], value: object) -> dict[str, Any]:
    target: Any = data
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return data


BAD = [
    ("bad state", ("result", "state"), "(result.state): expected one of passed, failed, unstable, interrupted, "
     "waiting, skipped, reused, found 'exploited'"),
    ("bad outcome", ("result", "tests", 0, "first", "outcome"), "(result.tests[0].first.outcome): expected one "
     "of passed, failed, error, skipped, found 'exploited'"),
    ("string for a number", ("started_at",), "(started_at): expected a number, found 'exploited'"),
    ("unknown key", ("result", "__reduce__"), "(result): expected only the keys of StageResult, found '__reduce__'"),
]


@pytest.mark.parametrize(("case", "path", "message"), BAD, ids=[row[0] for row in BAD])
def test_anything_but_a_job_report_is_one_located_error(
    fixture_run: Any, tmp_path: Path, case: str, path: tuple[str | int, ...], message: str
) -> None:
    data = _set(_report_json(fixture_run), path, "exploited")
    file = tmp_path / "17.result.json"
    text = json.dumps(data)
    file.write_text(text, encoding="utf-8")
    with pytest.raises(SlurmError) as raised:
        read_report(file, job_id=17, token=TOKEN)
    # the column of the value (of the object, for a key it should not hold): one line of JSON, so line 1
    column = text.index('"exploited"') + 1 if case != "unknown key" else text.index('{"', text.index('"result"')) + 1
    assert str(raised.value) == f"{file}:1:{column} {message}"


REFUSED = "expected the result of Slurm job 17 from its job program, found a result without its token Hint: something else wrote this file (a test of the stage?): the stage's results are not taken"  # noqa: E501


@pytest.mark.parametrize(
    ("token", "job_id"), [("b" * 32, "17"), (TOKEN, "18")], ids=["another token", "another job's report"]
)
def test_a_report_without_the_submissions_token_is_refused(
    fixture_run: Any, tmp_path: Path, token: str, job_id: str
) -> None:
    file = tmp_path / "17.result.json"
    file.write_text(typed_json.dump(report_of(fixture_run, token=token, job_id=job_id)), encoding="utf-8")
    with pytest.raises(SlurmError) as raised:
        read_report(file, job_id=17, token=TOKEN)
    assert str(raised.value) == f"{file}: {REFUSED}"


@pytest.mark.parametrize("text", ["[]", "not json", '"a string"', '{"job_id": "17"}'], ids=str)
def test_what_carries_no_token_is_refused_before_its_shape_is_read(tmp_path: Path, text: str) -> None:
    """The seal is checked first: a forged file is refused as such, whatever else it holds or lacks."""
    file = tmp_path / "17.result.json"
    file.write_text(text, encoding="utf-8")
    with pytest.raises(SlurmError) as raised:
        read_report(file, job_id=17, token=TOKEN)
    assert str(raised.value) == f"{file}: {REFUSED}"


def test_no_file_is_no_report(tmp_path: Path) -> None:
    assert read_report(tmp_path / "17.result.json", job_id=17, token=TOKEN) is None


@pytest.mark.parametrize("snapshot", [Path("/ci/perf-snapshot.json"), None], ids=["a-snapshot", "none"])
def test_the_settings_come_back_as_they_went(suite: Path, snapshot: Path | None) -> None:
    """A job's settings hold no history (only ci-tool writes it: the job's tests never get its location or
    password), only what the perf cases read of it."""
    settings = RunSettings(suite, suite / "out", "r1", perf_snapshot=snapshot)
    assert typed_json.load(typed_json.dump(settings), RunSettings, file="job.json", error=SlurmError) == settings
    assert "history" not in json.loads(typed_json.dump(settings))


def test_a_snapshot_that_is_no_path_is_a_located_error(suite: Path) -> None:
    data = json.loads(typed_json.dump(RunSettings(suite, suite / "out", "r1")))
    data["perf_snapshot"] = 7
    with pytest.raises(SlurmError, match=r"\(perf_snapshot\): expected a string or null, found 7"):
        typed_json.load(json.dumps(data), RunSettings, file="job.json", error=SlurmError)


# -- the table's rules for readers besides the hand-off -----------------------------------------------


@dataclass(frozen=True)
class _Inner:
    name: str
    state: TestOutcome = TestOutcome.PASSED  # a field with a default may be left out


@dataclass(frozen=True)
class _Outer:
    inner: _Inner
    count: int = 0


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"inner": {"name": "a"}}', _Outer(_Inner("a"))),
        ('{"inner": {"name": "a", "state": "failed"}, "count": 2}', _Outer(_Inner("a", TestOutcome.FAILED), 2)),
    ],
    ids=["defaults", "given"],
)
def test_a_field_with_a_default_may_be_left_out(text: str, value: _Outer) -> None:
    assert typed_json.load(text, _Outer, file="f.json", error=SlurmError) == value


def test_a_field_without_a_default_is_still_required() -> None:
    with pytest.raises(SlurmError) as raised:
        typed_json.load('{"inner": {"state": "failed"}}', _Outer, file="f.json", error=SlurmError)
    assert str(raised.value) == 'f.json:1:11 (inner): expected an object with name too (_Inner), found ["state"]'


def test_a_partial_read_passes_over_keys_no_class_declares_at_any_depth() -> None:
    text = '{"inner": {"name": "a", "later": 1}, "notes": []}'
    assert typed_json.load(text, _Outer, file="f.json", error=SlurmError, partial=True) == _Outer(_Inner("a"))
    with pytest.raises(SlurmError) as raised:
        typed_json.load(text, _Outer, file="f.json", error=SlurmError)
    assert str(raised.value) == "f.json:1:1: expected only the keys of _Outer, found 'notes'"


def test_a_key_close_to_a_field_gets_a_did_you_mean_hint() -> None:
    with pytest.raises(SlurmError) as raised:
        typed_json.load('{"inner": {"name": "a", "stat": "failed"}}', _Outer, file="f.json", error=SlurmError)
    assert str(raised.value) == (
        "f.json:1:11 (inner): expected only the keys of _Inner, found 'stat' Hint: did you mean 'state'?"
    )


def test_an_enum_word_close_to_a_value_gets_a_did_you_mean_hint() -> None:
    with pytest.raises(SlurmError) as raised:
        typed_json.load('{"inner": {"name": "a", "state": "faild"}}', _Outer, file="f.json", error=SlurmError)
    assert str(raised.value) == (
        "f.json:1:34 (inner.state): expected one of passed, failed, error, skipped, found 'faild' "
        "Hint: did you mean 'failed'?"
    )
