"""What GitHub answers about a pull request's reviews and labels, as frozen values (the label guard reads
these: pr_bot/labels.py; dispatch/labels.py reads them through the API)."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class ReviewState(enum.StrEnum):
    """A review's state as the REST API spells it (webhook payloads spell it in lower case)."""

    APPROVED = "APPROVED"
    CHANGES_REQUESTED = "CHANGES_REQUESTED"
    COMMENTED = "COMMENTED"
    DISMISSED = "DISMISSED"
    PENDING = "PENDING"


# The states that change what a reviewer thinks of the pull request: a later comment-only review leaves an
# earlier approval standing, as GitHub's own review decision does.
DECISIVE_STATES = (ReviewState.APPROVED, ReviewState.CHANGES_REQUESTED, ReviewState.DISMISSED)


@dataclass(frozen=True)
class Review:
    login: str  # the reviewer
    state: ReviewState


@dataclass(frozen=True)
class PullReviews:
    """A pull request's state, labels and reviews (oldest first, as GitHub lists them)."""

    number: int
    open: bool
    labels: tuple[str, ...]
    reviews: tuple[Review, ...]
