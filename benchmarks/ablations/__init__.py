"""Which design choice of the Bayesian engine pays? Failure handling and permutation distances."""
