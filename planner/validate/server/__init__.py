"""Load tests against a KServe v2 inference server (NVIDIA Triton, or any server that
speaks the protocol over gRPC or HTTP): the server's own batch curve, session traffic at
the simulator's capture times, and the prediction of the same scenarios.

- ``planner.validate.server.target``: the ``grpc://HOST:PORT`` or ``http://HOST:PORT``
  a load test is pointed at;
- ``planner.validate.server.client``: the connection (``tritonclient``'s asyncio clients),
  the model as the server describes it, one inference, the server's statistics;
- ``planner.validate.server.statistics``: the server's model statistics and what changed
  between two readings (frames, executions, the batch sizes it ran);
- ``planner.validate.server.curves``: the batch curve measured two ways (one request of b
  frames, and b requests of one frame at once) and the per-request cost between them;
- ``planner.validate.server.traffic``: one run's sessions sent at their capture times,
  every frame one request, and what became of each;
- ``planner.validate.server.loadtest``: the whole test, measured against predicted.

``tritonclient`` (the ``server`` extra) is imported only when a server load test runs.
"""
