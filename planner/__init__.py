"""GPU Seat Planner: how many live camera sessions can one GPU hold?

The library behind the ``planner`` command and the dashboard. It stores measured batch
curves (batch size -> latency) in DuckDB, fits whole curves from sparse points with an
uncertainty band, simulates sessions under each scheduling policy and GPU sharing mode,
and recommends a seat cap. It never imports a user interface toolkit.
"""

__version__ = "0.1.0"
