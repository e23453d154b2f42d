"""The `/bot` comment language: grammar and flags, help, authorization, event decisions, run plans, replies
and statuses. What a comment sets going, the approval-label guard included, is the application in pr_bot/."""
