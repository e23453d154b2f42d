"""The history, a SQLite file or a PostgreSQL database (where: locator; each behind backend: sqlite_backend,
postgres_backend): runs, stage results and per-test outcomes and durations (store, its schema and
migrations in schema), every row read back as a checked typed value (rows, records), what is read back
(queries, flakiness, overview, perf_results, reuse, touches, ledger), a run's records kept in its folder
when the history cannot take them (recorder, unrecorded), and the sweep of runs whose owner died (owners)."""
