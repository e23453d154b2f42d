"""The markdown the bot posts on a pull request for a Decision (None for an ignored comment).

Text that comes from the comment (flag values, the skip reason, an unknown word) only ever appears
inside code spans or code blocks whose fences are longer than any backtick run in it, so a comment
cannot inject markdown, links or @-mentions into the reply.
"""

from __future__ import annotations

from collections.abc import Sequence

from ci_tool.bot.authorize import ASSOCIATIONS, LISTS_GRANTING
from ci_tool.bot.event import Action, Decision
from ci_tool.bot.flags import COMMANDS, SubCommand, flag_by_key
from ci_tool.bot.help import render_help
from ci_tool.bot.run_plan import RunPlan
from ci_tool.errors import CiToolError, ColumnError, capped, closest, not_shown
from ci_tool.layout import ALLOWLIST_PATH
from ci_tool.markdown_safe import cell, code, code_block
from ci_tool.perf.blind_gate import blind_gate_line
from ci_tool.stages.cbts import CbtsScope

DRY_RUN_NOTE = "dry run: nothing was started"
COMMENT_LIMIT = 65_536  # characters GitHub takes in one comment


def _and(words: list[str]) -> str:
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words)


def render_reply(decision: Decision, *, dry_run: bool = False, plan: RunPlan | None = None) -> str | None:
    """The reply for a decision (with the resolved plan of a `/bot run`, when there is one); None when the
    bot stays silent."""
    if decision.action is Action.IGNORE:
        return None
    if decision.action is Action.HELP:
        if plan is not None and plan.selection.errors:
            return _catalog_errors(decision, plan)
        return _help(decision)
    if decision.action is Action.REFUSE:
        if decision.unread is not None:
            return _unread_change(decision, decision.unread)
        return _missing_labels(decision) if decision.missing else _refusal(decision)
    return _dispatch(decision, dry_run=dry_run, plan=plan)


def _help(decision: Decision) -> str:
    login = decision.event.login
    if decision.error is not None:
        error = decision.error
        detail = f"{error.caret()}\ncolumn {error.col}: {error.headline}"
        return (
            f"@{login}, I could not read that `/bot` command:\n\n{code_block(detail)}\n\n"
            "Nothing was started. Comment `/bot help` for the commands and flags.\n"
        )
    unknown = decision.request.unknown_command if decision.request else None
    if unknown is None:
        return render_help()
    names = [c.name for c in COMMANDS]
    near = closest(unknown, names, limit=1)
    suggestion = f" Did you mean `/bot {near[0]}`?" if near else ""
    return f"@{login}, {code('/bot ' + unknown)} is not a command.{suggestion}\n\n{render_help()}"


def _refusal(decision: Decision) -> str:
    authorization = decision.authorization
    request = decision.request
    assert authorization is not None and authorization.permission is not None and request is not None
    permission = authorization.permission
    associations = _and([a.lower() + "s" for a in ASSOCIATIONS[permission]])
    entries = " or ".join(f"`{entry}`" for entry in LISTS_GRANTING[permission])
    commands = " and ".join(f"`/bot {c.name}`" for c in COMMANDS if c.permission is permission)
    return (
        f"@{decision.event.login}, thank you for the `/bot {request.command}`. {commands} are open to the "
        f"repository's {associations}, and to the people listed under {entries} in `{ALLOWLIST_PATH}`, "
        "because CI runs on shared GPUs.\n\n"
        f"To get access, open a pull request that adds your GitHub login under `{LISTS_GRANTING[permission][0]}` "
        f"in `{ALLOWLIST_PATH}`, or ask a maintainer to comment the command for you. Nothing was started.\n"
    )


def _missing_labels(decision: Decision) -> str:
    lines = [
        f"@{decision.event.login}, this run was not started: it needs "
        + ("a label" if len(decision.missing) == 1 else "labels")
        + " this pull request does not carry.",
        "",
    ]
    for missing in decision.missing:
        lines.append(f"- `{missing.label}`, for " + "; ".join(code(reason) for reason in missing.reasons))
    lines += [
        "",
        "A CI approver can add the label; then comment the command again. To run without it, narrow "
        "the selection, for example with `--stage-list`.",
        "",
    ]
    return "\n".join(lines)


def _unread_change(decision: Decision, error: CiToolError) -> str:
    """The refusal of a request that selects by the pull request's change when GitHub could not give it."""
    request = decision.request
    assert request is not None
    command = f"/bot {request.command}"
    return (
        f"@{decision.event.login}, `{command}` was not carried out: the bot could not read this pull request's "
        f"change from GitHub, and it selects stages by the change.\n\n{code_block(str(error))}\n\n"
        f"Comment `/bot run --disable-cbts` to run the full set without the change (CI reads it from git), or "
        f"{code(command)} again once GitHub gives it.\n"
    )


def unread_note(error: CiToolError) -> str:
    """The line of a reply previewed without the pull request's change, which GitHub could not give."""
    return (
        f"The bot could not read this pull request's change from GitHub ({code(error.message)}): the preview below "
        "is made without it, so it shows no stage that a changed path adds (a multi-GPU path, a tag trigger); "
        "the build reads the change from git."
    )


def _dispatch(decision: Decision, *, dry_run: bool, plan: RunPlan | None) -> str:
    request = decision.request
    assert request is not None
    note = f" ({DRY_RUN_NOTE})" if dry_run else ""
    lines = [f"@{decision.event.login}, running `/bot {request.command}`{note}.", ""]
    if request.values:
        lines += ["| Flag | Value |", "|---|---|"]
        for key, value in request.values:
            shown = (
                "on"
                if value is True
                else ", ".join(code(v) for v in value)
                if isinstance(value, tuple)
                else code(str(value))
            )
            lines.append(f"| `{flag_by_key(key).name}` | {cell(shown)} |")
        lines.append("")
    elif request.command is SubCommand.RUN:
        lines += ["No flags: the default pre-merge selection.", ""]
    if decision.unread is not None:
        lines += [unread_note(decision.unread), ""]
    if plan is not None:
        return "\n".join([*lines, preview_line(plan), ""]) + "\n" + render_plan(plan)
    return "\n".join(lines)


def preview_line(plan: RunPlan) -> str:
    """What the plan below was previewed from: the reply is a preview, the build's CI report says what ran."""
    changes = plan.changes
    source = (
        f"from {changes.origin}" if changes is not None and changes.origin
        else "from its changed files" if changes is not None
        else "without the pull request's change (none was read)"
    )  # fmt: skip
    return f"**Preview** {source}: the build selects again on the pull request's commit; its CI report says what ran."


def _merge_gate(plan: RunPlan) -> list[str]:
    selection = plan.selection
    custom = [f"`{found.name}`" for found in selection.request.given if found.custom_run]
    if custom:
        return [f"This is a custom run ({', '.join(custom)}): it cannot turn the merge gate green.", ""]
    if selection.merge_gate:
        return ["A green run of this plan turns the merge gate green.", ""]
    return []


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def render_plan(plan: RunPlan) -> str:
    """The resolved plan as markdown: the stages to run (runner, shard, tests, predicted minutes, why),
    the stages not run and why, missing approvals, errors, and the merge-gate verdict."""
    selection = plan.selection
    verdicts = {verdict.stage: verdict for verdict in selection.verdicts}
    waiting = {blocked.stage.name.name: blocked.label for blocked in selection.blocked}
    count = len(selection.stages)
    lines = []
    if selection.selected:
        blocked = f" ({len(waiting)} more blocked)" if waiting else ""
        lines += [
            f"**Plan:** {count} stage{'s' if count != 1 else ''}{blocked}, {plan.test_lines} test line"
            f"{'s' if plan.test_lines != 1 else ''}; the slowest stage is predicted at "
            f"{_minutes(plan.slowest_seconds)}.",
            "",
            "| Stage | Runner | Shard | Tests | Predicted | Why |",
            "|---|---|---|---|---|---|",
        ]
        for stage in selection.selected:
            name = stage.name.name
            stage_plan, verdict = plan.plans[name], verdicts[name]
            why = _why(verdict.step, verdict.reason)
            why = f"**blocked** until `{waiting[name]}`; {why}" if name in waiting else why
            runner = code(stage.platform) + (", runs alone" if stage.name.policy.runs_alone else "")
            lines.append(
                f"| {code(name)} | {runner} | {stage.shard}/{stage.splits} | {len(stage_plan.lines)} "
                f"| {_minutes(stage_plan.predicted_seconds)} | {cell(why)} |"
            )
        lines.append("")
        lines += _blind_gates(plan)
    else:
        lines += ["**Plan:** no stages selected.", ""]
    if selection.excluded:
        excluded = len(selection.excluded)
        lines += [f"<details><summary>{excluded} stage{'s' if excluded != 1 else ''} not run</summary>", ""]
        lines += ["| Stage | Why |", "|---|---|"]
        lines += [f"| {code(v.stage)} | {cell(_why(v.step, v.reason))} |" for v in selection.excluded]
        lines += ["", "</details>", ""]
    narrowing = selection.narrowing
    if narrowing is not None and narrowing.scope is not CbtsScope.OFF:  # why the changed files run what they run
        lines += [f"**Change-based selection:** {narrowing.scope.value}.", ""]
        lines += [f"- {code(reason)}" for reason in narrowing.reasons] + [""]
    for missing in selection.missing:
        lines.append(f"Needs the label `{missing.label}`, for " + "; ".join(code(r) for r in missing.reasons) + ".")
    if selection.missing:
        lines.append("")
    lines += [f"Note: {code(note)}." for note in selection.notes] + ([""] if selection.notes else [])
    if selection.refused:
        lines += [f"Flags the {selection.engine.value} engine cannot honour:", "", _errors_block(selection.refused), ""]
    if selection.unknown_names:
        lines += ["Names the catalog does not have:", "", _errors_block(selection.unknown_names), ""]
    lines += _merge_gate(plan)
    return "\n".join(lines)


def _blind_gates(plan: RunPlan) -> list[str]:
    """A perf stage whose gate cannot fail on throughput (no baseline for its GPU type) says so."""
    if plan.perf_baselined is None:
        return []
    found = [(stage.name.name, blind_gate_line(stage.name, plan.perf_baselined)) for stage in plan.selection.selected]
    blind = [f"- {code(name)}: {line}." for name, line in found if line]
    return [*blind, ""] if blind else []


def _why(step: int, reason: str) -> str:
    return f"step {step}: {code(reason)}"


def _error_text(error: CiToolError) -> str:
    if isinstance(error, ColumnError):
        return f"{error.caret()}\ncolumn {error.col}: {error.headline}"
    return str(error)


def _errors_block(errors: Sequence[CiToolError]) -> str:
    """The first errors with their carets, then the count of the rest (see errors.MAX_SHOWN_ERRORS)."""
    shown, rest = capped(errors)
    return code_block("\n\n".join([*map(_error_text, shown), *([not_shown(rest)] if rest else [])]))


def _catalog_errors(decision: Decision, plan: RunPlan) -> str:
    selection = plan.selection
    if selection.refused:
        return (
            f"@{decision.event.login}, that `/bot run` asks for what the {selection.engine.value} engine cannot "
            f"do:\n\n{_errors_block(selection.refused)}\n\nNothing was started.\n"
        )
    return (
        f"@{decision.event.login}, that `/bot run` does not match the stage catalog:\n\n"
        f"{_errors_block(selection.unknown_names)}\n\nNothing was started. `ci-tool stages list` (or "
        "`jenkins/stages.yml`) lists every stage.\n"
    )


LINE_LIMIT = 4_000  # characters of one reply line: a longer one (a flag value listing thousands of names) is cut
HIDDEN_MARK = "<!-- ci-tool:"  # an invisible line the bot finds its replies by: kept whatever is cut
_SUMMARY_ROOM = 600  # characters kept free for the closing fence, the hidden lines and the summary


def shorten(body: str, *, limit: int = COMMENT_LIMIT, more_at: str = "") -> str:
    """`body` if GitHub takes it, else cut to fit and saying what was cut: each line over LINE_LIMIT characters
    cut short, then the first lines that fit (an open code fence closed), the bot's hidden marker lines, and a
    summary of what was left out. A long reply is shortened, never refused."""
    if len(body) <= limit:
        return body
    lines = body.splitlines()
    hidden = [line for line in lines if line.startswith(HIDDEN_MARK) and len(line) <= LINE_LIMIT]
    cut = [_cut_line(line) for line in lines if line not in hidden]
    long_lines = sum(1 for line, was in zip(cut, (x for x in lines if x not in hidden), strict=True) if line != was)
    where = f" The whole report is in the build's logs: {more_at}" if more_at else ""
    budget = limit - _SUMMARY_ROOM - len(where) - sum(len(line) + 1 for line in hidden)
    kept: list[str] = []
    size = 0
    for line in cut:
        if size + len(line) + 1 > budget:
            break
        kept.append(line)
        size += len(line) + 1
    fence = open_fence(kept)
    while fence and size + len(fence) + 1 > budget:  # a fence as long as the budget: drop lines until it fits
        size -= len(kept.pop()) + 1
        fence = open_fence(kept)
    left = len(cut) - len(kept)
    said = [f"{left:,} of its {len(lines):,} lines are left out"] if left else []
    said += [f"{long_lines:,} line{'s' if long_lines != 1 else ''} over {LINE_LIMIT:,} characters cut short"] * bool(
        long_lines
    )
    summary = (
        f"**Shortened**: this reply had {len(body):,} characters, more than the {limit:,} GitHub takes; "
        f"{'; '.join(said)}.{where}"
    )
    return "\n".join([*kept, *([fence] if fence else []), "", summary, *hidden]) + "\n"


def _cut_line(line: str) -> str:
    if len(line) <= LINE_LIMIT:
        return line
    return line[:LINE_LIMIT] + f" … ({len(line) - LINE_LIMIT:,} characters cut)"


def triggered(reply: str, build_number: int, build_url: str, job: str, *, head_sha: str) -> str:
    """The plan reply once Jenkins named the build, saying that the plan is a preview of what the build runs."""
    preview = (
        f"The plan above is a preview from the pull request as the GitHub API shows it: the build selects again "
        f"on the commit `{head_sha[:12]}`, and its final CI report lists what ran."
    )
    return reply.rstrip("\n") + f"\n\ntriggered: build [{job} #{build_number}]({build_url})\n\n{preview}\n"


def queued(reply: str, queue_url: str) -> str:
    """The plan reply while Jenkins has not named the build yet."""
    note = (
        f"queued: [in Jenkins]({queue_url}), waiting for an executor; the bot follows it when the comment is "
        "handled again."
    )
    return reply.rstrip("\n") + f"\n\n{note}\n"


def cancelled_in_queue(reply: str, queue_url: str) -> str:
    note = f"The [queued build]({queue_url}) was cancelled in Jenkins before it started: nothing ran."
    return reply.rstrip("\n") + f"\n\n{note}\n"


def stopped_lines(cancelled: list[tuple[int, str]], stopped: list[tuple[int, str]], *, reason: str) -> list[str]:
    """One line per cancelled queue item (id, url) and stopped build (number, url)."""
    lines = [f"- stopped build [#{number}]({url}): {reason}" for number, url in stopped]
    return lines + [f"- cancelled queued item [{item}]({url}): {reason}" for item, url in cancelled]


def with_lines(reply: str, lines: list[str], *, none: str) -> str:
    """A reply with a list of what the command did appended (or `none` when it did nothing)."""
    shown = "\n".join(lines) if lines else none
    return reply.rstrip("\n") + "\n\n" + shown + "\n" if shown else reply


def open_fence(lines: Sequence[str]) -> str:
    """The fence of a code block `lines` leave open ("" when none): a block closes only on a fence of its
    own backticks, at least as long (markdown.code_block makes fences longer than any backtick run inside)."""
    fence = ""
    for line in lines:
        stripped = line.lstrip(" ")
        ticks = len(stripped) - len(stripped.lstrip("`"))
        if not fence and ticks >= 3:
            fence = "`" * ticks
        elif fence and ticks >= len(fence) and not stripped.strip("`").strip():
            fence = ""
    return fence


def could_not_start(reply: str, error: CiToolError) -> str:
    """The plan reply when Jenkins could not be reached or refused: what failed, and what to do."""
    note = (
        f"**Could not start the build**: {code(str(error))}\n\n"
        "Nothing is running for this comment: comment `/bot run` again once Jenkins answers."
    )
    return reply.rstrip("\n") + f"\n\n{note}\n"


def could_not_reach(reply: str, command: str, error: CiToolError, *, service: str = "Jenkins") -> str:
    """The reply of a `/bot kill` or `/bot reuse-pipeline` that Jenkins (or `service`) did not let finish."""
    note = (
        f"**Could not finish {code(command)}**: {code(str(error))}\n\n"
        f"Comment {code(command)} again once {service} answers."
    )
    return reply.rstrip("\n") + f"\n\n{note}\n"


def pushed_after_comment(login: str, command: str, head_sha: str, when: str, commented: str) -> str:
    """The refusal when the pull request's head was committed or pushed after the comment (a run, skip,
    reuse-pipeline); `when`: `committed at ...` or `pushed at ... (...)`."""
    return (
        f"@{login}, the head of this pull request, {code(head_sha[:12])}, was {when}, after "
        f"your {code(command)} at {commented}: nothing was done, so that it never applies to a commit you did not "
        f"see.\n\nComment {code(command)} again to apply it to {code(head_sha[:12])}.\n"
    )
