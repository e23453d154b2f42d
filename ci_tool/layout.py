"""The repository layout ci-tool expects and its defaults: the one place each path and default lives.

    jenkins/stages.yml               the stage catalog (hand-written)
    test-db/*.yml                    the test lists
    test-db/waives.txt               waives, applied to every stage
    test-db/.test_durations          recorded durations, for sharding (`ci-tool durations export`)
    .github/ci-bot-allowlist.yml     who may run the bot besides members (read from the default branch)
    docs/bot.md                      the `/bot` reference (generated)
    .ci-tool/runs/<run id>/<stage>/  each local run's results
    .ci-tool/history.sqlite          the local history (and the bot's dispatch ledger)
    .ci-tool/outputs.sha256          the files ci-tool wrote as output, never code (output_files.py)
    .ci-tool/crash/                  tracebacks of unexpected errors, the newest CRASH_LOGS_KEPT

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
CRASH_DIR = STATE_DIR / "crash"
OUTPUTS_MANIFEST = STATE_DIR / "outputs.sha256"
CRASH_LOGS_KEPT = 10

# What the wheel is built from (pyproject.toml's package finder reads ci_tool/ and src/).
PACKAGE_SOURCES = ("pyproject.toml", "README.md", "ci_tool", "src")
# `ci-tool build`'s folder in a checkout: the project's wheel, the wheels of what the stages install with it,
# and manifest.json (the commit, the inputs' digest). The generated pipelines build it once and every test
# stage installs from it (ci_tool/build).
BUILD_DIR = "ci-build"
# A runner's folder of its last builds by inputs' digest (ci_tool/build/kept.py), set in its environment.
KEPT_BUILDS_ENV = "CI_TOOL_KEPT_BUILDS"

TEST_TIMEOUT_SECONDS = 3600  # a test's limit unless its list line or marker says otherwise (TensorRT-LLM's)
PIPELINE_TIMEOUT_HOURS = 24  # a whole generated pipeline (TensorRT-LLM's)
# A stage the infrastructure lost (its Jenkins agent disconnected, its pod evicted, its GitHub runner gone) runs
# again on a fresh agent or runner this many times, as `<stage>-attempt-2`, ... (TensorRT-LLM's cap for pods and
# Slurm jobs alike); a test failure never runs again.
INFRA_RETRIES = 1
SLURM_INFRA_RETRIES = INFRA_RETRIES  # resubmissions of a stage's Slurm job after infra faults

# The torch the README's commands install: the one pyproject.toml's [tool.ci-tool.build] pins for the stages
# (tests/ci_tool/test_layout.py holds the two together).
TORCH_PIN = "torch==2.13.0"


def waives_file_of(test_db: Path) -> Path:
    """The waives file of a test-db folder."""
    return test_db / WAIVES_NAME


def durations_file_of(test_db: Path) -> Path:
    """The durations file of a test-db folder."""
    return test_db / DURATIONS_NAME


# The bot's CI services (ci_tool/dispatch): each setting a flag with an environment variable; credentials
# only ever from the environment, never in flags, output, logs or replies.
JENKINS_URL_ENV = "CI_TOOL_JENKINS_URL"
JENKINS_JOB_ENV = "CI_TOOL_JENKINS_JOB"
JENKINS_USER_ENV = "JENKINS_USER"
JENKINS_TOKEN_ENV = "JENKINS_API_TOKEN"
MERGE_REQUEST_JOB = "L0_MergeRequest"  # the job the bot triggers (generated jenkins/L0_MergeRequest.groovy)
TEST_JOB = "L0_Test"  # the job it starts per architecture and phase (generated jenkins/L0_Test.groovy)
GITHUB_API_URL_ENV = "GITHUB_API_URL"  # GitHub's own variable in Actions
GITHUB_API_URL = "https://api.github.com"
GITHUB_TOKEN_ENV = "GITHUB_TOKEN"
REPORT_URL_ENV = "CI_TOOL_REPORT_URL"  # where builds' HTML reports are published (ci_tool/report/links.py)
SELECTION_ARTIFACT = "selection.json"  # what L0_MergeRequest selected, archived with the build
# The shared history of CI (docs/runners-and-history.md, "A shared history for CI"): its URL in a Jenkins
# credential (Secret text) and a GitHub repository secret of these names reaches every generated stage as
# CI_TOOL_HISTORY; without one, each agent keeps its own history, as a local run does.
HISTORY_ENV = "CI_TOOL_HISTORY"  # a history path or PostgreSQL URL, wherever --history is not given
SHARED_HISTORY_CREDENTIAL = "ci-tool-history"
SHARED_HISTORY_SECRET = "CI_TOOL_HISTORY"
CI_RESULTS_DIR = "results"  # the generated pipelines' results/<stage>/ folders, in the checkout
# results/<stage>/exit-code: the exit code of `ci-tool stage run`, written by a GitHub stage job's step once ci-tool
# ended; a stage whose results hold none lost its runner (ci_tool/run/lost.py)
CI_EXIT_CODE_FILE = "exit-code"
CI_DURATIONS_PATH = f"{STATE_DIR}/durations.json"  # the pipeline's durations: the committed ones, merged with CI's
# What the generated pipelines write into a checkout, untracked: never the code a run tests (gitinfo), so a
# stage on one agent and the selection on another see the same code and reuse matches across them.
CI_SCRATCH = (
    f"{STATE_DIR}/", f"{CI_RESULTS_DIR}/", f"{BUILD_DIR}/", "request.json", SELECTION_ARTIFACT
)

# The parameters the bot triggers L0_MergeRequest with, in declaration order: name -> description.
BUILD_PARAMETERS: dict[str, str] = {
    "REQUEST": "The parsed /bot run request (JSON).",
    "LABELS": "The pull request's labels (JSON list); approval labels unblock stages.",
    "PR_NUMBER": "The pull request the bot runs for (empty outside the bot).",
    "HEAD_SHA": "The pull request's head commit the run tests (empty outside the bot).",
    "COMMENT_ID": "The /bot comment that started the run: the bot never starts two builds for one.",
    "BASE_REF": "The branch the pull request targets: its changes since it select, its waives merge in.",
    "PRIORITY": "The queue priority, 1 (first) to 5; the Priority Sorter plugin orders the queue by it.",
}
# Jenkins queue priorities (the Priority Sorter plugin's scale: lower runs first): `/bot run --high-priority`
# and every other run.
QUEUE_PRIORITY_HIGH = 1
QUEUE_PRIORITY_DEFAULT = 3
# `/bot run --debug` on Jenkins: how long a failed stage keeps its agent and workspace for someone to look.
DEBUG_HOLD_MINUTES = 30

DISPATCH_POLL_SECONDS = 5.0  # between looks at a queue item or a running build
DISPATCH_RETRY_SECONDS = 1.0  # the first pause before a retry (doubling), and between GitHub writes
DISPATCH_ATTEMPTS = 4  # tries of a request that is safe to repeat
QUEUE_TIMEOUT_SECONDS = 900  # how long a queue item may wait before naming its build
HTTP_TIMEOUT_SECONDS = 30  # one HTTP request to Jenkins or GitHub
TRIGGER_TIMEOUT_SECONDS = 120  # the trigger POST: a busy Jenkins answers late; one given up on costs a look
LOST_ANSWER_GRACE_SECONDS = 120  # after a lost trigger answer: how long Jenkins may take to show its item
RATE_LIMIT_WAIT_SECONDS = 300  # the longest wait for a GitHub rate limit to reset before giving up with its time

# GitHub Actions as the bot's engine (docs/generated-pipelines.md, "GitHub Actions only"): the generated workflow
# a /bot run dispatches, and the artifacts the bot reads of its run for the final CI report.
ACTIONS_WORKFLOW = "l0-test.yml"  # .github/workflows/, generated from ci_tool/generate/templates/l0-test.yml.j2
ACTIONS_SELECTION_ARTIFACT = "ci-tool-selection"  # the plan job's selection.json and request.json
ACTIONS_RESULTS_ARTIFACT_PREFIX = "results-"  # + the stage: its results/<stage>/ folder (junit.xml, ...)
BOT_ENGINES_ENV = "CI_TOOL_BOT_ENGINES"  # where a /bot run runs: jenkins, github, or both

# The modules ci-tool's runner loads into every test process of a stage it starts, whatever the stage's list:
# its test-list and order plugins (`pytest -p`) and the launcher of a multi-node stage (`python -m`). Import
# reach (change/import_reach.py) counts a module they reach as reaching every test, so they live here, below
# both the runner and the change. The touch plugin (run/touch_recorder.py) is not among them: CI records in
# post-merge runs, which run everything; a local run that narrows and records too loads it, and a fault there
# fails every stage of that run out loud, whatever was selected. Its name stays in its own module, since a
# module that spells another's dotted name counts as loading it.
TEST_LIST_PLUGIN = "ci_tool.run.plugin"
ORDER_PLUGIN = "ci_tool.run.order"
RANKS_LAUNCHER = "ci_tool.run.ranks"
RUNNER_MODULES = (TEST_LIST_PLUGIN, ORDER_PLUGIN, RANKS_LAUNCHER)
