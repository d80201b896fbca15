"""The classic, model-free strategies (random, exhaustive, annealing, genetic, differential
evolution, pattern and local search, the AUC bandit) and the moves they share."""
