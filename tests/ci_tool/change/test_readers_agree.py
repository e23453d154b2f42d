"""One change, two readers, one builder: what git says a pull request changes (change/git_read.from_git) and
what the GitHub API says (change/github_read.from_github, against the fake serving the same git repository),
each built through change/build.read_change as every command builds it, are one ChangeSet, so they select the
same stages."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_tool.change.build import GitHubPull, GitRange, read_change
from ci_tool.change.github_read import from_github
from ci_tool.change.value import ChangeSet, FileStatus
from ci_tool.dispatch.faults import RetryPolicy
from ci_tool.dispatch.github import GitHubClient
from ci_tool.errors import DispatchError
from ci_tool.stages.catalog_load import open_catalog
from ci_tool.stages.engines import Engine
from ci_tool.stages.select import select_for_change
from ci_tool.stages.selection_request import SelectionRequest
from tests.helpers.fake_github import FakeCommit, FakeGitHub, FakePull
from tests.helpers.git_pulls import commit_all, git, make_repository, serve_pull

REPOSITORY = "example/ci-tool"


@dataclass
class Served:
    github: FakeGitHub
    client: GitHubClient
    numbers: Iterator[int]


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    """One GitHub fake for the module (each pull request its own number) and a client that never waits."""
    with pytest.MonkeyPatch.context() as patch:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
            patch.delenv(name, raising=False)
        patch.setenv("NO_PROXY", "127.0.0.1")
        github = FakeGitHub()
        client = GitHubClient(github.api_url, token=github.token, retry=RetryPolicy(attempts=2, first_delay_seconds=0))
        try:
            yield Served(github, client, iter(range(1, 100_000)))
        finally:
            github.close()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repository(tmp_path_factory.mktemp("template") / "repo")


def fresh(template: Path, parent: Path) -> Path:
    """A copy of the template repository with the branch `pr` checked out."""
    root = parent / "repo"
    shutil.copytree(template, root)
    git(root, "checkout", "-q", "-b", "pr")
    return root


def both(served: Served, root: Path) -> tuple[ChangeSet, ChangeSet]:
    """The change `pr` proposes for `main`, built the one way every command builds it (change/build.py),
    read from git and from the GitHub fake."""
    number = next(served.numbers)
    serve_pull(served.github, REPOSITORY, number, root, base="main", head="pr")
    sources = (GitRange("main", "pr"), GitHubPull(served.client, REPOSITORY, number))
    from_git_, from_github_ = (read_change(s, test_db=root / "test-db", history=None, root=root) for s in sources)
    assert from_git_ is not None and from_github_ is not None
    return from_git_, from_github_


def write(root: Path, path: str, text: str) -> None:
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(text)


def rename(root: Path, old: str, new: str) -> None:
    if (root / old).exists():  # an earlier edit may have removed it
        git(root, "mv", old, new)


def remove(root: Path, path: str) -> None:
    (root / path).unlink(missing_ok=True)


def append(root: Path, path: str, text: str) -> None:
    write(root, path, (root / path).read_text() + text)


def add_list_and_waive(root: Path) -> None:
    write(root, "test-db/l0_new.yml", "version: 0.0.1\nl0_new: []\n")
    append(root, "test-db/waives.txt", "tests/unit SKIP (x)\n")


# id -> (what the pull request does, {path: status}, the rule inputs at the base, at the head)
CASES: dict[str, tuple[Callable[[Path], None], dict[str, FileStatus], set[str], set[str]]] = {
    "rename a test-db list": (
        lambda root: rename(root, "test-db/l0_gpu.yml", "test-db/l0_gpu_renamed.yml"),
        {"test-db/l0_gpu.yml": FileStatus.REMOVED, "test-db/l0_gpu_renamed.yml": FileStatus.RENAMED},
        {"test-db/l0_gpu.yml"},
        {"test-db/l0_gpu_renamed.yml"},
    ),
    "remove a test": (
        lambda root: remove(root, "tests/unit/test_a.py"),
        {"tests/unit/test_a.py": FileStatus.REMOVED},
        set(),
        set(),
    ),
    "add a list and a waive": (
        lambda root: add_list_and_waive(root),
        {"test-db/l0_new.yml": FileStatus.ADDED, "test-db/waives.txt": FileStatus.MODIFIED},
        {"test-db/waives.txt"},
        {"test-db/l0_new.yml", "test-db/waives.txt"},
    ),
    "edit docs and a source": (
        lambda root: (write(root, "docs/guide.md", "# Guide 2\n"), write(root, "src/pool.py", "x = 2\n")),
        {"docs/guide.md": FileStatus.MODIFIED, "src/pool.py": FileStatus.MODIFIED},
        set(),
        set(),
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_git_and_github_read_one_change(
    case: tuple[Callable[[Path], None], dict[str, FileStatus], set[str], set[str]],
    served: Served,
    template: Path,
    tmp_path: Path,
) -> None:
    change, statuses, at_base, at_head = case
    root = fresh(template, tmp_path)
    change(root)
    commit_all(root, "the pull request")
    from_git_, from_github_ = both(served, root)
    assert from_git_ == from_github_
    assert {path: from_git_.status(path) for path in from_git_.files} == statuses
    assert {path for path, text in (from_git_.base or {}).items() if text is not None} == at_base
    assert {path for path, text in from_git_.now.items() if text is not None} == at_head
    assert (from_git_.base_sha, from_git_.head_sha) == (git(root, "rev-parse", "main").strip(),
                                                        git(root, "rev-parse", "pr").strip())  # fmt: skip


def test_the_change_is_measured_from_the_merge_base_when_the_base_branch_moved_on(
    served: Served, template: Path, tmp_path: Path
) -> None:
    root = fresh(template, tmp_path)
    write(root, "docs/guide.md", "# Guide 2\n")
    commit_all(root, "the pull request")
    fork = git(root, "rev-parse", "main").strip()
    git(root, "checkout", "-q", "main")
    write(root, "src/pool.py", "x = 3\n")  # on main only: not the pull request's change
    commit_all(root, "main moves on")
    git(root, "checkout", "-q", "pr")
    from_git_, from_github_ = both(served, root)
    assert from_git_ == from_github_
    assert (from_git_.files, from_git_.base_sha) == (("docs/guide.md",), fork)
    assert from_github_.origin == f"the pull request's change {fork[:12]}..{from_github_.span[-12:]} read from GitHub"


def test_a_file_list_github_cuts_short_is_an_error_not_a_narrower_change(served: Served) -> None:
    number = next(served.numbers)
    served.github.add_pull(REPOSITORY, FakePull(number, files=["docs/guide.md"], changed_files=3001))
    with pytest.raises(DispatchError) as raised:
        from_github(served.client, REPOSITORY, number, test_db_dir="test-db")
    assert str(raised.value) == (
        f"read the change of pull request #{number} of {REPOSITORY}: expected GitHub to list its 3001 changed "
        "files, found 1 (GitHub lists at most 3000) Hint: comment `/bot run --disable-cbts` to run the full set"
    )


def test_a_rule_input_over_the_contents_limit_is_read_as_its_blob(
    served: Served, template: Path, tmp_path: Path
) -> None:
    root = fresh(template, tmp_path)
    append(root, "test-db/waives.txt", "tests/unit SKIP (x)\n")
    commit_all(root, "the pull request")
    served.github.contents_limit_bytes = 16  # the waives file is larger, at the base and at the head
    try:
        from_git_, from_github_ = both(served, root)
    finally:
        served.github.contents_limit_bytes = 1024 * 1024
    assert from_git_ == from_github_
    assert from_github_.now["test-db/waives.txt"] == (root / "test-db" / "waives.txt").read_text()


# ---------------------------------------------------------------- any change: the same value, the same stages

EDITS: dict[str, Callable[[Path], None]] = {
    "unwaive": lambda root: write(root, "test-db/waives.txt", (root / "test-db/waives.txt").read_text()
                                  .replace("full:A10/tests/gpu_only SKIP (https://bugs.example/2)\n", "")),
    "new waive": lambda root: append(root, "test-db/waives.txt", "tests/engine/test_attention.py SKIP (y)\n"),
    "add a test-db entry": lambda root: write(root, "test-db/l0_cpu.yml", (root / "test-db/l0_cpu.yml").read_text()
                                              + "  - tests/tools/test_new.py\n"),
    "remove a test-db list": lambda root: remove(root, "test-db/l0_gpu.yml"),
    "rename a test-db list": lambda root: rename(root, "test-db/l0_gpu.yml", "test-db/l0_gpu2.yml"),
    "edit a test": lambda root: write(root, "tests/engine/test_attention.py", "def test_attention():\n    assert 1\n"),
    "add a test": lambda root: write(root, "tests/unit/test_b.py", "def test_b():\n    pass\n"),
    "delete a test": lambda root: remove(root, "tests/tools/test_cli.py"),
    "edit docs": lambda root: write(root, "docs/guide.md", "# Guide, again\n"),
    "rename docs": lambda root: rename(root, "docs/guide.md", "docs/manual.md"),
    "edit a source": lambda root: write(root, "src/pool.py", "def alloc():\n    return 2\n"),
}  # fmt: skip


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    edits=st.lists(st.sampled_from(sorted(EDITS)), min_size=1, max_size=4, unique=True),
    main_moves=st.booleans(),
)
def test_any_change_reads_the_same_from_git_and_github_and_selects_the_same(
    edits: list[str], main_moves: bool, served: Served, template: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = fresh(template, tmp_path_factory.mktemp("change"))
    for edit in edits:
        EDITS[edit](root)
    commit_all(root, "the pull request")
    if main_moves:
        git(root, "checkout", "-q", "main")
        write(root, "bench/run.py", "print(1)\n")
        commit_all(root, "main moves on")
        git(root, "checkout", "-q", "pr")
    from_git_, from_github_ = both(served, root)
    assert from_git_ == from_github_
    loaded = open_catalog(template / "jenkins" / "stages.yml", template / "test-db")  # the head may lack a list
    def chosen(engine: Engine, changes: ChangeSet) -> tuple[object, object]:
        selection = select_for_change(loaded, SelectionRequest(), engine=engine, changes=changes)
        return selection.names, selection.narrowing

    engines = (Engine.JENKINS, Engine.LOCAL)
    assert [chosen(e, from_github_) for e in engines] == [chosen(e, from_git_) for e in engines]


def test_a_long_file_list_is_read_page_by_page(served: Served, template: Path, tmp_path: Path) -> None:
    root = fresh(template, tmp_path)
    for index in range(70):
        write(root, f"docs/page_{index:02}.md", f"# Page {index}\n")
    commit_all(root, "the pull request")
    before = served.github.count("GET", r"/pulls/\d+/files")
    from_git_, from_github_ = both(served, root)
    assert from_git_ == from_github_
    assert len(from_github_.files) == 70
    assert served.github.count("GET", r"/pulls/\d+/files") - before == 3  # 30 a page


# ---------------------------------------------------------------- answers GitHub should not give: one located line

WRONG_TYPES: dict[str, tuple[dict[str, object], str]] = {
    "previous_filename a list": (
        {"files": [{"filename": "docs/b.md", "status": "renamed", "previous_filename": ["docs/a.md"]}]},
        "expected a string at [0].previous_filename in the answer of {api}/pulls/{n}/files, found a list",
    ),
    "filename a number": (
        {"files": [{"filename": 5, "status": "modified"}]},
        "expected a string at [0].filename in the answer of {api}/pulls/{n}/files, found 5",
    ),
    "a rename without its old path": (
        {"files": [{"filename": "docs/b.md", "status": "renamed"}]},
        "expected a path or sha (a non-empty string) at [0].previous_filename in the answer of {api}/pulls/{n}/files, "
        "found null",
    ),
    "changed_files a word": (
        {"files": ["docs/guide.md"], "changed_files": "many"},
        "expected a whole number at changed_files in the answer of {api}/pulls/{n}, found 'many'",
    ),
}


@pytest.mark.parametrize(("fields", "message"), WRONG_TYPES.values(), ids=WRONG_TYPES.keys())
def test_a_field_of_the_wrong_type_is_one_located_line(
    fields: dict[str, object], message: str, served: Served
) -> None:
    number = next(served.numbers)
    served.github.add_pull(REPOSITORY, FakePull(number, **fields))  # type: ignore[arg-type]
    with pytest.raises(DispatchError) as raised:
        from_github(served.client, REPOSITORY, number, test_db_dir="test-db")
    api = f"{served.github.api_url}/repos/{REPOSITORY}"
    assert str(raised.value) == f"read the change of pull request #{number} of {REPOSITORY}: " + message.format(
        api=api, n=number
    )


def test_a_compare_404_says_a_branch_is_gone_not_the_token(served: Served) -> None:
    number = next(served.numbers)
    served.github.add_pull(REPOSITORY, FakePull(number, files=["docs/guide.md"]))
    served.github.fail("GET", "/compare/", status=404)
    with pytest.raises(DispatchError) as raised:
        from_github(served.client, REPOSITORY, number, test_db_dir="test-db")
    assert str(raised.value) == (
        f"read the change of pull request #{number} of {REPOSITORY}: expected GitHub to compare the base 0f1e2d3c4b5a "
        "with the head a1b2c3d4e5f6, found HTTP 404: a branch of the pull request was deleted, or force-pushed since "
        "the pull request was read Hint: comment again: the bot reads the pull request's head as it is then"
    )


def test_a_contents_404_says_the_commit_or_file_is_gone_not_the_token(served: Served) -> None:
    number = next(served.numbers)
    served.github.add_pull(REPOSITORY, FakePull(number, files=["test-db/waives.txt"]))  # no contents served
    with pytest.raises(DispatchError) as raised:
        from_github(served.client, REPOSITORY, number, test_db_dir="test-db")
    assert str(raised.value) == (
        f"read the change of pull request #{number} of {REPOSITORY}: expected GitHub to give test-db/waives.txt at "
        "0f1e2d3c4b5a, found HTTP 404: that commit is gone (the branch force-pushed since the pull request was "
        "read), or the path is not a file there Hint: comment again: the bot reads the pull request's head as it "
        "is then"
    )


def test_any_other_404_is_no_question_of_permissions(served: Served) -> None:
    with pytest.raises(DispatchError) as raised:
        served.client.pull_request(REPOSITORY, 99_999)
    assert str(raised.value) == (
        f"read pull request #99999 of {REPOSITORY}: expected GitHub to have it, found HTTP 404 (Not Found) Hint: it "
        "is gone: deleted, or replaced by a force-push; comment again on the pull request"
    )


def test_a_field_pygithub_reads_with_the_wrong_type_is_one_line_not_unexpected(served: Served) -> None:
    sha = "c" * 40
    served.github.commits[sha] = FakeCommit("t" * 40, committed_at=5)  # type: ignore[arg-type]
    with pytest.raises(DispatchError) as raised:
        served.client.commit(REPOSITORY, sha)
    assert str(raised.value) == (
        f"read commit cccccccccccc of {REPOSITORY}: expected a string in GitHub's answer at {served.github.api_url}, "
        "found 5"
    )


# ---------------------------------------------------------------- paths git never writes: refused, never narrowed

ODD_PATHS = {
    "a dot-dot part": "docs/../src/kvengine/pool.py",
    "a dot part": "docs/./guide.md",
    "absolute": "/docs/guide.md",
    "an empty part": "docs//guide.md",
    "a NUL": "docs/guide.md\0src/pool.py",
    "a line break": "docs/guide.md\nsrc/pool.py",
}


@pytest.mark.parametrize("odd", ODD_PATHS.values(), ids=ODD_PATHS.keys())
def test_a_path_git_never_writes_is_refused_not_read_as_written(odd: str, served: Served) -> None:
    number = next(served.numbers)
    served.github.add_pull(REPOSITORY, FakePull(number, files=[odd]))
    with pytest.raises(DispatchError) as raised:
        from_github(served.client, REPOSITORY, number, test_db_dir="test-db")
    assert str(raised.value) == (
        f"read the change of pull request #{number} of {REPOSITORY}: expected a path as git writes one (no '.', '..' "
        f"or empty part, no NUL or line break) at [0].filename in the answer of {served.github.api_url}/repos/"
        f"{REPOSITORY}/pulls/{number}/files, found {odd!r}"
    )


def test_a_rule_input_that_is_not_utf8_is_refused_as_ci_refuses_it(served: Served) -> None:
    number = next(served.numbers)
    pull = served.github.add_pull(REPOSITORY, FakePull(number, files=["test-db/waives.txt"]))
    for sha in (pull.base_sha, pull.head_sha):
        served.github.contents[(REPOSITORY, sha, "test-db/waives.txt")] = b"tests/unit SKIP (caf\xe9)\n"
    with pytest.raises(DispatchError) as raised:
        from_github(served.client, REPOSITORY, number, test_db_dir="test-db")
    assert str(raised.value) == (
        f"read test-db/waives.txt at 0f1e2d3c4b5a of {REPOSITORY}: expected UTF-8 text, found byte 0xe9 at offset 20 "
        "Hint: CI's "
        "test-db reader refuses it too: save the file as UTF-8"
    )
