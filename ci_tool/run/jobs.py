"""What a planned stage runs, by its kind (the stage-name grammar's), and the one entry that runs any stage.

    test stage        <family>-<K>: its pytest processes (stage_runner.run_stage)
    docs stage        <GPU>-Build_Docs: each check one result, the stage fails when one fails:
                        docs::generated         every generated file is fresh (`ci-tool generate --check`)
                        docs::links[<file>]     every relative link of README.md and docs/**/*.md names a file
    package sanity    <GPU>-PackageSanityCheck-KEY: take the wheel of the pipeline's build (ci-build/, when
                      the checkout holds one: the wheel every test stage installed; a build of other inputs
                      fails the check), else build the wheel from the package sources; install it into
                      a fresh virtual environment, check that environment imports ci_tool and kvengine from
                      the wheel, then run the stage's list (l0_sanity_check) with that environment's python
                      and the checkout off its import path (PYTHONSAFEPATH), so the tests see what a user
                      installs. The environment installs the wheel alone and reads its dependencies from the
                      running environment (a `.pth` file): the check needs no package index, so it runs on an
                      offline runner too.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from ci_tool.build.manifest import manifest_path
from ci_tool.build.spec import project_build
from ci_tool.build.wheelhouse import check as check_build
from ci_tool.errors import BuildError
from ci_tool.history.locator import without_history_access
from ci_tool.layout import BUILD_DIR, PACKAGE_SOURCES
from ci_tool.outcomes import StageState, TestOutcome
from ci_tool.run import junit, output_bounds, parent_death
from ci_tool.run.invocation import RunSettings
from ci_tool.run.process import EventSink
from ci_tool.run.stage_runner import StageResult, TestResult, run_stage, write_stage_files
from ci_tool.stages.names import StageKind
from ci_tool.stages.stage_plan import StagePlan

DOCS_ROOTS = ("README.md", "docs")  # the markdown the docs stage checks: a file, or every *.md below a folder
SANITY_CHECK = "package-sanity::installed"  # the result of the import check, before the list runs
_JOB_TIMEOUT_SECONDS = 900
# A markdown link or image target: `[text](target)`, `![alt](target "title")`.
_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//|#)", re.IGNORECASE)  # a scheme, protocol-relative, anchor


def run_job(plan: StagePlan, settings: RunSettings, *, on_event: EventSink | None = None) -> StageResult:
    """Run a planned stage of any kind (see the module docstring; pipeline.JOB_KINDS lists the non-test ones)."""
    if plan.name.kind is StageKind.BUILD_DOCS:
        started_at, clock = time.time(), time.monotonic()
        return _finish(plan, settings, list(docs_checks(settings)), started_at, clock)
    if plan.name.kind is StageKind.PACKAGE_SANITY:
        return package_sanity(plan, settings, on_event=on_event)
    return run_stage(plan, settings, on_event=on_event)


def planned_checks(plan: StagePlan, settings: RunSettings) -> list[str]:
    """What a non-test stage checks besides (or instead of) a test list, one `result id: what` line each,
    for a dry run; [] for a test stage."""
    if plan.name.kind is StageKind.BUILD_DOCS:
        generated = shlex.join([settings.python, "-m", "ci_tool", "generate", "--check"])
        lines = [f"docs::generated: every generated file is fresh (`{generated}`)"]
        for path in markdown_files(settings.rootdir):
            relative = path.relative_to(settings.rootdir).as_posix()
            lines.append(f"docs::links[{relative}]: every relative link names a file of the checkout")
        return lines
    if plan.name.kind is StageKind.PACKAGE_SANITY:
        return [
            f"{SANITY_CHECK}: take the wheel of the build in {BUILD_DIR}/ when the checkout holds one, else build "
            f"the wheel from {', '.join(PACKAGE_SOURCES)}; install it into a fresh "
            "environment, check that it imports ci_tool and kvengine from the wheel; then the list below runs "
            "with that environment's python, the checkout off its import path"
        ]
    return []


# ---------------------------------------------------------------- the docs stage


def docs_checks(settings: RunSettings) -> Iterator[junit.CaseResult]:
    """The docs stage's results: generated files fresh, then each markdown file's links."""
    started = time.monotonic()
    done = run_command([settings.python, "-m", "ci_tool", "generate", "--check"], cwd=settings.rootdir)
    message = _first_line(done.stderr or done.stdout).removeprefix("error: ") if done.returncode else ""
    yield _case("docs::generated", message, time.monotonic() - started, done.stdout + done.stderr)
    for path in markdown_files(settings.rootdir):
        relative = path.relative_to(settings.rootdir).as_posix()
        broken = broken_links(path, settings.rootdir)
        yield _case(f"docs::links[{relative}]", broken[0] if broken else "", 0.0, "\n".join(broken))


def markdown_files(root: Path) -> list[Path]:
    """README.md and every markdown file under docs/, sorted."""
    found: list[Path] = []
    for name in DOCS_ROOTS:
        path = root / name
        found += [path] if path.is_file() else sorted(path.rglob("*.md")) if path.is_dir() else []
    return found


def broken_links(path: Path, root: Path) -> list[str]:
    """`file:line:col: ...` for each relative link of a markdown file that names no file in the checkout."""
    problems: list[str] = []
    relative = path.relative_to(root).as_posix()
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.lstrip().startswith("```"):
            fenced = not fenced  # code blocks hold examples, not links
        if fenced:
            continue
        for match in _LINK.finditer(line):
            target = match.group(1)
            if _EXTERNAL.match(target):
                continue
            resolved = (path.parent / target.split("#", 1)[0]).resolve()
            if not resolved.exists() or not resolved.is_relative_to(root.resolve()):
                problems.append(
                    f"{relative}:{number}:{match.start(1) + 1}: expected the link {target!r} to name a file of the "
                    "checkout, found none Hint: fix the path (it is relative to the markdown file's folder)"
                )
    return problems


# ---------------------------------------------------------------- the package-sanity stage


def package_sanity(plan: StagePlan, settings: RunSettings, *, on_event: EventSink | None = None) -> StageResult:
    """Build, install into a fresh environment, check the import, run the list there (module docstring)."""
    started_at, clock = time.time(), time.monotonic()
    work = settings.results_dir / "package"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        python = install_fresh(settings, work)
    except _JobFailed as failed:
        return _finish(plan, settings, [_case(SANITY_CHECK, str(failed), 0.0, failed.log)], started_at, clock)
    check = _case(SANITY_CHECK, "", time.monotonic() - clock)
    variables = {**settings.variables, "PYTHONSAFEPATH": "1"}  # the checkout stays off the import path
    result = run_stage(plan, replace(settings, python=str(python), variables=variables), on_event=on_event)
    tests = (TestResult(check), *result.tests)
    return replace(result, tests=tests, started_at=started_at, duration_seconds=time.monotonic() - clock)


class _JobFailed(Exception):
    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log


def install_fresh(settings: RunSettings, work: Path) -> Path:
    """The python of a fresh environment holding the build's wheel, or the wheel built from the checkout's
    package sources where the checkout holds no build."""
    env = work / "venv"
    wheel = built_wheel(settings.rootdir) or _wheel_from_sources(settings, work)
    _step("create the environment", [settings.python, "-m", "venv", "--without-pip", str(env)], work)
    python = env / "bin" / "python"
    _step("install the wheel", [settings.python, "-m", "pip", "--python", str(python), "install", "--no-deps",
                                "--no-index", "-q", str(wheel)], work)  # fmt: skip
    (Path(_ask(python, "import sysconfig; print(sysconfig.get_paths()['purelib'])")) / "_ci_tool_deps.pth").write_text(
        _ask(settings.python, "import sysconfig; print(sysconfig.get_paths()['purelib'])") + "\n"
    )
    imported = _ask(python, "import ci_tool, kvengine; print(ci_tool.__file__); print(kvengine.__file__)", cwd=work)
    outside = [path for path in imported.splitlines() if not Path(path).is_relative_to(env)]
    if outside:
        raise _JobFailed(f"expected the fresh environment to import the wheel, found {outside[0]!r}")
    return python


def built_wheel(rootdir: Path) -> Path | None:
    """The project's wheel of the build in the checkout (None where it holds none); a build of other inputs
    than the checkout's fails the job (the stage would check another wheel than the one the stages tested)."""
    folder = rootdir / BUILD_DIR
    if not manifest_path(folder).is_file():
        return None
    try:
        return folder / check_build(rootdir, folder, project_build(rootdir)).wheel
    except BuildError as problem:
        raise _JobFailed(f"cannot use the build in {BUILD_DIR}: {problem}") from None


def _wheel_from_sources(settings: RunSettings, work: Path) -> Path:
    source, wheels = work / "source", work / "wheels"
    for name in PACKAGE_SOURCES:  # a copy: building in the checkout would leave build/ and egg-info there
        origin = settings.rootdir / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            source.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, source / name)
    _step("build the wheel", [settings.python, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                              "--no-index", "-q", "-w", str(wheels), str(source)], work)  # fmt: skip
    wheel = next(iter(sorted(wheels.glob("*.whl"))), None)
    if wheel is None:
        raise _JobFailed(f"expected a wheel in {wheels}, found none")
    return wheel


def _step(what: str, command: Sequence[str], cwd: Path) -> None:
    done = run_command(command, cwd=cwd)
    if done.returncode:
        raise _JobFailed(f"cannot {what}: {_first_line(done.stderr or done.stdout)}", done.stdout + done.stderr)


def _ask(python: str | Path, code: str, cwd: Path | None = None) -> str:
    done = run_command([str(python), "-I", "-c", code], cwd=cwd)
    if done.returncode:
        raise _JobFailed(f"cannot run {python}: {_first_line(done.stderr)}", done.stderr)
    return done.stdout.strip()


# ---------------------------------------------------------------- shared


def run_command(command: Sequence[str], *, cwd: Path | None) -> subprocess.CompletedProcess[str]:
    """A job's command to its end, its output kept in temporary files and read back bounded (the end of
    each stream: a build that prints 1 GB costs ci-tool 64 KiB)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            done = subprocess.run(
                list(command), cwd=cwd, stdout=out, stderr=err, timeout=_JOB_TIMEOUT_SECONDS, check=False,
                env=without_history_access(os.environ),  # a build runs the change's code: no way into the history
                preexec_fn=parent_death.child_preparation(),  # a build or install does not outlive ci-tool
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as error:
            return subprocess.CompletedProcess(list(command), 1, "", f"{error}")
        return subprocess.CompletedProcess(
            done.args, done.returncode, output_bounds.output_tail(out), output_bounds.output_tail(err)
        )


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "no output")


def _case(nodeid: str, failure: str, seconds: float, text: str = "") -> junit.CaseResult:
    outcome = TestOutcome.FAILED if failure else TestOutcome.PASSED
    return junit.CaseResult(nodeid, outcome, round(seconds, 3), message=failure, text=text if failure else "")


def _finish(
    plan: StagePlan, settings: RunSettings, cases: list[junit.CaseResult], started_at: float, clock: float
) -> StageResult:
    """A stage whose results are its job's checks: junit.xml and result.json, as a test stage writes them."""
    folder = settings.results_dir
    stage = plan.name.name
    cases = [replace(case, stage=stage) for case in cases]
    failed = any(case.is_failure for case in cases)
    state = StageState.FAILED if failed else StageState.PASSED
    result = StageResult(
        stage, state, "", tuple(TestResult(case) for case in cases), (), (), started_at,
        time.monotonic() - clock, folder,
    )  # fmt: skip
    return write_stage_files(result, plan, settings.run_id)
