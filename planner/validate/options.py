"""What a load test is asked to do: ``LoadTestOptions`` (the model and device, the scenario
options, the session counts and policies) as one frozen, validated value, the batch sizes
it measures, and the ``planner loadtest`` command that runs the same options elsewhere."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import attrgetter
from pathlib import Path
from typing import Any

from planner import limits
from planner.curves.curve import parse_resolution
from planner.errors import BadInput
from planner.measure.options import MeasureOptions, ModelSpec
from planner.sim.policies import POLICIES
from planner.sim.scenario import PHASES, Scenario
from planner.sim.stages import WorkerStages
from planner.units import FramesPerSecond, Milliseconds, Seconds

MAX_LOADTEST_SESSIONS = 256
"""The most sessions one load test serves (the table covers batch 1..max(64, this))."""
LOADTEST_STAGES = WorkerStages(cpu_workers=1)
"""A load test's stages unless told: no network delay, and one CPU thread for the camera
work (the CPU work itself is measured, not given)."""


@dataclass(frozen=True)
class LoadTestOptions:
    """What a load test runs: the session counts and policies, the scenario they share,
    the CPU work, and how the curve is measured (``measure``; its precision list holds at
    most one precision, the one the worker runs at).

    ``seeds`` runs each (sessions, policy) on seeds ``seed .. seed + seeds - 1`` (phases
    drawn from each). ``stages`` gives the network delay each way and the CPU threads
    (``cpu_workers``) of the camera work: ``camera`` (``WIDTHxHEIGHT``) turns on real pre
    work (a uint8 camera frame resized and normalised) and post work (the heatmap's
    arg-max) on those threads; without it the worker does no CPU work. What that work
    costs is measured on the machine (``stages_for``), so the stages' ``pre_ms`` and
    ``post_ms`` stay 0 here. ``threads`` sets PyTorch's CPU threads for the test (None:
    leave PyTorch's setting).
    """

    sessions: tuple[int, ...] = (1, 2, 3, 4)
    policies: tuple[str, ...] = ("batch-all", "oldest-first")
    fps: FramesPerSecond = 30.0
    duration_s: Seconds = 10.0
    phases: str = "random"
    seed: int = 0
    seeds: int = 1
    jitter_ms: Milliseconds = 0.0
    stages: WorkerStages = LOADTEST_STAGES
    overhead_ms: Milliseconds = 0.0
    max_batch: int | None = None
    max_queue_delay_us: float | None = None
    slo_ms: Milliseconds | None = None
    camera: str | None = None
    threads: int | None = None
    measure: MeasureOptions = field(default_factory=MeasureOptions)

    def __post_init__(self) -> None:
        problems = []
        sessions = tuple(self.sessions)
        if not sessions:
            problems.append("give at least one session count")
        elif not all(isinstance(n, int) and 1 <= n <= MAX_LOADTEST_SESSIONS for n in sessions):
            problems.append(
                f"session counts must be whole numbers from 1 to {MAX_LOADTEST_SESSIONS}"
            )
        unknown = [p for p in self.policies if p not in POLICIES]
        if unknown or not self.policies:
            problems.append(
                f"policies must be some of {', '.join(POLICIES)}"
                + (f" (not {', '.join(unknown)})" if unknown else "")
            )
        if not limits.FPS.holds(self.fps):
            problems.append(f"fps must be {limits.FPS.words()}")
        if not limits.DURATION_S.holds(self.duration_s):
            problems.append(f"the duration must be {limits.DURATION_S.words()} s")
        if self.phases not in PHASES:
            problems.append(f"phases must be one of {', '.join(PHASES)}")
        if not (isinstance(self.seeds, int) and limits.SEEDS.holds(self.seeds)):
            problems.append(f"seeds must be {limits.SEEDS.words()}")
        if not (isinstance(self.seed, int) and limits.SEED.holds(self.seed)):
            problems.append(f"the seed must be {limits.SEED.words()}")
        elif isinstance(self.seeds, int) and not limits.SEED.holds(self.seed + self.seeds - 1):
            problems.append(
                f"the runs take seeds {self.seed} to {self.seed + self.seeds - 1}; the last "
                f"must be at most {int(limits.SEED.high)}"
            )
        if not isinstance(self.stages, WorkerStages):
            problems.append("stages must be a WorkerStages value (planner.sim.stages)")
        elif self.stages.pre_ms or self.stages.post_ms:
            problems.append(
                "a load test measures what its CPU work costs (give camera and cpu_workers); "
                "pre_ms and post_ms are not options"
            )
        if self.camera is not None:
            try:
                parse_resolution(self.camera)
            except BadInput:
                problems.append(
                    f"the camera must be WIDTHxHEIGHT, e.g. 1280x720, not {self.camera!r}"
                )
            workers = getattr(self.stages, "cpu_workers", None)
            if not limits.LOADTEST_CPU_WORKERS.holds(workers):
                low, high = limits.LOADTEST_CPU_WORKERS.low, limits.LOADTEST_CPU_WORKERS.high
                problems.append(f"CPU work needs {low:g} to {high:g} CPU threads (cpu_workers)")
        threads = self.threads
        if threads is not None and not (
            isinstance(threads, int) and limits.TORCH_THREADS.holds(threads)
        ):
            problems.append(f"PyTorch threads must be {limits.TORCH_THREADS.words()}")
        if len(self.measure.precisions) > 1:
            problems.append("a load test runs at one precision; give one")
        if problems:
            raise BadInput(problems)
        object.__setattr__(self, "sessions", tuple(sorted(set(sessions))))
        object.__setattr__(self, "policies", tuple(dict.fromkeys(self.policies)))
        # Every (policy, count) must make a valid scenario: checked on a stand-in table.
        for policy in self.policies:
            self.scenario((1.0,) * max(64, max(self.sessions)), max(self.sessions), policy, 0)

    @property
    def camera_size(self) -> tuple[int, int] | None:
        return None if self.camera is None else parse_resolution(self.camera)

    @property
    def runs(self) -> int:
        return len(self.sessions) * len(self.policies) * self.seeds

    def stages_for(self, pre_ms: Milliseconds, post_ms: Milliseconds) -> WorkerStages:
        """The stages the runs serve and the simulator predicts, given what the CPU work
        was measured to cost per job: with ``camera``, that work on the options' threads;
        without, no CPU work (and so no threads)."""
        if self.camera is None:
            return replace(self.stages, cpu_workers=0)
        return replace(self.stages, pre_ms=pre_ms, post_ms=post_ms)

    def scenario(
        self,
        table: Sequence[float],
        sessions: int,
        policy: str,
        seed: int,
        pre_ms: Milliseconds = 0.0,
        post_ms: Milliseconds = 0.0,
        spread: Sequence[float] = (),
    ) -> Scenario:
        """The scenario one run serves and the simulator predicts (with the batch-time
        ``spread`` the curve measured, which only the prediction uses)."""
        upto = max(64, sessions)
        return Scenario(
            latency_ms=tuple(table[:upto]),
            spread=tuple(spread[:upto]),
            sessions=sessions,
            policy=policy,
            fps=(self.fps,),
            duration_s=self.duration_s,
            phases=self.phases,  # type: ignore[arg-type]
            seed=seed,
            jitter_ms=self.jitter_ms,
            overhead_ms=self.overhead_ms,
            max_batch=self.max_batch,
            max_queue_delay_us=self.max_queue_delay_us,
            slo_ms=self.slo_ms,
            stages=self.stages_for(pre_ms, post_ms),
        )

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> LoadTestOptions:
        """Options as ``as_dict`` wrote them (a stored load test, a bundle's manifest);
        BadInput when they are not valid options."""
        texts = ("camera", "device", "precision", "resolution", "model_file")
        mistyped = [
            k for k in texts if values.get(k) is not None and not isinstance(values[k], str)
        ]
        if mistyped:
            raise BadInput(f"not the options of a load test ({', '.join(mistyped)}: not text)")
        try:
            model = values.get("model_file")
            shape = values.get("input_shape")
            measure = MeasureOptions(
                model=ModelSpec(
                    path=None if model is None else Path(model),
                    input_shape=None if shape is None else (int(shape[0]), int(shape[1]),
                                                            int(shape[2])),
                ),
                precisions=(values["precision"],) if values.get("precision") else (),
                resolution=values.get("resolution") if model is None else None,
                device=values.get("device"),
            )  # fmt: skip
            return cls(
                sessions=tuple(values["sessions"]),
                policies=tuple(values["policies"]),
                fps=values["fps"],
                duration_s=values["duration_s"],
                phases=values["phases"],
                seed=values["seed"],
                seeds=values["seeds"],
                jitter_ms=values["jitter_ms"],
                # Stored without camera work as 0 threads: the default then.
                stages=WorkerStages(
                    network_ms=values["network_ms"],
                    cpu_workers=values.get("cpu_workers") or LOADTEST_STAGES.cpu_workers,
                ),
                overhead_ms=values["overhead_ms"],
                max_batch=values.get("max_batch"),
                max_queue_delay_us=values.get("max_queue_delay_us"),
                slo_ms=values.get("slo_ms"),
                camera=values.get("camera"),
                threads=values.get("threads"),
                measure=measure,
            )
        except (KeyError, TypeError, ValueError, IndexError, OverflowError) as exc:
            raise BadInput(f"not the options of a load test ({exc})") from None

    def as_dict(self) -> dict[str, Any]:
        m = self.measure
        return {
            "sessions": list(self.sessions),
            "policies": list(self.policies),
            "fps": self.fps,
            "duration_s": self.duration_s,
            "phases": self.phases,
            "seed": self.seed,
            "seeds": self.seeds,
            "jitter_ms": self.jitter_ms,
            "network_ms": self.stages.network_ms,
            "overhead_ms": self.overhead_ms,
            "max_batch": self.max_batch,
            "max_queue_delay_us": self.max_queue_delay_us,
            "slo_ms": self.slo_ms,
            "camera": self.camera,
            "cpu_workers": self.stages.cpu_workers if self.camera else 0,
            "threads": self.threads,
            "device": m.device,
            "precision": m.precisions[0] if m.precisions else None,
            "resolution": m.resolution,
            "model_file": None if m.model.path is None else str(m.model.path),
            "input_shape": None if m.model.input_shape is None else list(m.model.input_shape),
        }


def default_batches(sessions: Sequence[int]) -> tuple[int, ...]:
    """Batch sizes to measure for a load test up to ``max(sessions)``: every size up to
    8, then a few more up to the largest (batches never exceed the session count)."""
    largest = max(sessions)
    sizes = {*range(1, min(largest, 8) + 1), largest}
    sizes |= {b for b in (12, 16, 24, 32, 48, 64, 96, 128, 192) if b < largest}
    return tuple(sorted(sizes))


def command_for(options: LoadTestOptions) -> list[str]:
    """The ``planner loadtest`` command that runs ``options`` (join with ``shlex.join``),
    for the machine that has the device."""
    m = options.measure
    argv = ["planner", "loadtest", "--sessions", ",".join(map(str, options.sessions)),
            "--policies", ",".join(options.policies)]  # fmt: skip
    defaults = LoadTestOptions(measure=MeasureOptions())
    named = ("fps", "duration_s", "phases", "seed", "seeds", "jitter_ms", "stages.network_ms",
             "overhead_ms", "max_batch", "max_queue_delay_us", "slo_ms", "threads")  # fmt: skip
    for name in named:
        value, default = attrgetter(name)(options), attrgetter(name)(defaults)
        if value is not None and value != default:
            flag = name.rpartition(".")[2].replace("_", "-")
            argv += [f"--{flag}", _text(value)]
    if options.camera is not None:
        argv += ["--camera", options.camera, "--cpu-workers", str(options.stages.cpu_workers)]
    if m.model.path is not None:
        argv += ["--model-file", str(m.model.path)]
        if m.model.input_shape is not None:
            argv += ["--input-shape", ",".join(map(str, m.model.input_shape))]
    elif m.resolution != MeasureOptions().resolution:
        argv += ["--resolution", str(m.resolution)]
    if m.device:
        argv += ["--device", m.device]
    if m.precisions:
        argv += ["--precision", m.precisions[0]]
    return argv


def _text(value: object) -> str:
    if isinstance(value, float):
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    return str(value)


def parse_sessions(text: str) -> tuple[int, ...]:
    """``"1,2,4"`` or ``"1-8"`` (or both: ``"1-4,8"``) as session counts."""
    counts: list[int] = []
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        low, dash, high = item.partition("-")
        shown = repr(item[:40])
        try:
            first = int(low)
            last = int(high) if dash else first
        except ValueError:
            raise BadInput(f"--sessions {shown} is not a count or a range such as 1-8") from None
        if not (1 <= first <= last <= MAX_LOADTEST_SESSIONS):
            raise BadInput(f"--sessions {shown}: counts must run from 1 to {MAX_LOADTEST_SESSIONS}")
        counts.extend(range(first, last + 1))
    if not counts:
        raise BadInput("--sessions is empty; give counts such as 1,2,4 or 1-8")
    return tuple(sorted(set(counts)))


SECRET_OPTIONS = ("--header",)
"""Options whose value is ``NAME=VALUE`` with a value never stored or shown (a token)."""


def shown_command(argv: Sequence[str]) -> str:
    """The command as stored and cited (``planner loadtest …``), every ``--header``'s
    value written ``***``: ``--header Authorization=***``."""
    import shlex

    shown: list[str] = []
    secret = False
    for word in argv:
        if secret:
            word = f"{word.partition('=')[0]}=***"
        option, equals, value = word.partition("=")
        if equals and option in SECRET_OPTIONS:
            word = f"{option}={value.partition('=')[0]}=***"
        shown.append(word)
        secret = word in SECRET_OPTIONS
    return shlex.join(["planner", *shown])
