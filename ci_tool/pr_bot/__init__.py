"""The pull-request bot: the application that answers a `/bot` comment on a pull request, from the webhook
event to the final CI report, for every engine (Jenkins and GitHub Actions), and keeps the pull request's
approval labels honest. Named for its role beside bot/, which is the comment language it speaks (grammar,
flags, request, help, authorization, reply and status words): bot/ says what a comment means and how the
bot words an answer; pr_bot/ does what it sets going.

The rule (tests/ci_tool/test_layers.py pins it): changing what a comment does is editing this package.
It sits above bot/, dispatch/ (the HTTP clients), run/ and history/, which it calls; bot/ never imports
it; nothing but the bot's verb modules do: commands/bot.py only turns options into the values this package
takes (handle.py, preview.py, settings.py) and builds the clients (settings.BotSettings), and
commands/bot_labels.py does the same for the approval-label guard (label_actions.py).

    handle.py            the flow of `bot handle`: decide -> read -> preview -> reply -> carry out
    read.py              the clients, the pull request and its change
    preview.py           the plan on the pull request's head the reply previews (and `bot plan`'s)
    settle.py            what the change read and the plan change about the decision
    carry_out.py         run, kill, skip, reuse-pipeline: one flow, on each engine the project runs
      start.py           /bot run on any engine: claimed, one reply, started once (the engine's part: Starting)
      pull_runs.py       /bot kill and reuse-pipeline on any engine (the engine's part: PullRuns)
      follow.py          --wait on any engine: the CI report and the final status (FollowedRuns)
      on_jenkins.py      Jenkins: its builds as the flows reach them; run.py: its Starting (the trigger)
      on_actions.py      GitHub Actions: its runs; actions_run.py: its Starting (the dispatch)
      services.py        the posts on the pull request (Replies) and Jenkins' reach; actions_services.py: Actions'
    ci_report.py         the CI report posted when a followed build or workflow run ends
    labels.py, label_event.py, label_actions.py   the approval-label guard (`bot labels`): an approving review
                         adds `ci: full pre-merge approved`, a label anyone else applied is removed
"""
