"""The planner checked against reality (SPEC §5.2): the reference worker, load tests on
the local device and against a KServe v2 server (``planner.validate.server``), imports of
other workers' load tests, measured against predicted, their storage, the accuracy
report, and the files a load test writes on request (``files``: the CSV of frames and
the report). A load test as people read it is its view, ``planner.views.loadtest``."""
