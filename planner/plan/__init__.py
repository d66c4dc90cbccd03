"""The plan: its parameters (``PlanParams``), the recommendation request and search, each
option with its reasons, the fleet and cost, card and plan comparisons, and deployment
settings (SPEC §3.5, §5.3)."""
