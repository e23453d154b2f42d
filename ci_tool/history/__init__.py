"""The SQLite history: runs, stage results and per-test outcomes and durations (store), and what is read
back from it: recent runs, slowest and flaky tests, `.test_durations` export (queries)."""
