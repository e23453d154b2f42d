"""`RUN_DIR/unrecorded.json`: a run's records kept in its folder when the history could not take them,
read back by `ci-tool history import RUN_DIR` through a typed loader.

The folder is written by the run's tests too (they get its path), so the file is input like any other:
every field is checked for its type and range as rows.py checks the history's columns, an unknown key
is an error, and each error names the JSON path (`run.started_at`, `stages[0].tests[3].outcome`).

What the file says of the outcome must agree with what it holds, since a state is a summary of the rest:

    a stage that did not run   (waiting, skipped, reused) holds no tests
    a passed or reused stage   holds no test whose final outcome is a failure
    the run's state            no better than its stages make it (interrupted > failed > pending >
                               unstable > passed, as the pipeline decides it): an interrupted run edited
                               to `passed` is refused, naming the stage that says otherwise
    a run still `running`      its ci-tool died before closing it: imported as interrupted

A file edited consistently throughout (every test, stage and the run made green) cannot be told from a
real one this way; a signature would need a key the tests cannot read, which this machine does not have.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ci_tool.errors import HistoryError, Where
from ci_tool.history.records import RunRecord, StageRecord, StageRecords, TestRecord
from ci_tool.history.rows import COUNT_EXPECTED, MAX_COUNT, MAX_SECONDS, MAX_TIMESTAMP
from ci_tool.json_file import has_lone_surrogate
from ci_tool.outcomes import RunState, StageState, TestOutcome

UNRECORDED = "unrecorded.json"
UNRECORDED_VERSION = 1
E = TypeVar("E", RunState, StageState, TestOutcome)
# How bad a run state is, worst first: the run is the worst of its stages (run/pipeline.PipelineResult.state).
_SEVERITY = (RunState.INTERRUPTED, RunState.FAILED, RunState.PENDING, RunState.UNSTABLE, RunState.PASSED)
_RUN_STATE_OF_STAGE = {
    StageState.INTERRUPTED: RunState.INTERRUPTED,
    StageState.FAILED: RunState.FAILED,
    StageState.WAITING: RunState.PENDING,
    StageState.UNSTABLE: RunState.UNSTABLE,
}


def unrecorded_json(run: RunRecord, stages: Sequence[StageRecords]) -> str:
    """The text of `unrecorded.json`."""
    data = {
        "version": UNRECORDED_VERSION,
        "run": dataclasses.asdict(run),
        "stages": [
            {"stage": dataclasses.asdict(stage), "tests": [dataclasses.asdict(t) for t in tests], "recorded_at": at}
            for stage, tests, at in stages
        ],
    }
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


@dataclass(frozen=True)
class _At:
    """A JSON value and its path in the file, with one check per kind of field."""

    file: str
    path: str
    value: Any

    def error(self, expected: str) -> HistoryError:
        return self.found(expected, _shown(self.value))

    def found(self, expected: str, shown: str) -> HistoryError:
        return HistoryError(f"expected {expected}, found {shown}", where=Where(self.file, yaml_path=self.path or None))

    def fields(self, names: Sequence[str], *, optional: Sequence[str] = ()) -> dict[str, _At]:
        """An object with exactly `names` (and any of `optional`): its values by key."""
        if not isinstance(self.value, dict):
            raise self.error("a JSON object")
        for key in self.value:
            if key not in names and key not in optional:
                known = ", ".join(sorted([*names, *optional]))
                raise _At(self.file, self.path, key).error(f"one of the keys {known}")
        for key in names:
            if key not in self.value:
                raise self.found(f"the key {key!r}", "an object without it")
        return {key: _At(self.file, f"{self.path}.{key}" if self.path else key, v) for key, v in self.value.items()}

    def items(self) -> list[_At]:
        if not isinstance(self.value, list):
            raise self.error("a JSON list")
        return [_At(self.file, f"{self.path}[{index}]", v) for index, v in enumerate(self.value)]

    def text(self) -> str:
        if not isinstance(self.value, str):
            raise self.error("a text")
        return self.value

    def key_text(self) -> str:
        if not isinstance(self.value, str) or not self.value:
            raise self.error("a non-empty text")
        return self.value

    def optional_text(self) -> str | None:
        return None if self.value is None else self.text()

    def count(self) -> int:
        if not isinstance(self.value, int) or isinstance(self.value, bool) or not 0 <= self.value <= MAX_COUNT:
            raise self.error(COUNT_EXPECTED)
        return self.value

    def seconds(self) -> float:
        return self._within(MAX_SECONDS, "a finite number of seconds (a duration)")

    def timestamp(self) -> float:
        return self._within(MAX_TIMESTAMP, "a finite timestamp (seconds since the epoch)")

    def optional_timestamp(self) -> float | None:
        return None if self.value is None else self.timestamp()

    def _within(self, most: float, expected: str) -> float:
        number = self.value
        if not isinstance(number, int | float) or isinstance(number, bool) or not 0 <= number <= most:
            raise self.error(f"{expected} from 0 to {most:g}")
        return float(number)

    def vocabulary(self, kind: type[E]) -> E:
        if isinstance(self.value, str) and self.value in set(kind):
            return kind(self.value)
        raise self.error(f"a {kind.__name__} ({', '.join(kind)})")

    def optional_vocabulary(self, kind: type[E]) -> E | None:
        return None if self.value is None else self.vocabulary(kind)

    def details(self) -> dict[str, object]:
        """A JSON object of details, as the history stores it (finite numbers only: JSON has no NaN)."""
        if not isinstance(self.value, dict):
            raise self.error("a JSON object of details")
        try:
            text = json.dumps(self.value, sort_keys=True, allow_nan=False)
        except (ValueError, RecursionError):
            raise self.error("details of finite numbers (JSON has no NaN or Infinity)") from None
        stored: dict[str, object] = json.loads(text)
        return stored


def _shown(value: object) -> str:
    if isinstance(value, dict | list):
        return "a JSON object" if isinstance(value, dict) else "a JSON list"
    return repr(value) if not isinstance(value, str) or len(value) <= 80 else repr(value[:80]) + "..."


def load_unrecorded(run_dir: Path) -> tuple[RunRecord, list[StageRecords]]:
    """The run and stages of `RUN_DIR/unrecorded.json`, checked (see the module docstring)."""
    path = run_dir / UNRECORDED
    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except FileNotFoundError:
        raise HistoryError(
            "expected the records of a run the history could not take, found no such file",
            where=Where(str(path)),
            hint="a run writes it only when its history fails; `ci-tool history` lists the recorded runs",
        ) from None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise HistoryError(f"expected the run's records as JSON, found {error}", where=Where(str(path))) from None
    _refuse_lone_surrogates(_At(str(path), "", data))
    top = _At(str(path), "", data).fields(("version", "run", "stages"))
    if top["version"].value != UNRECORDED_VERSION or isinstance(top["version"].value, bool):
        raise top["version"].error(f"version {UNRECORDED_VERSION}")
    run = _run(top["run"])
    stages = [_stage(at, run.run_id) for at in top["stages"].items()]
    return _with_checked_state(run, stages, top), stages


def _refuse_lone_surrogates(at: _At) -> None:
    """The first text (or key) that holds a lone UTF-16 surrogate (`"\\ud800"`: JSON spells it, no UTF-8 file
    or database can hold it), refused at its JSON path; in the file's order."""
    pending = [at]
    while pending:
        item = pending.pop()
        if isinstance(item.value, str) and has_lone_surrogate(item.value):
            raise item.error(_UNICODE_TEXT)
        if isinstance(item.value, dict):
            for key in item.value:
                if isinstance(key, str) and has_lone_surrogate(key):
                    raise item.found(_UNICODE_TEXT, f"the key {key!r}")
            children = [_At(item.file, f"{item.path}.{key}" if item.path else key, v) for key, v in item.value.items()]
            pending += reversed(children)
        elif isinstance(item.value, list):
            pending += reversed(item.items())


_UNICODE_TEXT = "a text without a lone UTF-16 surrogate (JSON can write \\ud800; no UTF-8 file or database holds it)"


def _no_constant(name: str) -> None:
    raise ValueError(f"{name}, which JSON does not have")


_RUN_FIELDS = tuple(field.name for field in dataclasses.fields(RunRecord))
_STAGE_OPTIONAL = ("inputs",)  # a file written before stages had it: '' (never reused)
_STAGE_FIELDS = tuple(f.name for f in dataclasses.fields(StageRecord) if f.name not in _STAGE_OPTIONAL)
_TEST_FIELDS = tuple(field.name for field in dataclasses.fields(TestRecord))


def _run(at: _At) -> RunRecord:
    f = at.fields(_RUN_FIELDS)
    return RunRecord(
        f["run_id"].key_text(), f["command"].text(), f["state"].vocabulary(RunState), f["started_at"].timestamp(),
        f["finished_at"].optional_timestamp(), f["host"].text(), f["details"].details(), f["code_commit"].text(),
        f["code_diff"].text(), f["scope"].text(),
    )  # fmt: skip


def _stage(at: _At, run_id: str) -> StageRecords:
    f = at.fields(("stage", "tests", "recorded_at"))
    s = f["stage"].fields(_STAGE_FIELDS, optional=_STAGE_OPTIONAL)
    if s["run_id"].value != run_id:
        raise s["run_id"].error(f"the run's id {run_id!r}")
    stage = StageRecord(
        run_id=run_id, name=s["name"].key_text(), state=s["state"].vocabulary(StageState), reason=s["reason"].text(),
        started_at=s["started_at"].optional_timestamp(), duration_seconds=s["duration_seconds"].seconds(),
        passed=s["passed"].count(), failed=s["failed"].count(), skipped=s["skipped"].count(),
        results_dir=s["results_dir"].text(), details=s["details"].details(),
        inputs=s["inputs"].text() if "inputs" in s else "",
    )  # fmt: skip
    tests = [_test(t) for t in f["tests"].items()]
    if not stage.state.ran and tests:
        raise s["state"].error(f"a stage that ran ({len(tests)} tests are recorded)")
    failed = next((t.test_id for t in tests if t.final_outcome.is_failure), None)
    if failed is not None and stage.state in (StageState.PASSED, StageState.REUSED):
        raise s["state"].error(f"failed, unstable or interrupted (its test {failed!r} failed)")
    return stage, tests, f["recorded_at"].timestamp()


def _test(at: _At) -> TestRecord:
    f = at.fields(_TEST_FIELDS)
    return TestRecord(
        f["test_id"].key_text(), f["outcome"].vocabulary(TestOutcome), f["duration_seconds"].seconds(),
        f["rerun_outcome"].optional_vocabulary(TestOutcome), f["waive_reason"].optional_text(), f["kind"].text(),
        f["message"].text(), f["signature"].text(), f["output_head"].text(),
    )  # fmt: skip


def _with_checked_state(run: RunRecord, stages: Sequence[StageRecords], top: Mapping[str, _At]) -> RunRecord:
    """The run, its state checked against its stages; a run left `running` is interrupted."""
    worst, because = RunState.PASSED, ""
    for stage, _, _ in stages:
        state = _RUN_STATE_OF_STAGE.get(stage.state, RunState.PASSED)
        if _SEVERITY.index(state) < _SEVERITY.index(worst):
            worst, because = state, f"stage {stage.name!r} is {stage.state.value}"
    if run.state is RunState.RUNNING:
        last = max([run.started_at, *(at for _, _, at in stages)])
        return dataclasses.replace(run, state=RunState.INTERRUPTED, finished_at=run.finished_at or last)
    if _SEVERITY.index(run.state) > _SEVERITY.index(worst):
        state_at = _At(top["run"].file, "run.state", run.state.value)
        raise state_at.error(f"{', '.join(s.value for s in _SEVERITY[: _SEVERITY.index(worst) + 1])} ({because})")
    return run
