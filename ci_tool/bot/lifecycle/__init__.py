"""A `/bot` dispatch carried out on Jenkins and GitHub: carry_out.py decides which step runs; run.py,
follow.py and reuse.py are the steps; services.py holds what they post through and reach."""
