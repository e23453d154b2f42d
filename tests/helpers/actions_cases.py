"""What the GitHub Actions dispatch tests share: the status contexts of an L0 Test run and the plain `/bot run`
request a selection records."""

from __future__ import annotations

FULL, CUSTOM = "L0 Test Full Run", "Custom L0 Test run"


RUN_REQUEST = {"command": "run", "flags": {}}
