"""How many crops a model of a cascade finds per input (SPEC §6.3), and the run's draws.

A cascade's next model runs on the objects the previous one found. The count per input is
``Crops``: fixed (``k``), or drawn for each input from a Poisson law with a mean, or from
an empirical histogram of ``count,share`` pairs (the shares need not add up to one: they
are weights, kept as fractions to six significant digits). ``text`` writes a value as one
token and ``parse_crops`` reads it back, so
the command line, links and saved plans carry the same words: ``3``, ``poisson=2.5``,
``hist=0:0.2,1:0.5,4:0.3``.

Draws come from the scenario's crop stream (``planner.sim.streams.CROP_STREAM``), one
child per model of the chain, so adding a model or changing a later model's law never
changes the counts of the earlier ones, and nothing else of the run draws from it. Each
input's count is the inverse of the law's cumulative distribution at one uniform draw,
the inputs taken in order (frames by their global index, a frame's crops after the
previous frame's), so an array drawn for more frames starts with the one drawn for fewer
and one cached array serves every run of a seed.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from planner import limits
from planner.errors import BadInput
from planner.sim.streams import CROP_STREAM

KINDS = ("fixed", "poisson", "hist")


@dataclass(frozen=True)
class Crops:
    """Crops per input: ``k`` (fixed), a Poisson ``mean``, or a histogram ``shares`` of
    ``(count, share)`` pairs, counts increasing, shares adding up to one."""

    kind: str = "fixed"
    k: int = 1
    mean: float = 0.0
    shares: tuple[tuple[int, float], ...] = ()

    def __post_init__(self) -> None:
        problems = self.problems()
        if problems:
            raise BadInput(problems)
        if self.kind == "hist":
            merged: dict[int, float] = {}
            for count, share in self.shares:
                merged[int(count)] = merged.get(int(count), 0.0) + float(share)
            # Shares kept to six significant digits, as written: a histogram read back
            # from its text is the same value (one already adding up to one within the
            # rounding is not divided again).
            total = sum(merged.values())
            scale = 1.0 if abs(total - 1.0) < 1e-4 else total
            object.__setattr__(
                self,
                "shares",
                tuple((c, float(f"{merged[c] / scale:.6g}")) for c in sorted(merged)),
            )
        if self.kind != "fixed":
            object.__setattr__(self, "k", 1)
        if self.kind != "poisson":
            object.__setattr__(self, "mean", 0.0)
        else:
            object.__setattr__(self, "mean", float(self.mean))
        if self.kind != "hist":
            object.__setattr__(self, "shares", ())

    def problems(self) -> list[str]:
        if self.kind not in KINDS:
            return [f"crops per frame must be a count, poisson=MEAN or hist=..., not {self.kind!r}"]
        if self.kind == "fixed" and not limits.CROPS.holds(self.k):
            return [f"crops per frame must be {limits.CROPS.words()}"]
        if self.kind == "poisson" and not limits.CROPS_MEAN.holds(self.mean):
            return [f"the mean crops per frame must be {limits.CROPS_MEAN.words()}"]
        if self.kind == "hist":
            if not limits.CROPS_HISTOGRAM.holds(len(self.shares)):
                return [
                    f"a crop histogram needs {limits.CROPS_HISTOGRAM.words()} count,share pairs"
                ]
            for pair in self.shares:
                if len(pair) != 2 or not limits.CROPS.holds(pair[0]):
                    return [f"each crop count of a histogram must be {limits.CROPS.words()}"]
                if not (math.isfinite(float(pair[1])) and float(pair[1]) >= 0):
                    return ["each share of a crop histogram must be a number of at least 0"]
            if not sum(float(p[1]) for p in self.shares) > 0:
                return ["the shares of a crop histogram must not all be 0"]
        return []

    @property
    def fixed(self) -> bool:
        return self.kind == "fixed"

    @property
    def expected(self) -> float:
        """The mean count per input."""
        if self.kind == "fixed":
            return float(self.k)
        if self.kind == "poisson":
            return self.mean
        return sum(c * s for c, s in self.shares)

    @property
    def most(self) -> int:
        """The largest count a draw can give."""
        if self.kind == "fixed":
            return self.k
        if self.kind == "poisson":
            return _poisson_top(self.mean)
        return max(c for c, _ in self.shares)

    @property
    def text(self) -> str:
        """One token: ``3``, ``poisson=2.5``, ``hist=0:0.2,1:0.8``."""
        if self.kind == "fixed":
            return str(self.k)
        if self.kind == "poisson":
            return f"poisson={self.mean:g}"
        return "hist=" + ",".join(f"{c}:{s:.6g}" for c, s in self.shares)

    @property
    def words(self) -> str:
        if self.kind == "fixed":
            return f"{self.k} crop{'s' if self.k != 1 else ''} per input"
        if self.kind == "poisson":
            return f"Poisson crops, mean {self.mean:g} per input"
        return f"crops from a histogram, mean {self.expected:.3g} per input"

    def counts(self, uniform: np.ndarray) -> np.ndarray:
        """The count of each input whose uniform draw is ``uniform`` (inverse CDF)."""
        if self.kind == "fixed":
            return np.full(uniform.size, self.k, np.int32)
        values, cdf = _inverse(self)
        index = np.searchsorted(cdf, uniform, side="right")
        np.minimum(index, values.size - 1, out=index)
        return values[index]


ONE_CROP = Crops()
"""One input per input of the model before (the default)."""


def parse_crops(text: str) -> Crops:
    """``3``, ``poisson=2.5`` or ``hist=0:0.2,1:0.5`` (a histogram's pairs given inline)."""
    token = text.strip()
    if token.startswith("poisson="):
        try:
            mean = float(token[len("poisson=") :])
        except ValueError:
            raise BadInput(f"the mean of poisson={token[8:]!r} is not a number") from None
        return Crops("poisson", mean=mean)
    if token.startswith("hist="):
        return Crops("hist", shares=parse_shares(token[len("hist=") :], pair=":", sep=","))
    try:
        k = int(token)
    except ValueError:
        raise BadInput(
            f"crops per frame {token!r} must be a count, poisson=MEAN or hist=COUNT:SHARE,..."
        ) from None
    return Crops("fixed", k=k)


def parse_shares(text: str, *, pair: str = ",", sep: str = "\n") -> tuple[tuple[int, float], ...]:
    """``count,share`` pairs (a file's lines, by default; ``#`` starts a comment)."""
    shares: list[tuple[int, float]] = []
    for number, raw in enumerate(text.split(sep), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = [p.strip() for p in line.split(pair)]
        try:
            if len(parts) != 2:
                raise ValueError
            count, share = int(parts[0]), float(parts[1])
        except ValueError:
            raise BadInput(
                f"crop histogram entry {number} ({line!r}) is not count{pair}share"
            ) from None
        shares.append((count, share))
    if not shares:
        raise BadInput("the crop histogram has no count,share pairs")
    return tuple(shares)


def chain_items(crops: tuple[Crops, ...], seed: int, frames: int) -> np.ndarray:
    """Row j: how many inputs the chain's (j+2)-th model gets from each of ``frames``
    frames (int32, shape (models, frames)); prefix-stable in ``frames``."""
    if frames > _CACHED:
        return _items(crops, seed, frames)
    return _cached(crops, seed, 1 << max(10, int(frames - 1).bit_length()))[:, :frames]


_CACHED = 1 << 20


@functools.lru_cache(maxsize=32)
def _cached(crops: tuple[Crops, ...], seed: int, frames: int) -> np.ndarray:
    return _items(crops, seed, frames)


def _items(crops: tuple[Crops, ...], seed: int, frames: int) -> np.ndarray:
    out = np.empty((len(crops), frames), np.int32)
    inputs = np.ones(frames, np.int64)  # the first model's inputs: one per frame
    for j, law in enumerate(crops):
        if law.fixed:
            made = inputs * law.k
        else:
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(CROP_STREAM, j)))
            total = int(inputs.sum())
            counts = law.counts(rng.random(total))
            if total == frames:  # one input per frame
                made = counts.astype(np.int64)
            else:
                owner = np.repeat(np.arange(frames), inputs)
                made = np.bincount(owner, weights=counts, minlength=frames).astype(np.int64)
        out[j] = made
        inputs = made
    return out


@functools.lru_cache(maxsize=64)
def _inverse(crops: Crops) -> tuple[np.ndarray, np.ndarray]:
    """The counts and their cumulative probabilities."""
    if crops.kind == "hist":
        values = np.array([c for c, _ in crops.shares], np.int32)
        cdf = np.cumsum([s for _, s in crops.shares])
    else:
        top = _poisson_top(crops.mean)
        values = np.arange(top + 1, dtype=np.int32)
        logs = [k * math.log(crops.mean) - crops.mean - math.lgamma(k + 1) for k in range(top + 1)]
        cdf = np.cumsum(np.exp(logs))
    cdf = cdf / cdf[-1]
    return values, cdf


def _poisson_top(mean: float) -> int:
    """A count the Poisson law exceeds with a probability below 1e-15 (its tail is cut)."""
    return math.ceil(mean + 12.0 * math.sqrt(mean) + 20.0)
