"""The touch-recording pytest plugin (run/touch_recorder.py), in a real pytest process: which test ran which unit,
the processes a test starts counted for it, and the record file a stage reads back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ci_tool.errors import HistoryError
from ci_tool.history.touch_table import read_touch_files
from ci_tool.run.touch_recorder import OPTION, PLUGIN

pytest.importorskip("coverage")

FILES = {
    "pkg/__init__.py": "",
    "pkg/calc.py": (
        "SCALE = 2\n\n\ndef double(x):\n    return SCALE * x\n\n\n"
        "class Acc:\n    def add(self, x):\n        return x + 1\n\n\ndef triple(x):\n    return 3 * x\n\n\n"
        "def unused():\n    return 0\n"
    ),
    "tests/test_calc.py": (
        "import subprocess\nimport sys\n\nfrom pkg.calc import Acc, double\n\n\n"
        "def test_double():\n    assert double(2) == 4\n\n\n"
        "def test_add_in_a_child():\n"
        "    code = 'from pkg.calc import Acc; print(Acc().add(1))'\n"
        "    done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True)\n"
        "    assert (done.stdout, done.stderr) == ('2\\n', '')\n"
    ),
    "tests/test_fixture.py": (
        "import pytest\n\nfrom pkg.calc import triple\n\n\n"
        "@pytest.fixture(scope='module')\ndef made():\n    return triple(1)\n\n\n"
        "def test_first(made):\n    assert made == 3\n\n\n"
        "def test_second(made):\n    assert made == 3\n\n\n"
        "def test_alone():\n    assert True\n"
    ),
    # a timed test runs unmeasured; the module fixture first set up inside it leaves test_after unmeasured too
    "tests/test_timed.py": (
        "import pytest\n\nfrom pkg.calc import Acc, triple\n\n\n"
        "@pytest.fixture(scope='module')\ndef made():\n    return Acc().add(1)\n\n\n"
        "@pytest.mark.timed\ndef test_timed(made):\n    assert triple(2) == 6\n\n\n"
        "def test_after(made):\n    assert made == 2\n"
    ),
}


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The record of one real pytest run of FILES."""
    root = tmp_path_factory.mktemp("project")
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    environment = {key: value for key, value in os.environ.items() if not key.startswith("COVERAGE_")}
    target = root / "out" / "p01.touches.json"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", PLUGIN, f"{OPTION}={target}", "-p", "no:cacheprovider",
         "--rootdir", str(root), "tests"],
        cwd=root, capture_output=True, text=True, env=environment, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return {"json": json.loads(target.read_text()), "folder": sorted(p.name for p in target.parent.iterdir())}


UNITS = {
    # collecting imported it (outside any test); so did the child, inside the test that started it
    "module": ("<module>", ["<outside tests>", "tests/test_calc.py::test_add_in_a_child"]),
    "in-process": ("double", ["tests/test_calc.py::test_double"]),
    "in-a-child": ("Acc.add", ["tests/test_calc.py::test_add_in_a_child"]),
    # run once, in the set-up of the module fixture both tests use (test_alone does not)
    "module-fixture": ("triple", ["tests/test_fixture.py::test_first", "tests/test_fixture.py::test_second"]),
    "never-run": ("unused", []),
}


@pytest.mark.parametrize(("unit", "tests"), list(UNITS.values()), ids=list(UNITS))
def test_a_test_is_recorded_in_the_units_it_ran(record: dict[str, object], unit: str, tests: list[str]) -> None:
    data = record["json"]
    assert isinstance(data, dict)
    assert [data["tests"][i] for i in data["files"]["pkg/calc.py"].get(unit, [])] == tests


def test_a_timed_test_and_the_users_of_what_it_set_up_are_recorded_as_unmeasured(record: dict[str, object]) -> None:
    data = record["json"]
    assert isinstance(data, dict)
    timed = data["files"]["tests/test_timed.py"]
    unmeasured = ["tests/test_timed.py::test_after", "tests/test_timed.py::test_timed"]
    assert [data["tests"][i] for i in timed["<unmeasured>"]] == unmeasured
    assert all(test not in unmeasured for unit in ("triple", "Acc.add") for test in units_of(data, unit))


def units_of(data: dict[str, object], unit: str) -> list[str]:
    tests, files = data["tests"], data["files"]
    assert isinstance(tests, list) and isinstance(files, dict)
    return [tests[i] for i in files["pkg/calc.py"].get(unit, [])]


def test_the_childrens_data_is_gone_once_merged(record: dict[str, object]) -> None:
    assert record["folder"] == ["p01.touches.json"]


def test_a_stage_reads_its_records_back_per_file_and_unit(tmp_path: Path) -> None:
    first, second = tmp_path / "p01.touches.json", tmp_path / "p02.touches.json"
    first.write_text(json.dumps({"tests": ["t1", "t2"], "files": {"a.py": {"f": [0, 1]}}}))
    second.write_text(json.dumps({"tests": ["t3"], "files": {"a.py": {"f": [0], "g": [0]}}}))
    assert read_touch_files([first, second]) == {
        ("a.py", "f"): frozenset({"t1", "t2", "t3"}),
        ("a.py", "g"): frozenset({"t3"}),
    }


def test_a_record_file_of_another_shape_is_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / "p01.touches.json"
    path.write_text(json.dumps({"a.py": ["t1"]}))
    with pytest.raises(HistoryError) as error:
        read_touch_files([path])
    assert str(error.value) == (
        f'{path}: expected a JSON object {{"tests": [test id, ...], "files": {{file: {{unit: [test index, ...]}}}}}}, '
        "found an object with keys ['a.py'] Hint: the touch-recording plugin (ci_tool.run.touch_recorder) writes it; "
        "run the stage again"
    )
