"""The bot's CI services: Jenkins (python-jenkins) and GitHub (PyGithub), the only modules that talk HTTP,
and the idempotent trigger built on them."""
