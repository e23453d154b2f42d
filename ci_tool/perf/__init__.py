"""Perf sanity: config-driven cases, their metrics, baselines per GPU type, the gate, trends."""
