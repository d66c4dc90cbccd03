"""``planner bench``: every benchmark section and their registry. Only the command line
imports this package; product code never does."""
