"""Reports anyone can open: the HTML CI report of a run and the static dashboard of the history."""
