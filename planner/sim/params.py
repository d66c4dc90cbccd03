"""Where each value sits in a policy's ``params`` array (``planner.sim.policies.policy_params``),
named once for the newest-only kernels, the ``queue = all`` decisions and the engines."""

MAX_BATCH = 0
"""The largest batch of max-batch and triton (their ``max_batch``)."""
DELAY_MS = 1
"""How long triton waits to fill a batch (its ``max_queue_delay_us``, in ms)."""
SLO_MS = 2
"""The objective of aimd and deadline (their ``slo_ms``, GPU side)."""
LIMIT = 3
"""The batch limit: the largest batch that fits in memory (+inf: none)."""
