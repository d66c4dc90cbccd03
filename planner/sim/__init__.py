"""The session simulator (SPEC §3.3, §3.4, §5.1): the scenario, arrivals, scheduling
policies, sharing modes, the worker's pipeline and memory, both engines, many runs at once
(ensemble, sweep), their records and results, bounded work, and how a calibration changes
a scenario.

It knows curves only as latency tables and imports nothing that plans, links, reports,
validates, studies or benchmarks (``pyproject.toml``'s import contracts).
"""
