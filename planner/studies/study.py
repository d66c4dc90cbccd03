"""Studies: a grid of recommendations over curves, criteria, sharing modes and more
(SPEC §5.4), defined in one file and stored cell by cell.

A study file (TOML or JSON; ``examples/study.toml``) names the curves, the plan
parameters every cell shares, and the axes whose every combination is a cell::

    name = "ball-detector on every card"
    [curves]
    filters = [{ model = "ball-detector", precision = "fp16" }]   # and/or ids = [...]
    [fixed]
    seeds = 4
    peak_sessions = 200
    [axes]
    budget_ms = [30, 50, 80]
    modes = ["exclusive", "mps"]
    policies = ["all", "batch-all"]
    [prices]                                # USD per hour, by the curves' card
    l4 = 0.80
    h100-80gb = 3.50

Fixed values and axes are plan parameters by their link names (``planner.links.urls``), read
by the same codecs as links and the command line, so a study accepts exactly what a plan
does; ``modes`` and ``policies`` take one name per cell (``policies = "all"`` plans every
policy). ``crops``, an axis of its own, varies the crops per frame of the chain fixed
under ``cascade``: a value is one crop law (``3``, ``"poisson=2.5"``, ``"hist=0:0.2,2:0.8"``)
for the chain's first model after the curve's, or a list of laws, one per model of the
chain; a cell is the plan of the cascade with those crops (the same cell as that cascade
given as an axis). The decode stage's parameters are axes like any other
(``decode_ms = [2, 4]``, ``decoders = [1, 3]``, ``codec``, ``cpu_decode_ms``); since a study
file has no empty value, ``"none"`` among ``decode_ms`` or ``cpu_decode_ms`` values leaves
it unset (no decode stage: the cell of a study without the axis) and ``"card"`` among
``decoders`` values takes the card's or MIG profile's count from the catalogue.
``[prices]`` gives each card its hourly price, so that cards compare at their own prices:
a cell takes its curve's card's price unless ``price_per_hour`` is fixed or an axis (then
that one); without either, the card's stored price (``planner cards``), if any. A cell
is keyed by a hash of its plan parameters, the planner's version and the calibration
used, so a cell is computed once however many studies contain it.

Each curve's cells use its newest calibration from a load test (SPEC §5.2), as a plan on
the Plan page does, and pin it by id; a curve measured on a server (``planner loadtest
--target``) plans with that server's batcher settings unless the study gives
``max_batch`` or ``max_queue_delay_us`` (fixed or as axes), and its cells pin them.
``calibration = "none"`` among the fixed values plans every cell uncalibrated, and a
calibration made later makes new cells rather than changing stored ones.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import tomllib
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from planner import __version__, limits
from planner.curves.batch_cost import has_spread
from planner.curves.cards import clean_price
from planner.curves.curve import MAX_TEXT, Curve, clean_text
from planner.demand.fleet import DemandFleet
from planner.demand.profiles import SHAPES
from planner.errors import BadInput, NotFound
from planner.links.codecs import cascade_entry
from planner.links.parameters import PARAMETERS, schema
from planner.links.urls import saved_params
from planner.plan.outcomes import Recommendation
from planner.plan.params import PlanParams
from planner.plan.resolve import pin_batcher
from planner.sim.crops import parse_crops
from planner.sim.policies import POLICIES
from planner.spans import Span, fields, int_fields
from planner.store.calibrations import latest_calibration
from planner.store.repository import Store

MAX_CELLS = 100_000
"""The most cells one study may have (a 20-model x 8-card x 4-mode x 10-budget x 3-floor
grid is 19,200); larger grids are split into several studies."""
MAX_FILE_BYTES = 1 << 20
MAX_DESCRIPTION = 2000
"""The longest description of a study: a few lines of why, shown under its name."""

_TOP_KEYS = {"name", "description", "curves", "fixed", "axes", "prices"}
_CURVE_KEYS = {"ids", "filters"}
_FILTER_KEYS = ("model", "card", "precision", "resolution")
_CURVE_PARAMS = {"curve", "points", "model", "card", "precision", "resolution"}
CROPS_AXIS = "crops"
"""The axis over the crops per frame of the study's chain of models (a study's own key:
no plan parameter has the name)."""
UNSET_WORDS = {"decode_ms": "none", "cpu_decode_ms": "none", "decoders": "card"}
"""Axis values that leave a plan parameter unset, as a link does by leaving it out: no
decode stage, no CPU decode time, the catalogue's decoder count."""


@dataclass(frozen=True)
class Study:
    """A validated study definition: its name, curve selection, fixed values and axes."""

    name: str
    description: str
    curve_ids: tuple[str, ...]
    curve_filters: tuple[tuple[tuple[str, str], ...], ...]
    fixed: tuple[tuple[str, Any], ...]
    axes: tuple[tuple[str, tuple[Any, ...]], ...]
    prices: tuple[tuple[str, float], ...] = ()
    """USD per hour by card name (``[prices]``), sorted by card."""

    def as_dict(self) -> dict[str, Any]:
        """The definition as the study file would write it (stored with the study; a
        study without prices reads back exactly as one stored before they existed)."""
        prices = {"prices": dict(self.prices)} if self.prices else {}
        return {
            "name": self.name,
            "description": self.description,
            "curves": {
                "ids": list(self.curve_ids),
                "filters": [dict(f) for f in self.curve_filters],
            },
            "fixed": {k: _plain(v) for k, v in self.fixed},
            "axes": {k: [_plain(v) for v in values] for k, values in self.axes},
            **prices,
        }

    @property
    def axis_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.axes)


@dataclass(frozen=True)
class Cell:
    """One combination: its key, its coordinates on the study's axes and its plan, or,
    for a combination no plan can be made of, the problems that say why."""

    key: str
    curve_id: str
    coordinates: tuple[tuple[str, Any], ...]
    params: PlanParams
    problems: tuple[str, ...] = ()


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


# ---------------------------------------------------------------------------------------
# Reading a study file.


def read_study(path: str | Path, data: bytes | None = None) -> Study:
    """A study from a TOML or JSON file (by its suffix; ``data`` instead of reading it).

    BadInput lists every problem: unknown keys, empty axes, values a plan would refuse,
    a grid over ``MAX_CELLS`` (checked when the curves are known, by ``cells``).
    """
    name = Path(path).name
    if data is None:
        try:
            with open(path, "rb") as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise BadInput(f"cannot read the study file {name}: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise BadInput(f"the study file {name} is over {MAX_FILE_BYTES >> 20} MiB")
    try:
        text = data.decode("utf-8")
        if str(path).lower().endswith(".json"):
            raw = json.loads(text, parse_int=_json_int)
        else:
            raw = tomllib.loads(text)
    except UnicodeDecodeError:
        raise BadInput(f"the study file {name} is not UTF-8 text") from None
    except ValueError as exc:
        # TOML's reader converts every integer, and Python refuses one of over 4,300 digits.
        if "digits" not in str(exc):
            raise
        raise BadInput(
            f"the study file {name} has a whole number of thousands of digits; no plan "
            "parameter is that large"
        ) from None
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise BadInput(f"the study file {name} does not parse: {str(exc)[:200]}") from None
    return study_from_dict(raw)


def _json_int(text: str) -> int | float:
    # Python refuses to convert integers of more than 4,300 digits; no plan parameter is
    # that long, so a float (infinite if need be) lets the parameter's check name it.
    return int(text) if len(text) <= 20 else float(text)


def study_from_dict(raw: object) -> Study:
    """A study from the parsed contents of a study file (BadInput lists every problem)."""
    problems: list[str] = []
    if not isinstance(raw, Mapping):
        raise BadInput("a study file is a table of name, curves, fixed and axes")
    for key in raw:
        if key not in _TOP_KEYS:
            problems.append(f"unknown key {key!r} (a study has {', '.join(sorted(_TOP_KEYS))})")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        problems.append(f"name: give the study a name (one line, at most {MAX_TEXT} characters)")
        name = ""
    else:
        try:  # the rule of every other name: one line, no control characters, 200 at most
            name = clean_text(name, "name") or ""
        except BadInput as exc:
            problems.extend(
                f"{p} (one line of at most {MAX_TEXT} characters)" for p in exc.problems
            )
            name = ""
    description = raw.get("description", "")
    if not isinstance(description, str):
        problems.append("description: must be text")
        description = ""
    elif len(description) > MAX_DESCRIPTION:
        problems.append(f"description: is longer than {MAX_DESCRIPTION:,} characters")
        description = ""
    elif any(ch not in "\n\t" and unicodedata.category(ch).startswith("C") for ch in description):
        problems.append("description: contains control characters (lines and tabs are fine)")
        description = ""
    ids, filters = _curves(raw.get("curves"), problems)
    fixed = _fixed(raw.get("fixed", {}), problems)
    axes = _axes(raw.get("axes", {}), problems)
    for key in dict(fixed).keys() & dict(axes).keys():
        problems.append(f"{key}: is both fixed and an axis; give it in one place")
    if CROPS_AXIS in dict(axes) and "cascade" not in dict(fixed):
        problems.append(
            "axes.crops: varies the crops per frame of a chain of models; give the chain "
            'under [fixed], such as cascade = ["ID:1"]'
        )
    prices = _prices(raw.get("prices", {}), problems)
    if prices and "price_per_hour" in dict(fixed).keys() | dict(axes).keys():
        problems.append(
            "prices: price_per_hour is given too; give one price for every card "
            "(price_per_hour) or a price per card ([prices]), not both"
        )
    if problems:
        raise BadInput(problems)
    return Study(name.strip(), description, ids, filters, fixed, axes, prices)


def _prices(raw: object, problems: list[str]) -> tuple[tuple[str, float], ...]:
    """``[prices]``: card name = USD per hour, each read as a card's price is."""
    if not isinstance(raw, Mapping):
        problems.append("prices: a table of cards and hourly prices, such as l4 = 0.80")
        return ()
    out = []
    for card, price in raw.items():
        try:
            name = clean_text(card, "card") or ""
            if isinstance(price, bool) or not isinstance(price, int | float):
                raise BadInput(f"price {price!r} is not a number")
            out.append((name, clean_price(price)))
        except BadInput as exc:
            problems.extend(f"prices.{str(card)[:40]}: {p}" for p in exc.problems)
    return tuple(sorted(out))


def _curves(
    raw: object, problems: list[str]
) -> tuple[tuple[str, ...], tuple[tuple[tuple[str, str], ...], ...]]:
    if not isinstance(raw, Mapping):
        problems.append("curves: give ids = [...] and/or filters = [{ model = ... }]")
        return (), ()
    for key in raw:
        if key not in _CURVE_KEYS:
            problems.append(f"curves: unknown key {key!r} (ids, filters)")
    ids_raw, filters_raw = raw.get("ids", []), raw.get("filters", [])
    ids: list[str] = []
    if not isinstance(ids_raw, list) or not all(isinstance(i, str) for i in ids_raw):
        problems.append("curves.ids: a list of curve ids")
    else:
        ids = [i.strip() for i in ids_raw]
    filters: list[tuple[tuple[str, str], ...]] = []
    if not isinstance(filters_raw, list):
        problems.append('curves.filters: a list of tables such as { model = "m", card = "c" }')
    else:
        for position, item in enumerate(filters_raw, start=1):
            if not isinstance(item, Mapping) or not item:
                problems.append(f"curves.filters[{position}]: a table of {', '.join(_FILTER_KEYS)}")
                continue
            unknown = [k for k in item if k not in _FILTER_KEYS]
            if unknown:
                problems.append(
                    f"curves.filters[{position}]: unknown key {unknown[0]!r} "
                    f"({', '.join(_FILTER_KEYS)})"
                )
                continue
            if not all(isinstance(v, str) and v.strip() for v in item.values()):
                problems.append(f"curves.filters[{position}]: values are names (text)")
                continue
            filters.append(tuple(sorted((k, str(v).strip()) for k, v in item.items())))
    if not ids and not filters and not any("curves" in p for p in problems):
        problems.append("curves: name at least one curve (ids) or filter")
    return tuple(ids), tuple(filters)


def _value(key: str, value: Any, where: str, problems: list[str]) -> Any:
    """A plan parameter's value read by its link codec; a problem names ``where``."""
    if key == "policies":
        if value == "all":
            return tuple(POLICIES)
        value = [value] if isinstance(value, str) else value
    if key == "modes" and isinstance(value, str):
        value = [value]
    codec = PARAMETERS[key].codec
    try:
        return codec.check(tuple(value) if isinstance(value, list) else value)
    except BadInput as exc:
        problems.extend(f"{where}: {p}" for p in exc.problems)
        return None


def _fixed(raw: object, problems: list[str]) -> tuple[tuple[str, Any], ...]:
    if not isinstance(raw, Mapping):
        problems.append("fixed: a table of plan parameters, such as seeds = 4")
        return ()
    names = schema(PlanParams)
    out = []
    for key, value in raw.items():
        if key not in names or key in _CURVE_PARAMS:
            problems.append(f"fixed: unknown plan parameter {key!r}" + _curve_hint(key))
            continue
        checked = _value(key, value, f"fixed.{key}", problems)
        out.append((key, checked))
    return tuple(sorted(out))


def _axes(raw: object, problems: list[str]) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    if not isinstance(raw, Mapping):
        problems.append("axes: a table of lists, such as budget_ms = [30, 50]")
        return ()
    names = schema(PlanParams)
    out = []
    for key, values in raw.items():
        if (key not in names or key in _CURVE_PARAMS) and key != CROPS_AXIS:
            problems.append(f"axes: unknown plan parameter {key!r}" + _curve_hint(key))
            continue
        if not isinstance(values, list):
            problems.append(f"axes.{key}: a list of values, such as [30, 50]")
            continue
        if not values:
            problems.append(f"axes.{key}: is empty; give at least one value")
            continue
        read = _crops if key == CROPS_AXIS else _unset_or_value
        checked = [read(key, v, f"axes.{key}[{i}]", problems) for i, v in enumerate(values, 1)]
        if len({json.dumps(_plain(v), sort_keys=True) for v in checked}) != len(checked):
            problems.append(f"axes.{key}: a value is listed twice")
        out.append((key, tuple(checked)))
    return tuple(out)


def _unset_or_value(key: str, value: Any, where: str, problems: list[str]) -> Any:
    """An axis value: the word that leaves the parameter unset (``UNSET_WORDS``), kept as
    that word, or a value read by the parameter's link codec."""
    word = UNSET_WORDS.get(key)
    if word is not None and isinstance(value, str) and value.strip().lower() == word:
        return word
    return _value(key, value, where, problems)


def without_unset(values: dict[str, Any]) -> dict[str, Any]:
    """A cell's plan parameters with each ``UNSET_WORDS`` coordinate left out (unset)."""
    return {k: v for k, v in values.items() if not (k in UNSET_WORDS and v == UNSET_WORDS[k])}


def _crops(key: str, value: Any, where: str, problems: list[str]) -> Any:
    """A value of the ``crops`` axis: one crop law, or a list of them (one per model of
    the chain), kept as their texts (``parse_crops``)."""
    laws = value if isinstance(value, list) else [value]
    if not laws or len(laws) > limits.CASCADE_MODELS.high:
        problems.append(f"{where}: one crop law, or a list of one per model of the chain")
        return None
    texts = []
    for law in laws:
        if isinstance(law, bool) or not isinstance(law, int | str):
            problems.append(f'{where}: a crop law is a count or text such as "poisson=2.5"')
            return None
        try:
            texts.append(parse_crops(str(law)).text)
        except BadInput as exc:
            problems.extend(f"{where}: {p}" for p in exc.problems)
            return None
    return tuple(texts) if isinstance(value, list) else texts[0]


def with_crops(values: dict[str, Any]) -> dict[str, Any]:
    """A cell's plan parameters with its ``crops`` coordinate written into its chain:
    one law for the chain's first model after the curve's, a list for each in order
    (BadInput when the list is longer than the chain)."""
    if CROPS_AXIS not in values:
        return values
    out = dict(values)
    given = out.pop(CROPS_AXIS)
    laws = given if isinstance(given, tuple) else (given,)
    entries = [cascade_entry(text) for text in out.get("cascade", ())]
    if len(laws) > len(entries):
        raise BadInput(
            f"crops: {len(laws)} crop laws for a chain of {len(entries)} "
            f"model{'' if len(entries) == 1 else 's'} after the curve's"
        )
    for j, law in enumerate(laws):
        entries[j] = replace(entries[j], crops=parse_crops(law))
    out["cascade"] = tuple(e.text for e in entries)
    return out


def _curve_hint(key: str) -> str:
    return "; curves are chosen under [curves]" if key in _CURVE_PARAMS else ""


# ---------------------------------------------------------------------------------------
# Cells.


def selected_curves(store: Store, study: Study) -> list[Curve]:
    """The study's curves, in the order its ids and filters name them (each once).
    BadInput for an id the store does not hold or a filter that matches nothing."""
    problems: list[str] = []
    chosen: dict[str, Curve] = {}
    for curve_id in study.curve_ids:
        try:
            curve = store.curve(curve_id)
        except (NotFound, BadInput):
            problems.append(f"curves.ids: no stored curve has the id {curve_id!r}")
            continue
        chosen.setdefault(curve.id, curve)
    for position, pairs in enumerate(study.curve_filters, start=1):
        wanted = dict(pairs)
        found = [
            c
            for c in store.curves(model=wanted.get("model"), card=wanted.get("card"))
            if c.mig_profile is None
            and wanted.get("precision", c.precision) == c.precision
            and wanted.get("resolution", c.resolution) == c.resolution
        ]
        if not found:
            described = ", ".join(f"{k}={v}" for k, v in pairs)
            problems.append(f"curves.filters[{position}]: no stored curve has {described}")
        for curve in found:
            chosen.setdefault(curve.id, curve)
    if problems:
        raise BadInput(problems)
    return list(chosen.values())


def cell_count(study: Study, curves: int) -> int:
    return curves * math.prod(len(values) for _, values in study.axes)


def cells(store: Store, study: Study) -> list[Cell]:
    """Every cell of the study, curve by curve, in the axes' order. BadInput when the
    grid is over ``MAX_CELLS`` or a curve is unknown."""
    curves = selected_curves(store, study)
    count = cell_count(study, len(curves))
    if count > MAX_CELLS:
        raise BadInput(
            f"the study has {count:,} cells ({len(curves)} curves x "
            + " x ".join(f"{len(v)} {k}" for k, v in study.axes)
            + f"); at most {MAX_CELLS:,} fit in one study: split it"
        )
    fixed = dict(study.fixed)
    names = study.axis_names
    explicit = "calibration" in fixed or "calibration" in names
    prices = dict(study.prices)
    unused = sorted(set(prices) - {c.card for c in curves})
    if unused:  # a price for no curve's card is a misspelt card, most likely
        raise BadInput(
            f"prices: no curve of the study is on {', '.join(repr(c) for c in unused[:10])} "
            f"(its cards: {', '.join(sorted({c.card for c in curves})[:20])})"
        )
    demands: dict[str, tuple[float, ...] | None] = {}
    out = []
    for curve in curves:
        latest = None if explicit else latest_calibration(store, curve.id)
        for combination in itertools.product(*(values for _, values in study.axes)):
            coordinates = tuple(zip(names, combination, strict=True))
            values = {**fixed, **dict(coordinates), "curve": curve.id}
            if curve.card in prices:  # (never with price_per_hour: study_from_dict)
                values["price_per_hour"] = prices[curve.card]
            if latest is not None:
                values["calibration"] = latest.id
            try:
                params = PlanParams(**with_crops(without_unset(values)))
            except BadInput as exc:
                # A combination a plan refuses (say, an overhead above the budget) is a
                # cell that fails with the reason, not a bad file.
                failed = Cell(_failed_key(values), curve.id, coordinates,
                              PlanParams(curve=curve.id), tuple(exc.problems))  # fmt: skip
                out.append(failed)
                continue
            # A curve measured on a server plans with its batcher unless the study says
            # otherwise, and the cell pins the settings (as a plan's link does).
            params = pin_batcher(params, curve)
            demand = _stored_demand(store, params.profile, demands)
            key = cell_key(params, demand=demand, spread=has_spread(curve.points))
            out.append(Cell(key, curve.id, coordinates, params))
    return out


def _stored_demand(
    store: Store, name: str | None, seen: dict[str, tuple[float, ...] | None]
) -> tuple[float, ...] | None:
    """A stored demand profile's values (None for none, a built-in shape or an unknown
    name: the shape is fixed by the planner's version, an unknown one fails the cell)."""
    if name is None or name in SHAPES:
        return None
    if name not in seen:
        try:
            profile = store.profile(name)
            seen[name] = (profile.step_minutes, *profile.sessions)
        except (NotFound, BadInput):
            seen[name] = None
    return seen[name]


def cell_key(
    params: PlanParams, demand: tuple[float, ...] | None = None, *, spread: bool = True
) -> str:
    """A cell's key: a hash of its plan parameters (defaults included), the planner's
    version, the calibration used (its id, or ``none``) and, for a stored demand profile,
    its values (a profile saved again under the same name makes new cells). ``spread``
    says whether the cell's curve has a batch-time spread; without one the ``spread``
    parameter changes nothing, and is left out of the key."""
    saved = saved_params(params)
    if saved.get("search") == PARAMETERS["search"].default:
        # Cells stored before the search was a parameter were searched exhaustively; the
        # default search gives their caps (docs/design.md, the cap search), so they stay found.
        del saved["search"]
    for name in ("queue", "timeout_action", "source_fps", "codec"):
        # The same for the server's queue, which cells stored before it existed left as is
        # (its other settings, unset by default, are not saved then), for the source
        # frame rate, 30 fps in every cell stored before it was a plan parameter, and for
        # the streams' codec, which changes nothing without a decode time.
        parameter = PARAMETERS[name]
        if saved.get(name) == parameter.codec.format(parameter.default):
            del saved[name]
    if not spread:
        # Cells stored before the spread existed ran without it, as a curve without spread
        # still does: they stay found.
        saved.pop("spread", None)
    inputs: dict[str, Any] = {
        "params": saved,
        "version": __version__,
        "calibration": params.calibration or "none",
    }
    if demand is not None:
        inputs["demand"] = list(demand)
    text = json.dumps(inputs, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def _failed_key(values: Mapping[str, Any]) -> str:
    text = json.dumps({k: _plain(v) for k, v in values.items()}, sort_keys=True, default=str)
    return "x" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:19]


# ---------------------------------------------------------------------------------------
# What a cell stores.


def outputs(result: Recommendation, day: DemandFleet | None = None) -> dict[str, Any]:
    """What a study keeps of one recommendation: the recommended option's cap and range,
    seats per card, the binding constraint, latency at the cap, fleet and cost for the
    peak and, for a cell with a demand profile, its autoscaled fleet over the day
    (``day``: peak GPUs, GPU-hours and cost per day). ``seats_per_card`` and the figures
    from ``gpus`` on are spans, with their ``_low`` and ``_high`` beside them
    (``planner.spans``; a cell stored before they were kept reads its likely figure at
    both ends)."""
    best = result.recommended
    closest = best or (result.options[0] if result.options else None)
    at = best.at_cap if best is not None else None
    fleet = result.fleet
    return {
        "cap": best.cap if best else 0,
        "cap_low": best.cap_low if best else 0,
        "cap_high": best.cap_high if best else 0,
        **int_fields("seats_per_card", best.seats_span if best else Span(0, 0, 0)),
        "seats": best.seats if best else "0",
        "option": closest.label if closest else None,
        "policy": closest.policy if closest else None,
        "mode": closest.mode if closest else None,
        "binding_constraint": closest.binding_constraint if closest else None,
        "latency_ms": round(at.e2e_latency_ms, 2) if at and at.e2e_latency_ms is not None else None,
        "min_fps": round(at.min_fps, 2) if at else None,
        **int_fields("gpus", fleet.gpus_span if fleet else None),
        **fields("cost_per_seat_hour", fleet.cost_per_seat_hour_span if fleet else None, 4),
        **int_fields("day_peak_gpus", day.span("autoscaled", "peak_gpus") if day else None),
        **fields("day_gpu_hours", day.span("autoscaled", "gpu_hours_per_day") if day else None, 2),
        **fields("cost_per_day", day.span("autoscaled", "cost_per_day") if day else None, 2),
        "measure_next": result.measure_next,
        "simulations": result.simulations,
    }
