"""`ci-tool testdb render|check` and `ci-tool sysinfo` through the real entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tool import sysinfo
from ci_tool.cli import main

LIST = """\
version: 0.0.1
l0_x:
- condition:
    ranges: {system_gpu_count: {gte: 1, lte: 1}}
    wildcards: {gpu: '*a10*'}
    terms: {stage: pre_merge}
  tests:
  - a.py::t TIMEOUT (90)
  - b.py ISOLATION
- condition: {ranges: {system_gpu_count: {gte: 0, lte: 0}}}
  tests: [cpu.py]
"""


@pytest.fixture
def test_db(tmp_path: Path) -> Path:
    folder = tmp_path / "test-db"
    folder.mkdir()
    (folder / "l0_x.yml").write_text(LIST)
    return folder


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_render_with_match_prints_the_lines_with_annotations(test_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    query = '{"gpu": "A10", "system_gpu_count": 1, "stage": "pre_merge"}'
    code, out, err = run(capsys, "testdb", "render", "--context", "l0_x", "--match", query, "--test-db", str(test_db))
    assert (code, out, err) == (0, "a.py::t TIMEOUT (90)\nb.py ISOLATION\n", "")


def test_render_from_a_system_info_file_to_an_output_file(
    test_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    info = tmp_path / "sysinfo.json"
    info.write_text(json.dumps({"gpu": None, "system_gpu_count": 0}))
    output = tmp_path / "list.txt"
    code, out, _ = run(
        capsys,
        "testdb",
        "render",
        "--context",
        "l0_x",
        "--system-info",
        str(info),
        "--test-db",
        str(test_db),
        "--output",
        str(output),
    )
    assert (code, out, output.read_text()) == (0, "", "cpu.py\n")


# A context that renders on every machine: one line by GPU count, one for any machine.
PROBE_LIST = """\
version: 0.0.1
l0_probe:
- condition: {ranges: {system_gpu_count: {gte: 0, lte: 0}}}
  tests: [no_gpu.py]
- condition: {ranges: {system_gpu_count: {gte: 1}}}
  tests: [gpu.py]
- condition: {}
  tests: [any_machine.py]
"""


def test_render_with_probe_renders_what_this_machines_facts_select(
    test_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--probe renders what a system-info file holding this machine's probe renders, whatever the machine."""
    (test_db / "l0_probe.yml").write_text(PROBE_LIST)
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(sysinfo.probe()))
    render = ("testdb", "render", "--context", "l0_probe", "--test-db", str(test_db))
    expected = run(capsys, *render, "--system-info", str(facts))
    assert run(capsys, *render, "--probe") == expected
    assert (expected[0], expected[1].splitlines()[-1]) == (0, "any_machine.py")


def test_an_empty_render_is_an_error_that_prints_the_query(test_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "testdb", "render", "--context", "l0_x", "--match", '{"system_gpu_count": 8}', "--test-db", str(test_db)
    )
    assert (code, out) == (1, "")
    assert err.startswith("error: ") and "for query {system_gpu_count='8'}" in err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "expected exactly one of --match, --system-info, --probe; found none"),
        (
            ["--probe", "--match", "{}"],
            "expected exactly one of --match, --system-info, --probe; found --match and --probe",
        ),
    ],
    ids=["no source", "two sources"],
)
def test_query_source_usage_errors_exit_2(
    argv: list[str], message: str, test_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "testdb", "render", "--context", "l0_x", "--test-db", str(test_db), *argv)
    assert code == 2
    assert f"Error: {message}" in err


@pytest.mark.parametrize(
    ("match", "message"),
    [
        (
            '{"gpu": "A10"',
            "error: --match:1:14: expected JSON, found a syntax error: Expecting ',' "
            'delimiter Hint: quote the JSON for your shell: --match \'{"gpu": "A10"}\'\n',
        ),
        ('["A10"]', "error: --match: expected a JSON object, found list\n"),
    ],
    ids=["bad json", "not an object"],
)
def test_bad_match_json_is_a_one_line_error(
    match: str, message: str, test_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "testdb", "render", "--context", "l0_x", "--match", match, "--test-db", str(test_db))
    assert (code, err) == (1, message)


def test_a_bad_test_db_is_a_one_line_error_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "l0_x.yml").write_text("version: 0.0.1\nl0_x:\n- condition: {wildcard: {gpu: a10}}\n  tests: [a.py]\n")
    code, _, err = run(capsys, "testdb", "render", "--context", "l0_x", "--match", "{}", "--test-db", str(tmp_path))
    assert code == 1
    assert err == (
        f"error: {tmp_path}/l0_x.yml:3:15 (l0_x[0].condition.wildcard): expected one of terms, ranges, wildcards, "
        "found key 'wildcard' Hint: did you mean 'wildcards'?\n"
    )


def test_check_passes_on_a_clean_test_db(test_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (test_db / "waives.txt").write_text("a.py::t SKIP (https://bugs/1)\n")
    code, out, err = run(capsys, "testdb", "check", "--test-db", str(test_db))
    assert (code, out, err) == (0, "test-db OK: 1 contexts, 3 test lines, 1 waives\n", "")


def test_check_lists_every_problem(test_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (test_db / "l0_y.yml").write_text("version: 0.0.1\nl0_y:\n- tests: [c.py TIMEOUT (0), d.py, d.py]\n")
    (test_db / "waives.txt").write_text("gone.py SKIP (x)\nbroken\n")
    code, _, err = run(capsys, "testdb", "check", "--test-db", str(test_db))
    lines = err.splitlines()
    assert code == 1
    assert [line.split(": ", 2)[1] for line in lines[:-1]] == [
        f"{test_db}/l0_y.yml:3:11 (l0_y[0].tests[0])",
        f"{test_db}/l0_y.yml:3:35 (l0_y[0].tests[2])",
        f"{test_db}/waives.txt:1:1",
        f"{test_db}/waives.txt:2:1",
    ]
    assert lines[-1] == "test-db check failed: 4 problem(s) in 2 contexts, 5 test lines, 1 waives"


def test_sysinfo_json_reports_the_gpu_count(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "sysinfo", "--json")
    facts = json.loads(out)
    assert code == 0
    assert isinstance(facts["system_gpu_count"], int | str)
    assert {
        "gpu",
        "gpu_memory",
        "compute_capability",
        "supports_fp8",
        "supports_int8",
        "supports_tf32",
        "cpu",
        "linux_distribution_name",
        "linux_version",
        "host_mem_total_mib",
    } <= set(facts)


def test_an_unknown_verb_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "testbd")
    assert code == 2 and "No such command 'testbd'" in err


def test_match_json_nested_thousands_deep_is_a_one_line_error(
    test_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    match = '{"a":' * 5000
    code, _, err = run(capsys, "testdb", "render", "--context", "l0_x", "--match", match, "--test-db", str(test_db))
    assert (code, err) == (1, "error: --match:1:321: expected JSON nested at most 64 deep, found deeper nesting\n")


@pytest.mark.parametrize(
    ("options", "found"),
    [
        (("--today", "2027-01-31"), []),
        (("--today", "2027-02-01"), ["waives.txt:1:1: expected an unexpired waive"]),
        (("--today", "2027-01-01", "--require-links"), ["waives.txt:2:1: expected a waive reason with an issue link"]),
    ],
    ids=["on its last day", "the day after", "require links"],
)
def test_check_expired_and_unlinked_waives(
    test_db: Path, capsys: pytest.CaptureFixture[str], options: tuple[str, ...], found: list[str]
) -> None:
    (test_db / "waives.txt").write_text("a.py::t SKIP (https://bugs/1 until 2027-01-31)\ncpu.py SKIP (flaky)\n")
    code, _, err = run(capsys, "testdb", "check", "--test-db", str(test_db), *options)
    problems = [line.removeprefix(f"error: {test_db}/").split(", found")[0] for line in err.splitlines()[:-1]]
    assert (code, problems) == (1 if found else 0, found)
