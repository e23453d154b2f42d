"""The repository layout ci-tool expects and its defaults: the one place each path and default lives.

    jenkins/stages.yml               the stage catalog (hand-written)
    test-db/*.yml                    the test lists
    test-db/waives.txt               waives, applied to every stage
    test-db/.test_durations          recorded durations, for sharding (`ci-tool durations export`)
    .github/ci-bot-allowlist.yml     who may run the bot besides members (read from the default branch)
    docs/bot.md                      the `/bot` reference (generated)
    .ci-tool/runs/<run id>/<stage>/  each local run's results
    .ci-tool/history.sqlite          the local history

Paths are relative to the repository root, where ci-tool runs.
"""

from __future__ import annotations

from pathlib import Path

CATALOG_PATH = "jenkins/stages.yml"
TEST_DB_DIR = "test-db"
WAIVES_NAME = "waives.txt"
DURATIONS_NAME = ".test_durations"
DURATIONS_PATH = f"{TEST_DB_DIR}/{DURATIONS_NAME}"
ALLOWLIST_PATH = ".github/ci-bot-allowlist.yml"
BOT_DOCS_PATH = "docs/bot.md"
STATE_DIR = Path(".ci-tool")
RESULTS_ROOT = STATE_DIR / "runs"
HISTORY_PATH = STATE_DIR / "history.sqlite"

TEST_TIMEOUT_SECONDS = 3600  # a test's limit unless its list line or marker says otherwise (the reference's)
PIPELINE_TIMEOUT_HOURS = 24  # a whole generated pipeline (the reference's)
SLURM_INFRA_RETRIES = 1  # resubmissions of a stage's Slurm job after infra faults (the reference's cap)

# The torch the README's commands and the generated stage jobs install, so every runner tests the same one.
TORCH_PIN = "torch==2.13.0"


def waives_file_of(test_db: Path) -> Path:
    """The waives file of a test-db folder."""
    return test_db / WAIVES_NAME


def durations_file_of(test_db: Path) -> Path:
    """The durations file of a test-db folder."""
    return test_db / DURATIONS_NAME
