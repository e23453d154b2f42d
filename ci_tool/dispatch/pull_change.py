"""A pull request's change read through the GitHub API: the ChangeSet `ci-tool stage select --base` reads from
git (run/changes.py from_git), so the bot's preview selects what CI selects.

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

from ci_tool.dispatch.github import GitHubClient
from ci_tool.errors import DispatchError
from ci_tool.stages.changes import ChangedPath, ChangeSet, FileStatus, change_of, rule_input

# GitHub's file statuses -> ours ("copied" adds a path; "changed" changes only its mode).
_STATUS = {
    "added": FileStatus.ADDED,
    "copied": FileStatus.ADDED,
    "modified": FileStatus.MODIFIED,
    "changed": FileStatus.MODIFIED,
    "unchanged": FileStatus.MODIFIED,
    "removed": FileStatus.REMOVED,
    "renamed": FileStatus.RENAMED,
}
_AT_BASE = (FileStatus.MODIFIED, FileStatus.REMOVED)  # and a rename's old path
_AT_HEAD = (FileStatus.ADDED, FileStatus.MODIFIED, FileStatus.RENAMED)


def from_github(client: GitHubClient, repository: str, number: int, *, test_db_dir: str) -> ChangeSet:
    """The change pull request `number` of `repository` makes (see the module docstring)."""

    def read() -> ChangeSet:
        repo = client.github.get_repo(repository)
        pull = repo.get_pull(number)
        head_sha = pull.head.sha
        merge_base = repo.compare(pull.base.sha, head_sha).merge_base_commit.sha
        listed = list(pull.get_files())
        if len(listed) < pull.changed_files:
            raise DispatchError(
                f"read the change of pull request #{number} of {repository}: expected GitHub to list its "
                f"{pull.changed_files} changed files, found {len(listed)} (GitHub lists at most 3000)",
                hint="comment `/bot run --disable-cbts` to run the full set",
            )
        changed = [ChangedPath(f.filename, _STATUS.get(f.status, FileStatus.MODIFIED),
                               f.previous_filename if f.status == "renamed" else None) for f in listed]  # fmt: skip

        def text(path: str, sha: str) -> str:
            found = repo.get_contents(path, ref=sha)
            if isinstance(found, list):  # a folder where the list says a file: not a rule input after all
                raise DispatchError(f"read {path} at {sha[:12]} of {repository}: expected a file, found a folder")
            if found.encoding != "base64":  # over 1 MB contents/ leaves the text out; the blob has it
                return base64.b64decode(repo.get_git_blob(found.sha).content).decode("utf-8", "replace")
            return found.decoded_content.decode("utf-8", "replace")

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
    return client._call(f"read the change of pull request #{number} of {repository}", read)
