"""The reference worker: serves a scenario's sessions for real on the local device
(SPEC §5.2), so the simulator's predictions can be checked against a measurement.

- ``planner.validate.worker.schedule``: the scenario's arrival schedule, the simulator's own;
- ``planner.validate.worker.serve``: the real-time worker (arrivals, the CPU pool, the device
  loop that asks the simulator's policy code for every batch);
- ``planner.validate.worker.backends``: what runs on the device and the CPU (PyTorch's reference
  model with real pre and post work, or sleeps for tests and dry runs);
- ``planner.validate.worker.frames``: what the worker records, one row per frame, and the same
  records as the simulator's ``Records`` so that one function summarises both;
- ``planner.validate.worker.checks``: the consistency checks every record set must pass.

Nothing here imports PyTorch at import time, and nothing needs SciPy, DuckDB or Numba:
on a bare GPU image with PyTorch and NumPy the policies run as plain Python
(``planner.sim.jit``), with the same decisions.
"""
