"""The decode stage as the engines take it (``planner.sim.decode``): the times each frame
reaches the CPU stages, which the loops take as their frames' times, and the frame
records put back in terms of the worker's arrival (capture + network)."""

from __future__ import annotations

import dataclasses

import numpy as np

from planner.sim.arrivals import Arrivals
from planner.sim.decode import decoded_times
from planner.sim.records import Records
from planner.sim.scenario import Scenario


def loop_times(scenario: Scenario, capture: Arrivals) -> np.ndarray:
    """The times the loops take as the frames' capture times: the capture times, or with
    decoder engines, when each frame leaves them (``planner.sim.decode.decoded_times``,
    the network delay included, so the loops run with none: ``Scenario.engine_stages``)."""
    decoding = scenario.decode
    if decoding is None or decoding.on_cpu:
        return capture.times
    replaces = scenario.queue == "newest" and not decoding.every_frame
    return decoded_times(
        decoding, capture.times, capture.start, scenario.stages.network_ms,
        scenario.duration_ms, replaces,
    )  # fmt: skip


def arrived_at_worker(records: Records, scenario: Scenario, capture: Arrivals) -> Records:
    """``records`` with each frame's arrival at the worker (capture + network) where the
    loop saw its time out of the decoders instead; unchanged otherwise."""
    decoding = scenario.decode
    if decoding is None or decoding.on_cpu:
        return records
    rows = capture.start[records.frame_session] + records.frame_index
    arrival = capture.times[rows] + scenario.stages.network_ms
    return dataclasses.replace(records, frame_arrival=arrival)
