"""A pull request's labels and reviews through PyGithub, for the approval-label guard (pr_bot/labels.py).

    pull_reviews   GET pulls/N (state, labels) and GET pulls/N/reviews (every page, oldest first)
    add_label      POST issues/N/labels: adding a label the PR has is a no-op, so it is safe to repeat
    remove_label   DELETE issues/N/labels/NAME: False when the PR no longer has it (GitHub's 404)

Each goes through GitHubClient's retry policy and error messages (dispatch/github.py); the comment a removal
posts is GitHubClient.comment.
"""

from __future__ import annotations

from ci_tool.dispatch.github import GitHubClient, GithubException
from ci_tool.dispatch.model import IssueState
from ci_tool.dispatch.reviews import PullReviews, Review, ReviewState


def pull_reviews(client: GitHubClient, repository: str, number: int) -> PullReviews:
    """The pull request's state, labels and every review (a review state GitHub adds later is read as PENDING:
    it approves nothing)."""

    def read() -> PullReviews:
        pull = client.github.get_repo(repository).get_pull(number)
        reviews = tuple(
            Review(review.user.login, _state(review.state)) for review in pull.get_reviews() if review.user is not None
        )
        labels = tuple(label.name for label in pull.labels)
        return PullReviews(number, IssueState(pull.state) is IssueState.OPEN, labels, reviews)

    return client._call(f"read the reviews of pull request #{number} of {repository}", read)


def _state(text: str) -> ReviewState:
    try:
        return ReviewState(text.upper())
    except ValueError:
        return ReviewState.PENDING


def add_label(client: GitHubClient, repository: str, number: int, label: str) -> None:
    client._call(
        f"add the label {label!r} to #{number} of {repository}",
        lambda: client.github.get_repo(repository).get_issue(number).add_to_labels(label),
    )


def remove_label(client: GitHubClient, repository: str, number: int, label: str) -> bool:
    """Remove the label; False when the pull request does not have it (removed already, by a rerun or a person)."""

    def delete() -> bool:
        try:
            client.github.get_repo(repository).get_issue(number).remove_from_labels(label)
        except GithubException as error:
            if error.status == 404 and _names_the_label(error):
                return False
            raise
        return True

    return client._call(f"remove the label {label!r} from #{number} of {repository}", delete)


def _names_the_label(error: GithubException) -> bool:
    """Whether a 404 says the label is missing (GitHub: `Label does not exist`), not the issue or the repository."""
    message = error.data.get("message") if isinstance(error.data, dict) else None
    return message == "Label does not exist"
