"""The chain of trees' building blocks: independent groups, their level order, each parameter's
filtered values and the trees built level by level (``space/chain.py`` puts them together)."""
