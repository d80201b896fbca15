"""The example kernels, each a tunable test (a package, so that same-named test files here and in
``cuda/`` collect with pytest's default import mode wherever the folder is copied)."""
