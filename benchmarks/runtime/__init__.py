"""What does using tuned configurations in the application cost? Import, first load, lookup, launch."""
