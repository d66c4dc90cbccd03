"""Demand over time: concurrent sessions per step of a day or a week (a profile), its
built-in shapes and CSV form, and the GPUs a profile needs at a given number of seats per
card, fixed or autoscaled (SPEC §5.3). Plain arithmetic; the plan applies it."""
