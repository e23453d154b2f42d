"""Local stage execution: the pytest plugin, JUnit, failure signatures, reruns, stage and pipeline runners."""
