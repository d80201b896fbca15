"""The tuning library: the loop, abort conditions, the journal, trial isolation. No pytest."""
