"""The ``--json`` schemas of the commands that fit, simulate, measure, load-test, run a
study or benchmark, and of those that hand a plan on (link, deploy, report);
``planner.cli.schema`` collects them."""

from __future__ import annotations

from typing import Any

from planner.cli.schema_parts import (
    BOOL,
    INT,
    NUM,
    OBJECT,
    STR,
    array,
    nullable,
    obj,
    with_optional,
)
from planner.cli.schema_store import CURVE

CALIBRATION = with_optional(
    obj({
        "id": STR, "curve_id": STR, "loadtest": nullable(INT), "created_at": nullable(STR),
        "a_ms": NUM, "c_ms": NUM, "d_ms": NUM, "batches": INT, "frames": INT,
        "sizes": array(INT), "note": STR, "description": STR,
    }),
    {"spread_sigma": NUM},
)  # fmt: skip
"""A calibration of a curve; ``spread_sigma`` only where a spread was fitted."""

LATENCY = obj({
    "p50": nullable(NUM), "p90": nullable(NUM), "p99": nullable(NUM), "max": nullable(NUM),
    "frames": INT,
})  # fmt: skip

BREAKDOWN = obj({part: NUM for part in ("network", "pre", "gpu_wait", "gpu", "post", "overhead")})

CPU_STAGE: dict[str, Any] = {
    "busy_fraction": NUM, "jobs": INT, "wait_mean_ms": nullable(NUM), "wait_p99_ms": nullable(NUM),
}  # fmt: skip

SIMULATION = obj({
    "sessions": INT, "policy": STR, "mode": STR, "per_session_fps": array(NUM),
    "mean_fps": NUM, "min_fps": NUM, "max_fps": NUM, "jain": NUM,
    "latency_ms": LATENCY, "e2e_latency_ms": LATENCY, "overwritten_fraction": NUM,
    "expired_fraction": NUM, "gpu_busy_fraction": NUM,
    "batch_histogram": {"type": "object", "propertyNames": {"pattern": "^[0-9]+$"},
                        "additionalProperties": INT},
    "starved_sessions": array(INT), "memory_batch_limit": nullable(INT),
    "stages_ms": nullable(obj({"percentile": NUM, "mean": nullable(BREAKDOWN),
                               "tail": nullable(BREAKDOWN), "tail_frames": INT})),
    "cpu_pool": nullable(obj({"workers": INT, **CPU_STAGE, "pre": obj(CPU_STAGE),
                              "post": obj(CPU_STAGE)})),
    "queue": STR,
    "queue_growth": nullable(obj({"p99_first_third_ms": nullable(NUM),
                                  "p99_last_third_ms": nullable(NUM),
                                  "queued_at_end": INT, "grows": BOOL})),
    "cascade_models": nullable(array(obj({"model": STR, "mean_ms": NUM, "p99_ms": NUM,
                                          "max_ms": NUM, "share": NUM}))),
    "calibration": nullable(CALIBRATION),
})  # fmt: skip

FIT = obj({
    "points": array({"type": "array", "prefixItems": [INT, NUM], "items": False,
                     "minItems": 2}),
    "model": STR,
    "predictions": array(obj({"batch": INT, "latency_ms": NUM, "low_ms": NUM,
                              "high_ms": NUM, "extrapolated": BOOL})),
    "loo": nullable(obj({"fit": NUM, "straight_line": NUM})),
    "measure_next": nullable(INT), "measure_next_basis": STR,
})  # fmt: skip

RUN_FIGURES = obj({
    **{name: nullable(NUM) for name in (
        "min_fps", "mean_fps", "max_fps", "p50_ms", "p99_ms", "e2e_p50_ms", "e2e_p99_ms",
        "overwritten_fraction", "expired_fraction", "gpu_busy_fraction")},
    "frames": INT, "per_session_fps": array(NUM),
    "lateness_p50_ms": nullable(NUM), "lateness_p99_ms": nullable(NUM),
})  # fmt: skip
"""One run's compared figures, None where unknown (an imported summary gives few)."""

LOADTEST = obj({
    "id": nullable(INT), "source": STR, "curve": STR, "curve_label": STR,
    "options": obj({
        "sessions": array(INT), "policies": array(STR), "fps": NUM, "duration_s": NUM,
        "phases": STR, "seed": INT, "seeds": INT, "jitter_ms": NUM, "network_ms": NUM,
        "overhead_ms": NUM, "max_batch": nullable(INT), "max_queue_delay_us": nullable(NUM),
        "slo_ms": nullable(NUM), "camera": nullable(STR), "cpu_workers": INT,
        "threads": nullable(INT), "device": nullable(STR), "precision": nullable(STR),
        "resolution": nullable(STR), "model_file": nullable(STR),
        "input_shape": nullable(array(INT)),
    }),
    "pre_ms": NUM, "post_ms": NUM, "environment": OBJECT, "interrupted": BOOL,
    "runs": array(obj({
        "sessions": INT, "policy": STR, "seed": INT, "loaded": BOOL,
        "measured": RUN_FIGURES, "predicted": RUN_FIGURES, "calibrated": nullable(RUN_FIGURES),
        "figures": array(obj({
            "metric": STR, "label": STR, "unit": STR,
            "measured": nullable({**array(NUM), "minItems": 2, "maxItems": 2}),
            "predicted": nullable(NUM), "error": nullable(NUM), "inside": nullable(BOOL),
            "verdict": STR,
        })),
    })),
    "calibration": nullable(CALIBRATION), "applied_calibration": nullable(CALIBRATION),
    "caps": array(obj({
        "policy": STR, "measured": INT, "predicted": INT, "predicted_low": INT,
        "predicted_high": INT, "largest": INT, "agrees": BOOL, "measured_reason": STR,
        "predicted_reason": STR,
    })),
    "lateness_ms": nullable(obj({"p50": NUM, "p99": NUM, "max": NUM, "arrivals": INT})),
})  # fmt: skip
"""A load test (run, imported or shown); ``planner loadtest --json``."""

SCHEMAS: dict[str, dict[str, Any]] = {
    "fit": FIT,
    "simulate": SIMULATION,
    "measure": array(CURVE),
    "loadtest": LOADTEST,
    "loadtest import": LOADTEST,
    "loadtest show": LOADTEST,
    "loadtest list": array(obj({
        "id": INT, "created_at": STR, "source": STR, "curve_id": STR, "description": STR,
        "interrupted": BOOL, "runs": INT,
    })),
    "study": obj({
        "study": STR, "engine": STR, "workers": INT, "cells": INT, "already_stored": INT,
        "computed": INT, "failed": INT, "simulations": INT, "elapsed_s": NUM,
        "cells_per_s": nullable(NUM), "interrupted": BOOL,
    }),
    "bench": {
        **obj({"machine": obj({"cpu": STR, "cores": INT, "system": STR, "python": STR,
                               "numpy": STR})}),
        "additionalProperties": OBJECT,
    },
    "link": obj({
        "url": STR, "plan_id": nullable(STR), "self_contained": BOOL,
        "params": {"type": "object", "additionalProperties": STR},
    }),
    "deploy": obj({
        "option": STR,
        "files": array(obj({"name": STR, "format": STR, "assumption": STR, "text": STR})),
        "written": array(STR),
    }),
    "report": obj({"headline": STR, "html": nullable(STR), "markdown": nullable(STR)}),
}  # fmt: skip
