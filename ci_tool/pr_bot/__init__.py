"""A `/bot` dispatch carried out on Jenkins and GitHub: answer.py is what `bot handle` decided and read,
carry_out.py picks the step (and does kill and skip); run.py, follow.py and reuse.py are the other steps;
services.py holds what they post through and reach. On GitHub Actions: on_actions.py picks the step,
actions_run.py (run, follow) and actions_steps.py (kill, reuse-pipeline) take it, through actions_services.py."""
