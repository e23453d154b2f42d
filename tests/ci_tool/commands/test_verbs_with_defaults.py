"""Every verb of `ci-tool --help`, recursively, run the way a user runs it: from a scratch clone of this
repository, its working directory there, with the defaults (relative paths, `.ci-tool/`, `test-db/`,
`jenkins/stages.yml`). Each ends with exit 0, or with its one-line error (exit 1, 2 for usage): never an
"unexpected error". The full `ci-tool run` is `.ci/run`'s job; here the run is narrowed to the non-test stages
(`--skip-test`), which still build and install the wheel as the main job does."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from ci_tool.cli import cli, main

REPOSITORY = Path(__file__).parents[3]
EVENT = "tests/ci_tool/bot/fixtures/event_bot_author.json"


@contextlib.contextmanager
def _working_directory(folder: Path) -> Iterator[None]:
    previous = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(previous)


def _scratch_checkout(target: Path) -> Path:
    """A clone of the repository's committed tree (a plain copy where it is no git checkout)."""
    if (REPOSITORY / ".git").exists():
        subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(REPOSITORY), str(target)], check=True)
    else:
        shutil.copytree(REPOSITORY, target, ignore=shutil.ignore_patterns(".venv", ".ci-tool", "__pycache__"))
    return target


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


def _ci_tool(capsys: pytest.CaptureFixture[str], *argv: str) -> Ran:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return Ran(code, out, err)


@dataclass(frozen=True)
class Checkout:
    root: Path
    skip_test_run: str  # what `ci-tool run '/bot run --skip-test'` printed there


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Checkout]:
    """One scratch clone for the module, with one recorded run of the non-test stages (so the history,
    report and site verbs have a run to read) and a request file for `stage select`."""
    root = _scratch_checkout(tmp_path_factory.mktemp("scratch") / "ci-tool")
    with _working_directory(root):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            main(["run", "/bot run --skip-test"])
        with contextlib.redirect_stdout(open("request.json", "w")):  # closed by the exit below
            assert main(["bot", "parse", "/bot run", "--json"]) == 0
        Path("bad-sysinfo.json").write_text('{"gpu": 5, "system_gpu_count": -1}')
        Path("cpu.txt").write_text("tests/ci_tool/test_layout.py\ntests/ci_tool/test_atomic.py\n")
        yield Checkout(root, printed.getvalue())


@pytest.fixture
def scratch(checkout: Checkout, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(checkout.root)
    return checkout.root


def _leaf_verbs() -> list[str]:
    """Every command of `ci-tool --help`, recursively, as `group verb`."""
    context = click.Context(cli)
    found: list[str] = []

    def walk(command: click.Command, path: list[str]) -> None:
        if isinstance(command, click.Group):
            if command.invoke_without_command:
                found.append(" ".join(path))
            for name in command.list_commands(context):
                sub = command.get_command(context, name)
                assert sub is not None
                walk(sub, [*path, name])
        else:
            found.append(" ".join(path))

    walk(cli, [])
    return found


# (argv, exit code, the error line's start when it exits non-zero)
VERBS: list[tuple[tuple[str, ...], int, str]] = [
    (("testdb", "check"), 0, ""),
    (("testdb", "check", "--collect"), 0, ""),
    (("testdb", "merge-waives", "--base", "HEAD"), 0, ""),
    (("testdb", "render", "--context", "l0_cpu", "--match", '{"stage": "pre_merge"}'), 0, ""),
    (("sysinfo",), 0, ""),
    (("bot", "handle", "--event", EVENT, "--dry-run"), 0, ""),
    (("bot", "help"), 0, ""),
    (("bot", "labels", "--event", EVENT, "--dry-run"), 1, "error: tests/ci_tool/bot/fixtures/event_bot_author.json: "),
    (("bot", "parse", "/bot run --disable-fail-fast"), 0, ""),
    (("bot", "plan", "/bot run"), 0, ""),
    (("stage", "parse", "DGX_B200-8_GPUs-PyTorch-PerfSanity-Post-Merge-3"), 0, ""),
    (("stage", "run", "CPU-Build_Docs"), 0, ""),
    (("stage", "lost", "--matrices", "[[]]", "--results", "results", "--fail-fast", "true"), 0, ""),
    (("stage", "select", "--request", "request.json"), 0, ""),
    (("stage", "show", "CPU-Generic-1"), 0, ""),
    (("stage", "show", "A10-PyTorch-1", "--system-info", "bad-sysinfo.json"), 1, "error: bad-sysinfo.json:1:9 (gpu)"),
    (("stages", "list"), 0, ""),
    (("stages", "import", "tests/ci_tool/stages/reference/test_stage_configs.json"), 0, ""),
    (("shard", "--durations", "test-db/.test_durations", "--splits", "2", "cpu.txt"), 0, ""),
    (("history",), 0, ""),
    (("history", "import", ".ci-tool"), 1, "error: "),
    (("flaky", "report"), 0, ""),
    (("waive", "propose"), 0, ""),
    (("waive", "verify", "tests/ci_tool/test_layout.py::test_x"), 1, "error: "),
    (("durations", "export"), 0, ""),
    (("report", "latest"), 0, ""),
    (("perf", "baseline", "diff", "--gpu", "H200"), 1, "error: "),
    (("perf", "baseline", "propose", "--gpu", "B200"), 1, "error: "),
    (("perf", "baseline", "set", "--gpu", "H200"), 1, "error: "),
    (("perf", "baseline", "show", "--gpu", "H200"), 0, ""),
    (("perf", "trend", "gpu-gemma_like-pool48g-b128_1k", "--gpu", "H200", "--png", "trend.png"), 1, "error: "),
    (("site", "--output", "site"), 0, ""),
    (("run", '/bot run --stage-list "CPU-Build_Docs"'), 0, ""),
    (("generate", "--check"), 0, ""),
    (("build", "--check"), 1, "error: ci-build/manifest.json: "),  # no build here yet: nothing to check
]


def test_the_table_holds_every_verb() -> None:
    covered = {" ".join(argv[: len(verb.split())]) for argv, _, _ in VERBS for verb in _leaf_verbs()}
    assert sorted(set(_leaf_verbs()) - covered) == []


@pytest.mark.parametrize(("argv", "code", "error"), VERBS, ids=[" ".join(argv[:3]) for argv, _, _ in VERBS])
def test_a_verb_with_its_defaults(
    scratch: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], code: int, error: str
) -> None:
    ran = _ci_tool(capsys, *argv)
    assert "unexpected" not in ran.err
    assert (ran.code, ran.err.splitlines()[-1][: len(error)] if code else "") == (code, error), ran.err
    if code:
        assert len([line for line in ran.err.splitlines() if line.startswith("error: ")]) == 1


def test_the_non_test_stages_pass_from_the_default_results_folder(checkout: Checkout) -> None:
    # The package-sanity stage builds the wheel in its folder under the relative `.ci-tool/runs/`.
    stages = [line for line in checkout.skip_test_run.splitlines() if line.startswith("CPU-") and " in " in line]
    assert [line.split(" in ")[0] for line in stages] == [
        "CPU-Build_Docs: passed",
        "CPU-PackageSanityCheck-PY311: passed",
    ], checkout.skip_test_run


def test_a_relative_output_dir_is_the_runs_only_folder(scratch: Path) -> None:
    """As the generated pipelines run a stage (`--output-dir results/<stage>`), in a process of its own."""
    runs_before = sorted((scratch / ".ci-tool" / "runs").iterdir())
    command = [sys.executable, "-m", "ci_tool", "stage", "run", "CPU-PackageSanityCheck-PY311"]
    ran = subprocess.run([*command, "--output-dir", "results/sanity"], capture_output=True, text=True, check=False)
    assert (ran.returncode, ran.stderr) == (0, ""), ran.stdout
    assert sorted((scratch / ".ci-tool" / "runs").iterdir()) == runs_before
    written = {path.name for path in (scratch / "results" / "sanity").iterdir()}
    assert {"junit.xml", "result.json", "report.md"} <= written, written
