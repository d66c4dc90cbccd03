"""Studies (SPEC §5.4): a grid of recommendations defined in one file, run on a local
process pool or a Ray cluster, stored cell by cell, and seen over two axes."""
