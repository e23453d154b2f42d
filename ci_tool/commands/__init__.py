"""One module per CLI verb: load -> compute -> render -> write -> exit code."""
