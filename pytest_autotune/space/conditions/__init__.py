"""The constraint language: restriction strings and callables checked, rewritten, bounded and
evaluated over numpy arrays (the conditions a chain of trees is built from)."""
