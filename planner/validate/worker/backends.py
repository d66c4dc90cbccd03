"""What the reference worker runs: the model on the device, and the CPU work around it.

A backend answers four calls, made by ``planner.validate.worker.serve``:

- ``input(session, frame)``: the model's input for a frame when there is no pre work
  (one ready-made tensor per session: the values do not change the timing);
- ``pre(session, frame)``: the pre work of a frame on a CPU thread, returning its input;
- ``run(inputs)``: one batch: stack the inputs, run the model with the device
  synchronised, and return the outputs on the host, for the post work;
- ``post(outputs, row)``: the post work of one frame of a batch on a CPU thread.

``TorchBackend`` is the real thing: the reference model (or a model file) on CUDA, MPS or
the CPU, with synthetic uint8 camera frames of ``camera`` resized and normalised as pre
work and the heatmap's arg-max as post work. ``SleepBackend`` sleeps for the scenario's
batch latencies and stage times instead, for tests and for trying the worker without
PyTorch; it is not a measurement of anything.

PyTorch is imported inside ``TorchBackend`` only.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from planner.errors import BadInput
from planner.units import Milliseconds


class Backend(Protocol):
    """What runs a frame's pre work, a batch and a frame's post work (module docstring)."""

    def input(self, session: int, frame: int) -> Any: ...

    def pre(self, session: int, frame: int) -> Any: ...

    def run(self, inputs: Sequence[Any]) -> Any: ...

    def post(self, outputs: Any, row: int) -> None: ...


class SleepBackend:
    """Batches that take ``latency_ms[b - 1]`` for b frames, pre and post work that take
    ``pre_ms`` and ``post_ms``, all as sleeps (which hold no core). For tests and dry
    runs; it measures nothing."""

    def __init__(
        self,
        latency_ms: Sequence[Milliseconds],
        pre_ms: Milliseconds = 0.0,
        post_ms: Milliseconds = 0.0,
    ) -> None:
        self.latency_ms = tuple(float(v) for v in latency_ms)
        self.pre_ms = float(pre_ms)
        self.post_ms = float(post_ms)

    def input(self, session: int, frame: int) -> Any:
        return (session, frame)

    def pre(self, session: int, frame: int) -> Any:
        time.sleep(self.pre_ms / 1000.0)
        return (session, frame)

    def run(self, inputs: Sequence[Any]) -> Any:
        time.sleep(self.latency_ms[len(inputs) - 1] / 1000.0)
        return list(inputs)

    def post(self, outputs: Any, row: int) -> None:
        time.sleep(self.post_ms / 1000.0)


_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
CAMERA_FRAMES = 8
"""Distinct synthetic camera frames the pre work cycles through (random uint8 images:
making a new one per frame would add work a real worker does not do)."""


class TorchBackend:
    """The model on the device with real CPU work around it (see the module docstring).

    ``model`` is a built module (``planner.measure.harness.load_model``); ``input_shape`` is
    (channels, height, width) of one input; ``camera`` (width, height) turns pre work on:
    a uint8 RGB frame of that size is resized to the input's size (bilinear, antialiased)
    and normalised on the CPU thread that runs the job, and the session's window of the
    last ``channels // 3`` frames is its input. Post work is the arg-max of each of the
    frame's output heatmaps, on the CPU.
    """

    def __init__(
        self,
        model: Any,
        device: str,
        precision: str,
        input_shape: tuple[int, int, int],
        sessions: int,
        camera: tuple[int, int] | None = None,
        seed: int = 0,
    ) -> None:
        from planner.measure.devices import require_torch
        from planner.measure.timing import synchronizer

        torch = require_torch()
        self.torch = torch
        self.device = device
        self.dtype = getattr(torch, _DTYPES[precision])
        self.model = model.to(device=device, dtype=self.dtype) if hasattr(model, "to") else model
        self.input_shape = input_shape
        self.synchronize = synchronizer(torch, device)
        channels, height, width = input_shape
        generator = torch.Generator().manual_seed(seed)
        self.inputs = [
            torch.randn(channels, height, width, generator=generator)
            .to(device=device, dtype=self.dtype)
            for _ in range(sessions)
        ]  # fmt: skip
        self.camera = camera
        self.window = max(channels // 3, 1)
        self._windows: list[list[Any]] = [[] for _ in range(sessions)]
        self._locks = [threading.Lock() for _ in range(sessions)]
        if camera is not None:
            if channels % 3:
                raise BadInput(
                    f"--camera makes RGB frames, but the model takes {channels} channels "
                    "(not a multiple of 3)"
                )
            cam_width, cam_height = camera
            self.frames = [
                torch.randint(0, 256, (3, cam_height, cam_width), generator=generator,
                              dtype=torch.uint8)
                for _ in range(CAMERA_FRAMES)
            ]  # fmt: skip
            self.mean = torch.tensor(IMAGENET_MEAN).view(3, 1, 1)
            self.std = torch.tensor(IMAGENET_STD).view(3, 1, 1)

    def input(self, session: int, frame: int) -> Any:
        return self.inputs[session]

    def pre(self, session: int, frame: int) -> Any:
        torch = self.torch
        _, height, width = self.input_shape
        raw = self.frames[(session + frame) % CAMERA_FRAMES]
        with torch.inference_mode():
            image = raw.unsqueeze(0).to(torch.float32)
            small = torch.nn.functional.interpolate(
                image, size=(height, width), mode="bilinear", antialias=True, align_corners=False
            )[0]
            normalised = (small / 255.0 - self.mean) / self.std
            with self._locks[session]:
                window = self._windows[session]
                window.append(normalised)
                del window[: -self.window]
                frames = [window[0]] * (self.window - len(window)) + window
            return torch.cat(frames, dim=0).to(self.dtype)

    def run(self, inputs: Sequence[Any]) -> Any:
        torch = self.torch
        with torch.inference_mode():
            batch = torch.stack(list(inputs)).to(self.device, non_blocking=False)
            outputs = self.model(batch)
            self.synchronize()
            return outputs.cpu() if self.device != "cpu" else outputs

    def post(self, outputs: Any, row: int) -> None:
        with self.torch.inference_mode():
            heatmaps = outputs[row]
            flat = heatmaps.reshape(heatmaps.shape[0], -1).argmax(dim=1)
            width = heatmaps.shape[-1]
            # The ball's position in each frame of the window (row, column).
            _ = [(int(i) // width, int(i) % width) for i in flat.tolist()]

    def warm_up(self, largest: int, calls: int = 3) -> None:
        """Run every batch size up to ``largest`` a few times (cuDNN autotunes per input
        shape, and the first calls of a shape are slow), and the CPU work too."""
        for size in range(1, largest + 1):
            inputs = [self.inputs[i % len(self.inputs)] for i in range(size)]
            for _ in range(calls):
                outputs = self.run(inputs)
        if self.camera is not None:
            for _ in range(calls):
                self.pre(0, 0)
                self.post(outputs, 0)
            self._windows = [[] for _ in self._windows]

    def stage_costs(self, calls: int = 30) -> tuple[Milliseconds, Milliseconds]:
        """The median time of one pre job and one post job on this machine (ms), for the
        scenario the simulator predicts with; (0, 0) without CPU work."""
        if self.camera is None:
            return 0.0, 0.0
        outputs = self.run([self.inputs[0]])
        pre = _median_ms(lambda: self.pre(0, 0), calls)
        post = _median_ms(lambda: self.post(outputs, 0), calls)
        self._windows = [[] for _ in self._windows]
        return pre, post


def _median_ms(call: Callable[[], object], calls: int) -> Milliseconds:
    samples = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        call()
        samples.append((time.perf_counter_ns() - start) / 1e6)
    return float(statistics.median(samples))
