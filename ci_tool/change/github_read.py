"""A pull request's change read through the GitHub API: the ChangeSet `ci-tool stage select --base` reads from
git (git_read.from_git), so the bot's preview selects what CI selects. I/O: the requests and their 404s;
github_rows.py checks each answer's fields.

    GET pulls/N                         the head commit and the base branch's tip
    GET compare/BASE...HEAD             their merge base (the commit git's `--base` measures from)
    GET pulls/N/files (paged)           each changed path with its status (a rename with its old path)
    GET contents/PATH?ref=SHA           the rule inputs' texts (test-db lists, waives) at the merge base
                                        and at the head, only where the status says the file exists
    GET git/blobs/SHA                   the text of such a file over 1 MB (contents/ leaves it out)

pulls/N/files lists at most 3000 files; a longer list would be a change only partly known, which would
narrow the selection wrongly, so it is an error instead.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Iterator

from github import GithubException

from ci_tool.change.github_rows import changed_path, required_text, utf8
from ci_tool.change.value import ChangeSet, FileStatus, change_of, rule_input
from ci_tool.dispatch.answers import AnswerSource
from ci_tool.dispatch.github import GitHubClient
from ci_tool.errors import DispatchError

_AT_BASE = (FileStatus.MODIFIED, FileStatus.REMOVED)  # and a rename's old path
_AT_HEAD = (FileStatus.ADDED, FileStatus.MODIFIED, FileStatus.RENAMED)
# What a 404 means where the pull request itself was just read (never the token's permissions).
_BRANCH_GONE = "a branch of the pull request was deleted, or force-pushed since the pull request was read"
_FILE_GONE = (
    "that commit is gone (the branch force-pushed since the pull request was read), or the path is not a file there"
)


def from_github(client: GitHubClient, repository: str, number: int, *, test_db_dir: str) -> ChangeSet:
    """The change pull request `number` of `repository` makes (see the module docstring)."""
    what = f"read the change of pull request #{number} of {repository}"
    pulls_url = f"{client.api_url}/repos/{repository}/pulls/{number}"

    def read() -> ChangeSet:
        repo = client.github.get_repo(repository)
        pull = AnswerSource(what, pulls_url)
        pulled = repo.get_pull(number)
        data = pull.obj(pulled.raw_data)
        head_sha = required_text(pull, pull.obj(data.get("head"), "head"), "sha", "head")
        base_sha = required_text(pull, pull.obj(data.get("base"), "base"), "sha", "base")
        changed_files = pull.integer(data, "changed_files")
        with _gone(what, f"GitHub to compare the base {base_sha[:12]} with the head {head_sha[:12]}", _BRANCH_GONE):
            compared = repo.compare(base_sha, head_sha).raw_data  # (a lazy client asks here)
        answer = AnswerSource(what, f"{client.api_url}/repos/{repository}/compare/{base_sha}...{head_sha}")
        merge_base = required_text(answer, answer.obj(compared.get("merge_base_commit"),
                                                       "merge_base_commit"), "sha", "merge_base_commit")  # fmt: skip
        files = AnswerSource(what, f"{pulls_url}/files")
        listed = [files.obj(found.raw_data, f"[{k}]") for k, found in enumerate(pulled.get_files())]
        if len(listed) < changed_files:
            raise DispatchError(
                f"{what}: expected GitHub to list its {changed_files} changed files, found {len(listed)} (GitHub "
                "lists at most 3000)",
                hint="comment `/bot run --disable-cbts` to run the full set",
            )
        changed = [changed_path(files, row, f"[{k}]") for k, row in enumerate(listed)]

        def text(path: str, sha: str) -> str:
            where = f"{path} at {sha[:12]} of {repository}"
            with _gone(what, f"GitHub to give {path} at {sha[:12]}", _FILE_GONE):
                found = repo.get_contents(path, ref=sha)
                if isinstance(found, list):  # a folder where the list says a file: not a rule input after all
                    raise DispatchError(f"read {path} at {sha[:12]} of {repository}: expected a file, found a folder")
                if found.encoding != "base64":  # over 1 MB contents/ leaves the text out; the blob has it
                    return utf8(base64.b64decode(repo.get_git_blob(found.sha).content), where)
                return utf8(found.decoded_content, where)

        inputs = [found for found in changed if rule_input(found.path, test_db_dir)]
        base = {f.path: text(f.path, merge_base) for f in inputs if f.status in _AT_BASE}
        base |= {f.previous: text(f.previous, merge_base) for f in changed
                 if f.previous is not None and rule_input(f.previous, test_db_dir)}  # fmt: skip
        now = {f.path: text(f.path, head_sha) for f in inputs if f.status in _AT_HEAD}
        return change_of(
            changed,
            test_db_dir=test_db_dir,
            base_sha=merge_base,
            head_sha=head_sha,
            base=base,
            now=now,
            origin=f"the pull request's change {merge_base[:12]}..{head_sha[:12]} read from GitHub",
        )

    # The client's one retry policy and error words (a sibling module of the same package).
    return client._call(what, read)


@contextlib.contextmanager
def _gone(what: str, expected: str, meaning: str) -> Iterator[None]:
    """A 404 of one of the change's requests, said for what it means there (never the token's permissions:
    GitHub answered 200 for the pull request itself just before)."""
    try:
        yield
    except GithubException as error:
        if error.status != 404:
            raise
        raise DispatchError(
            f"{what}: expected {expected}, found HTTP {error.status}: {meaning}",
            hint="comment again: the bot reads the pull request's head as it is then",
        ) from None
