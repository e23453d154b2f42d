"""`ci-tool stages list`, `ci-tool stage show|select` and `ci-tool testdb check --catalog` through the real
entry point, on the small catalog beside this file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tool.cli import main
from tests.ci_tool.change.checkout import pull_request_checkout

HERE = Path(__file__).parent / "catalog"
CATALOG = ("--catalog", str(HERE / "stages.yml"), "--test-db", str(HERE / "test-db"))


@pytest.fixture(autouse=True)
def own_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A history of the test's own: the checkout's .ci-tool/history.sqlite would lend these commands its passed
    stages (reuse) and failures (order): in a `ci-tool run` of this repository, the stages before this one."""
    monkeypatch.setenv("CI_TOOL_HISTORY", str(tmp_path / "own-history.sqlite"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


LIST = """\
STAGE                          PLATFORM     CONTEXT  SHARD  GPUS  MODE        MERGE  TIMEOUT
CPU-Generic-1                  cpu          l0_x     1/1    0     functional  pre    70 min (derived)
A10-PyTorch-1                  a10          l0_x     1/2    1     functional  pre    40 min (derived)
A10-PyTorch-2                  a10          l0_x     2/2    1     functional  pre    40 min (derived)
DGX_H100-4_GPUs-PyTorch-1      dgx-h100-x4  l0_x     1/1    4     functional  pre    70 min (derived)
DGX_H200-PyTorch-Perf-1        dgx-h200     l0_x     1/1    1     perf        pre    60 min
DGX_H200-PyTorch-Post-Merge-1  dgx-h200     l0_x     1/1    1     functional  post   30 min (derived)
"""


def test_stages_list_prints_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "stages", "list", *CATALOG) == (0, LIST, "")


@pytest.mark.parametrize(
    ("filters", "names"),
    [
        (
            (),
            [
                "CPU-Generic-1",
                "A10-PyTorch-1",
                "A10-PyTorch-2",
                "DGX_H100-4_GPUs-PyTorch-1",
                "DGX_H200-PyTorch-Perf-1",
                "DGX_H200-PyTorch-Post-Merge-1",
            ],
        ),
        (("--mode", "perf"), ["DGX_H200-PyTorch-Perf-1"]),
        (("--gpu", "DGX_H200"), ["DGX_H200-PyTorch-Perf-1", "DGX_H200-PyTorch-Post-Merge-1"]),
        (("--gpu", "A10", "--gpu", "CPU"), ["CPU-Generic-1", "A10-PyTorch-1", "A10-PyTorch-2"]),
        (("--gpu", "H200"), []),  # exact tokens, as --gpu-type
    ],
    ids=["all", "mode", "gpu", "two gpus", "exact"],
)
def test_stages_list_json_filters(
    capsys: pytest.CaptureFixture[str], filters: tuple[str, ...], names: list[str]
) -> None:
    code, out, _ = run(capsys, "stages", "list", "--json", *filters, *CATALOG)
    stages = json.loads(out)
    assert (code, [stage["name"] for stage in stages]) == (0, names)
    keys = {"name", "platform", "context", "shard", "splits", "gpu_count", "node_count", "mode", "post_merge"}
    assert {stage["name"]: sorted(keys - set(stage)) for stage in stages} == {name: [] for name in names}


def test_stages_list_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "stages", "list", "--mode", "fast", *CATALOG)
    assert code == 2 and "'fast' is not one of 'functional', 'perf', 'perf_sanity'" in err


def test_stages_list_reports_a_bad_catalog(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    catalog = tmp_path / "stages.yml"
    catalog.write_text("version: 1\nfamilies:\n- {name: A10-PyTorch, platform: a10, context: l0_y, splits: 1}\n")
    code, out, err = run(capsys, "stages", "list", "--catalog", str(catalog), "--test-db", str(HERE / "test-db"))
    assert (code, out) == (1, "")
    assert err == (
        f"error: {catalog}:3:47 (families[0].context): expected a context defined in the test-db, found no "
        "context 'l0_y' Hint: did you mean 'l0_x'?\n"
    )


SHOW_HEAD = """\
A10-PyTorch-2: shard 2 of 2, on a10 (x86_64), mode functional, timeout 40 min (derived: 2 x the slowest \
shard's predicted 20.0 min, rounded up to 5)
facts: the stage name's only (conditions on machine facts match); --system-info FILE renders for a machine
query:
  stage=pre_merge backend=pytorch orchestrator=mpi auto_trigger=others system_gpu_count=1 gpu=A10
rendered l0_x: 3 line(s)
  tests/a_test.py
  tests/b_test.py ISOLATION
  tests/c_test.py
this stage runs 2 line(s), predicted 15.0 min (900 s)
  tests/b_test.py ISOLATION
  tests/c_test.py
order: the list's order (no test of it failed in 7 days, is a changed test file or touches the change)
pytest (2 process(es), from the repository root; <run-id> is chosen when the run starts):
"""


def test_stage_show_prints_query_render_shard_and_commands(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "stage", "show", "A10-PyTorch-2", *CATALOG)
    assert (code, err) == (0, "")
    assert out.startswith(SHOW_HEAD)
    main_command, isolated_command = out.removeprefix(SHOW_HEAD).splitlines()
    assert "stageName=A10-PyTorch-2" in main_command and "-m pytest" in main_command
    assert f"'--test-list={Path.cwd() / '.ci-tool/runs/<run-id>/A10-PyTorch-2/lists/main.txt'}'" in main_command
    assert "/A10-PyTorch-2/lists/isolated-1.txt" in isolated_command
    assert f"--waives-file={(HERE / 'test-db' / 'waives.txt').resolve()}" in main_command


def test_stage_show_with_a_history_it_cannot_read_shows_the_lists_order_and_warns(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    damaged = tmp_path / "history.sqlite"
    damaged.write_text("not a database")
    code, out, err = run(capsys, "stage", "show", "A10-PyTorch-2", "--history", str(damaged), *CATALOG)
    assert (code, out.startswith(SHOW_HEAD)) == (0, True)
    assert err == (
        f"warning: the order shown is the list's, the history could not be read: {damaged}: expected a SQLite "
        "history file, found a file that is not a SQLite database Hint: pass the history file ci-tool writes "
        "(--history PATH); this one is left as it is\n"
    )
    assert damaged.read_text() == "not a database"


def test_stage_show_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "stage", "show", "DGX_H200-PyTorch-Perf-1", "--json", *CATALOG)
    shown = json.loads(out)
    assert code == 0
    assert {key: shown[key] for key in ("name", "mode", "sharded", "lines", "predicted_minutes", "pytest_args")} == {
        "name": "DGX_H200-PyTorch-Perf-1",
        "mode": "perf",
        "sharded": False,
        "lines": ["tests/a_test.py", "tests/b_test.py ISOLATION", "tests/c_test.py", "tests/perf"],
        "predicted_minutes": 45.0,  # tests/perf has no recorded duration: the median of tests/ (600 s)
        "pytest_args": ["--perf", "--perf-log-formats", "csv", "--perf-log-formats", "yaml"],
    }
    (command,) = shown["commands"]  # perf mode: one process, no ISOLATION handling
    assert command[-5:] == shown["pytest_args"]
    assert shown["query"] == {
        "stage": "pre_merge",
        "backend": "pytorch",
        "orchestrator": "mpi",
        "auto_trigger": "others",
        "system_gpu_count": "1",
        "gpu": "DGX_H200",
    }


def test_stage_show_merges_sysinfo(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    facts = tmp_path / "sysinfo.json"
    facts.write_text(json.dumps({"gpu": "NVIDIA H200", "system_gpu_count": 8, "supports_fp8": True}))
    code, out, _ = run(capsys, "stage", "show", "A10-PyTorch-1", "--system-info", str(facts), "--json", *CATALOG)
    query = json.loads(out)["query"]
    assert (code, query["supports_fp8"], query["gpu"], query["system_gpu_count"]) == (0, "true", "NVIDIA H200", "1")


def test_stage_show_unknown_stage_names_the_closest(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "stage", "show", "A10-Pytorch-1", *CATALOG) == (
        1,
        "",
        f"error: {HERE / 'stages.yml'}: expected a stage of the catalog, found no stage 'A10-Pytorch-1' "
        "Hint: did you mean 'A10-PyTorch-1' or 'A10-PyTorch-2'?\n",
    )


@pytest.mark.parametrize(
    ("request_json", "labels", "code", "stages", "missing", "custom"),
    [
        (
            {"command": "run", "flags": {}},
            (),
            0,
            ["CPU-Generic-1", "A10-PyTorch-1", "A10-PyTorch-2", "DGX_H200-PyTorch-Perf-1"],
            [],
            False,
        ),
        (
            {"command": "run", "flags": {"stage_list": ["DGX_H100-*", "DGX_H200-PyTorch-Perf-*"]}},  # DGX_* would
            (),  # select the catalog's one Post-Merge stage too: as broad as *Post-Merge*
            0,
            ["DGX_H200-PyTorch-Perf-1"],  # the multi-GPU one is blocked
            ["ci: full pre-merge approved"],
            True,
        ),
        (
            {"command": "run", "flags": {"add_multi_gpu_test": True}},
            ("ci: full pre-merge approved",),
            0,
            ["CPU-Generic-1", "A10-PyTorch-1", "A10-PyTorch-2", "DGX_H100-4_GPUs-PyTorch-1", "DGX_H200-PyTorch-Perf-1"],
            [],
            False,
        ),
        ({"command": "run", "flags": {"stage_list": ["A10-PyTorch-1", "A30-*"]}}, (), 1, ["A10-PyTorch-1"], [], True),
    ],
    ids=["default", "glob", "labelled", "unknown"],
)
def test_stage_select_json(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    request_json: dict[str, object],
    labels: tuple[str, ...],
    code: int,
    stages: list[str],
    missing: list[str],
    custom: bool,
) -> None:
    request = tmp_path / "request.json"
    request.write_text(json.dumps(request_json))
    label_args = [arg for label in labels for arg in ("--label", label)]
    got, out, err = run(capsys, "stage", "select", "--request", str(request), "--json", *label_args, *CATALOG)
    selection = json.loads(out)
    assert (got, selection["stages"], [m["label"] for m in selection["missing_approvals"]]) == (code, stages, missing)
    assert (selection["custom_run"], selection["merge_gate"]) == (custom, not custom and not missing)
    assert err == "".join(f"error: {error}\n" for error in selection["errors"])


def test_stage_select_reads_the_change_from_git(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    request = tmp_path / "request.json"
    request.write_text('{"command": "run", "flags": {}}')
    changed = {"src/dist/group.py": "x = 1\n", "README.md": "# changed\n"}
    monkeypatch.chdir(pull_request_checkout(tmp_path / "checkout", changed))
    code, out, _ = run(capsys, "stage", "select", "--request", str(request), "--base", "main", "--head", "pr", *CATALOG)
    assert code == 0
    assert "+ DGX_H100-4_GPUs-PyTorch-1  (step 2: src/dist/group.py changed (multi-GPU path 'src/dist/'))" in out
    assert "- DGX_H200-PyTorch-Post-Merge-1  (step 1: Post-Merge stage: not in the pre-merge set)" in out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1]", "error: {path}: expected an object with command, flags, run_mode, found [1]\n"),
        (
            '{"command": "run", "flags": {"stage-list": ["x"]}}',
            "error: {path} (flags.stage-list): expected a flag of /bot run, found 'stage-list' "
            "Hint: did you mean 'stage_list'?\n",
        ),
        (
            '{"command": "run", "flags": {"post_merge": "yes"}}',
            "error: {path} (flags.post_merge): expected true, found 'yes'\n",
        ),
        (
            "{",
            "error: {path}:1:2: expected JSON, found a syntax error: Expecting property name enclosed in double "
            "quotes\n",
        ),
        (
            '{"command": ' + "[" * 5000,
            "error: {path}:1:76: expected JSON nested at most 64 deep, found deeper nesting\n",
        ),
        (
            '{"command": "run", "flags": {"reuse_test": "\u00b2"}}',
            "error: {path} (flags.reuse_test): expected true, a pipeline id (digits) or a run id "
            "(20261130-054838-3f2a), found '\u00b2'\n",
        ),
    ],
    ids=["not an object", "unknown flag", "bad value", "bad json", "nested thousands deep", "superscript id"],
)
def test_stage_select_rejects_a_bad_request(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, message: str
) -> None:
    request = tmp_path / "request.json"
    request.write_text(text)
    assert run(capsys, "stage", "select", "--request", str(request), *CATALOG) == (1, "", message.format(path=request))


def test_testdb_check_reports_unreachable_blocks_and_empty_families(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "test-db"
    db.mkdir()
    (db / "l0_x.yml").write_text(
        "version: 0.0.1\n"
        "l0_x:\n"
        "- condition: {terms: {stage: pre_merge}}\n"
        "  tests: [t/a.py]\n"
        "- condition: {terms: {stage: post_merge, backend: autodeploy}}\n"
        "  tests: [t/ad.py]\n"
        "l0_gb200:\n"
        "- tests: [t/gb.py]\n"
        "l0_h200:\n"
        "- condition: {wildcards: {gpu: '*h200*'}}\n"
        "  tests: [t/h.py]\n"
    )
    catalog = tmp_path / "stages.yml"
    catalog.write_text(
        "version: 1\nfamilies:\n"
        "- {name: A10-PyTorch, platform: a10, context: l0_x, splits: 1}\n"
        "- {name: A10-AutoDeploy, platform: a10, context: l0_x, splits: 1}\n"
        "- {name: A10-PyTorch-Post-Merge, platform: a10, context: l0_h200, splits: 1}\n"
    )
    code, out, err = run(capsys, "testdb", "check", "--test-db", str(db), "--catalog", str(catalog))
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"error: {catalog}:5:10 (families[2]): expected family 'A10-PyTorch-Post-Merge' to render at least one "
        "test from context 'l0_h200', found none for stage=post_merge, backend=pytorch, orchestrator=mpi, "
        "auto_trigger=others, system_gpu_count=1, gpu=A10 Hint: add a block for it to the context, or point the "
        "family at another context",
        f"error: {db / 'l0_x.yml'}:5:3 (l0_x[1]): expected a stage of {catalog} to render this block, found none of "
        "the stages on 'l0_x' matching its condition (A10-PyTorch, A10-AutoDeploy) Hint: its tests never run: add "
        "a family whose name matches the condition, or fix the condition",
        f"error: {db / 'l0_x.yml'}:8:1 (l0_gb200): expected a stage of {catalog} to render context 'l0_gb200', "
        "found none Hint: add a family with `context: l0_gb200`, or delete the context",
        f"error: {db / 'l0_x.yml'}:10:3 (l0_h200[0]): expected a stage of {catalog} to render this block, found "
        "none of the stages on 'l0_h200' matching its condition (A10-PyTorch-Post-Merge) Hint: its tests never "
        "run: add a family whose name matches the condition, or fix the condition",
        "test-db check failed: 4 problem(s) in 3 contexts, 4 test lines, 0 waives",
    ]


def test_testdb_check_reports_a_catalog_that_does_not_load(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    catalog = tmp_path / "stages.yml"
    catalog.write_text("version: 1\nfamilies: []\n")
    code, _, err = run(capsys, "testdb", "check", "--test-db", str(HERE / "test-db"), "--catalog", str(catalog))
    assert code == 1
    assert (
        err.splitlines()[0]
        == f"error: {catalog}:2:11 (families): expected a non-empty list of families, found an empty list"
    )


def test_testdb_check_passes_with_the_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "testdb", "check", *CATALOG)
    assert (code, out) == (0, "test-db OK: 1 contexts, 5 test lines, 1 waives\n")


BROKEN = """\
version: 1
families:
- {name: A10-PyTorch, platform: a10, context: l0_x, splits: 1, gpus: 1}
- {name: CPU-Generic, platform: cpu, context: l0_nowhere, splits: 1}
- {name: DGX_H100-PyTorch, platform: cpu, context: l0_x, splits: 1}
"""


@pytest.mark.parametrize(
    "verb", [("stages", "list"), ("generate", "--check"), ("stage", "show", "A10-PyTorch-1")], ids=" ".join
)
def test_every_verb_that_loads_a_catalog_lists_all_its_problems(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, verb: tuple[str, ...]
) -> None:
    (tmp_path / "stages.yml").write_text(BROKEN)
    code, _, err = run(capsys, *verb, "--catalog", str(tmp_path / "stages.yml"), "--test-db", str(HERE / "test-db"))
    lines = err.splitlines()
    assert (code, lines[0]) == (1, f"error: {tmp_path}/stages.yml: 3 problems, each on a line below")
    assert [line.split(": ", 1)[0] for line in lines[1:]] == [
        f"  {tmp_path}/stages.yml:3:64 (families[0].gpus)",
        f"  {tmp_path}/stages.yml:4:47 (families[1].context)",
        f"  {tmp_path}/stages.yml:5:38 (families[2].platform)",
    ]


def test_testdb_check_counts_each_catalog_problem(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "stages.yml").write_text(BROKEN)
    code, _, err = run(capsys, "testdb", "check", "--test-db", str(HERE / "test-db"),
                       "--catalog", str(tmp_path / "stages.yml"))  # fmt: skip
    assert code == 1
    assert sum(f"{tmp_path}/stages.yml:" in line for line in err.splitlines()) == 3
