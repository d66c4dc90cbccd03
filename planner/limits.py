"""The ranges of every number a user can give the planner, each written once.

The library's values (``Scenario``, ``Sharing``, ``Criteria``, ``Request``) check their
fields against these bounds; the link codecs (``planner.links.urls``) and the command line take
their ranges from them too, so a value one of them accepts, the others accept as well.
The defaults of a plan's criteria and search are written here too, beside their ranges:
the library's dataclasses (``Criteria``, ``Request``) and the parameter table of the links
(``planner.links.parameters``) both read them, so neither has to import the other.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.units import is_finite


@dataclass(frozen=True)
class Bound:
    """A closed or half-open range of numbers, optionally whole numbers only."""

    low: float
    high: float
    above_low: bool = False
    below_high: bool = False
    whole: bool = False

    def holds(self, value: object) -> bool:
        """Whether ``value`` is a finite number (not a bool) inside the range."""
        if not is_finite(value):
            return False
        # Whole numbers are compared exactly: a float holds integers exactly only to 2**53.
        number: float = value if isinstance(value, int) else float(value)  # type: ignore[arg-type]
        if self.whole and not (isinstance(value, int) or float(number).is_integer()):
            return False
        if number < self.low or (self.above_low and number == self.low):
            return False
        return not (number > self.high or (self.below_high and number == self.high))

    def words(self) -> str:
        """The range in words: ``from 0 to 240``, ``above 0 and at most 600000``."""
        low = f"above {_text(self.low)}" if self.above_low else f"from {_text(self.low)}"
        if self.above_low or self.below_high:
            high = f"below {_text(self.high)}" if self.below_high else f"at most {_text(self.high)}"
            text = f"{low} and {high}"
        else:
            text = f"{low} to {_text(self.high)}"
        return f"a whole number {text}" if self.whole else text


def _text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


MIN_LATENCY_MS = 1e-3
"""The shortest latency the planner believes (1 µs): below it a number is a unit mistake,
not a measurement, wherever latencies enter (files, options, links)."""

# -- one scenario (``planner.sim.scenario``) ---------------------------------------------------
SESSIONS = Bound(1, 4096, whole=True)
FPS = Bound(0, 240, above_low=True)
DURATION_S = Bound(0, 3600, above_low=True)
SEED = Bound(0, 2**63 - 1, whole=True)
JITTER_MS = Bound(0, 60_000)
OVERHEAD_MS = Bound(0, 60_000)
MAX_BATCH = Bound(1, 4096, whole=True)
SPREAD_SIGMA = Bound(0, 1)  # sigma of ln(batch time); 1 puts p90 at 3.6 times the median
PER_REQUEST_MS = Bound(0, 60_000)  # a curve's cost per request of a batch (ms)
MAX_QUEUE_DELAY_US = Bound(0, 60_000_000)
QUEUES = ("newest", "all")  # what a server keeps of a session's frames (``Scenario.queue``)
MAX_QUEUE_SIZE = Bound(1, 10_000_000, whole=True)  # Triton's max_queue_size (0 there: none)
QUEUE_TIMEOUT_US = Bound(0, 3_600_000_000, above_low=True)  # default_timeout_microseconds
TIMEOUT_ACTIONS = ("reject", "delay")  # Triton's timeout_action, the default first
SLO_MS = Bound(MIN_LATENCY_MS, 600_000)
STAGE_MS = Bound(0, 60_000)  # a network delay, a CPU stage (SPEC §5.1)
CPU_WORKERS = Bound(0, 1024, whole=True)  # 0: unlimited, the stages are delays
DEFAULT_STAGE_MS = 0.0  # no network delay, no CPU work: the first wave's worker
DEFAULT_CPU_WORKERS = 0
CROPS = Bound(0, 1000, whole=True)  # crops per frame (or per input) of a cascade's model
CROPS_MEAN = Bound(0, 1000, above_low=True)  # the mean of a Poisson crop count
CROPS_HISTOGRAM = Bound(1, 64, whole=True)  # ``count,share`` pairs in a crop histogram
CASCADE_MODELS = Bound(0, 8, whole=True)  # models after the first in a cascade
MEMORY_MB = Bound(0, 16_777_216)  # 16 TiB in MB of 2**20 bytes: catches a figure in bytes

# -- sharing the card (each mode's settings, ``planner.sim.sharing``) -------------------------
DUTY = Bound(0, 1)
COTENANTS = Bound(0, 32, whole=True)  # how many co-tenants
BUSY_PERIOD_MS = Bound(0.1, 60_000)
DEFAULT_BUSY_PERIOD_MS = 50.0  # a co-tenant's mean busy period
MPS_SHARE = Bound(0, 100, above_low=True)

# -- what every seat must get (``planner.plan.request.Criteria``) --------------------------
BUDGET_MS = Bound(MIN_LATENCY_MS, 600_000)
PERCENTILE = Bound(0, 100, above_low=True, below_high=True)
MIN_FPS = Bound(0, 240)
MAX_OVERWRITTEN = Bound(0, 1)

# -- how hard a recommendation searches, and the fleet (``planner.plan.request.Request``) --
SEEDS = Bound(1, 64, whole=True)
MAX_SESSIONS = Bound(1, 4096, whole=True)  # the largest session count a search considers
"""A search without a largest count of its own goes until the first failure, up to
``MAX_SESSIONS.high`` or the most sessions one run holds (``planner.sim.scenario``)."""
SEARCHES = ("bracketed", "exhaustive")  # cap searches (``planner.plan.search``), default first
PEAK_SESSIONS = Bound(1, 10_000_000, whole=True)
HEADROOM = Bound(0, 10)
PRICE_PER_HOUR = Bound(0, 10_000)

# -- a load test of the reference worker (``planner.validate.loadtest``) ------------------
LOADTEST_CPU_WORKERS = Bound(1, 64, whole=True)  # threads that run its real CPU work
TORCH_THREADS = Bound(1, 1024, whole=True)  # PyTorch's CPU threads during a load test
LOADTEST_RUN = Bound(0, 999_999, whole=True)  # a run's number in a bundle of the worker
RECORD_MS = Bound(-1e13, 1e13)
"""A time in a worker's per-frame records, in ms from any origin: three centuries either
way, so milliseconds since 1970 fit and a figure in microseconds or nanoseconds does not."""
MEASURED_FPS = Bound(0, FPS.high)  # a session's delivered frame rate in a summary (0: starved)
MEASURED_MS = Bound(MIN_LATENCY_MS, 600_000)  # a latency percentile in a summary
LOAD_AVERAGE = Bound(0, 1_000_000)  # the machine's load average a load test records

# -- demand over time (``planner.demand.profiles``) ----------------------------------------
DEMAND_SESSIONS = Bound(0, 10_000_000)  # concurrent sessions in one step of a profile
PROFILE_STEPS = Bound(2, 20_160, whole=True)  # steps in a profile (a week of 30 s steps)
MIN_STEP_MINUTES = 0.1
"""The shortest step of a demand profile (6 s): demand is counted in steps of minutes and
autoscaling takes minutes, so a shorter step is a unit mistake (6e-11 min: hours written
where seconds were meant), and steps of nothing would make a profile's clock meaningless."""
STEP_MINUTES = Bound(MIN_STEP_MINUTES, 10_080)  # at most a week per step
LEAD_TIME_MIN = Bound(0, 10_080)  # autoscaling lead time, at most a week

# -- defaults of a plan's criteria and search (``Criteria``, ``Request``, the links) -------
DEFAULT_BUDGET_MS = 50.0
DEFAULT_PERCENTILE = 99.0
DEFAULT_MIN_FPS = 28.5  # for 30 fps sources (SPEC §3.5)
DEFAULT_OVERHEAD_MS = 0.0
DEFAULT_SEEDS = 8
DEFAULT_DURATION_S = 30.0
DEFAULT_HEADROOM = 0.2
DEFAULT_FPS = 30.0

# -- the uncalibrated range's margin (SPEC §6.2, ``planner.plan.margin``) ------------------
UNCALIBRATED_MARGINS: dict[int, float] = {1: 0.694, 2: 0.674}
"""Each version of the margin: the factor m an uncalibrated cap's low end may fall to
(``min(band low, floor(m x cap))``), derived in ``docs/accuracy.md`` from its corpus judged
leave-one-system-out. Version 1: 50 published multi-stream results of 18 systems
(``tests/data/published_multistream``). Version 2: those and the repository's own load
tests (``tests/data/own_runs``: the reference worker and two runs of the Triton test
server), whose spread asks for a wider range. A version never changes once published:
links and saved plans pin theirs, so a new corpus adds a version."""
UNCALIBRATED_MARGIN = max(UNCALIBRATED_MARGINS)
"""The version a new plan pins; a link or saved plan without one has no margin."""
MARGIN_VERSION = Bound(min(UNCALIBRATED_MARGINS), max(UNCALIBRATED_MARGINS), whole=True)
