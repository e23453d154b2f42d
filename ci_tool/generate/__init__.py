"""Generated CI definitions: the stage catalog -> Jenkins pipelines and GitHub Actions workflows.

context.py   pure: catalog stages -> plain dicts, one builder per target (every decision is made here)
render.py    jinja2 over templates/*.j2 with StrictUndefined; templates only interpolate and loop
targets.py   the registry of generated files (path, template, context builder)
freshness.py pure: generated text vs committed text -> stale files with unified diffs
"""
