"""The PR bot: `/bot` comment grammar, help, authorization, approval labels, replies and event decisions."""
