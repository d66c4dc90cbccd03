"""The planner checked against reality (SPEC §5.2): the reference worker, load tests on
the local device, imports of other workers' load tests, measured against predicted, their
storage, and the accuracy report."""
