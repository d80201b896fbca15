"""The Bayesian engine's models, which know nothing of trials: the encoding, the covariance
kernels, the Gaussian-process surrogate, the feasibility model and the transfer models."""
