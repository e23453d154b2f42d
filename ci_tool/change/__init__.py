"""The change a pull request makes: one value, built one way (build.py), read from git or the GitHub API, and
the evidence and rules that judge it. Change-based selection (stages/cbts.py, the selection's step that
narrows a catalog) and test ordering (stages/priority.py) read these; the pytest plugin that writes the
touch records (run/touch_recorder.py) runs inside a stage's test processes and stays with stage execution.

    the value (pure)
      value.py          ChangeSet: the changed paths with their statuses, the rule inputs' texts at the base
                        and the head, the commits, the touch evidence; change_of assembles it from rows
      narrowing.py      LineFilter, NarrowPath: which lines of a stage's render a narrowed stage runs

    the builder (I/O)
      build.py          read_change(GitRange | GitHubPull): the one way every command builds the change,
                        touch evidence included

    its readers: pure row parsing beside the I/O that fetches the rows
      git_rows.py       git's name-status rows -> changed paths (pure)
      git_read.py       from_git (`--base`/`--head`), merged_waives, repository_path (runs git)
      github_rows.py    the GitHub API's answers -> changed paths, checked field by field (pure)
      github_read.py    from_github: pulls/N, compare, pulls/N/files, contents (asks GitHub)

    the evidence that judges it
      python_tree.py    a Python file's syntax tree, or why it has none (pure)
      units.py          a file's units (functions, classes, module level) and which a diff edits (pure)
      touch_records.py  TouchEvidence: what the touch records say of each changed file (pure)
      touched_rule.py   the touched rule: per GPU type, the tests whose records ran what the change edits (pure)
      import_reach.py   the test paths that can load a module, from the files' imports (reads git)
      touch_evidence.py the TouchEvidence of a change: records from the history, diffs and readers from git

Layers (tests/ci_tool/test_layers.py): the pure value and evidence modules sit below stages/, which narrows by
them; git_read, import_reach and touch_evidence below run/ (a run merges the pull request's waives); the GitHub
half and the builder above dispatch/. Nothing here imports run/ or commands/.
"""
