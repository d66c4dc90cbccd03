"""Measuring a batch curve on the local device (SPEC §3.7): the options, the device, the
reference model, timing, the sweep itself, and one sweep per card type of a Ray cluster.
PyTorch is imported inside functions only."""
