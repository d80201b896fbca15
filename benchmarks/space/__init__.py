"""How fast is building and querying a search space? (against pyATF)"""
