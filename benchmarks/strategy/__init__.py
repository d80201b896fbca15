"""How well does each search strategy find the optimum, and what does the Bayesian engine know?

The replayed GPU spaces tuned by every strategy (ours and Kernel Tuner's), the quality checks read
from its JSON, the surrogate's view after a budget, and how hard each landscape is.
"""
