"""Model profiles written by the Nexus serving system's profiler (uwsampl/nexus).

Where the layout comes from
    The writer is ``tools/profiler/profiler.cpp`` and the reader
    ``ModelProfile::LoadProfile`` in ``src/nexus/common/model_db.cpp`` of uwsampl/nexus;
    the 2019+ layout is also read by ``tools/profiler/profiler.py`` there (all found
    through a code search of the public repository). The 2018 files in the test samples
    are real profiles from that repository's ``tests/data/model_db/profiles``.

Layout (line by line)
    1. the profile id ``framework:model:version[:HxW]`` (``HxW`` is height x width of
       the input image, when the model was profiled for one; ``-prefix`` is appended for
       ``--share_prefix`` runs), e.g. ``darknet:yolo9000:1:480x480``;
    2. the device name with spaces written as ``_``, e.g. ``TITAN_X_(Pascal)``;
    3. 2019+ only: the GPU UUID (``generic`` when several GPUs' profiles were merged);
    4. ``Forward latency``;
    5. the table header: ``batch,latency(us),std(us),memory(B)`` (2018) or
       ``batch,latency(us),std(us),memory(B),repeat`` (2019+); the nexuslb fork writes
       ``static memory(B),peak memory(B)`` in place of ``memory(B)``;
    6. one row per batch size;
    7. ``Preprocess latency`` and ``mean(us),std(us)`` (2018) or ``Preprocess latency
       (mean,std,repeat)`` (2019+), then one row; the same for ``Postprocess latency``.

Units
    ``latency`` is the mean wall time of one forward pass of the **whole batch** over
    ``repeat`` runs (10 by default) after dry runs, in **microseconds**; ``std`` is the
    sample standard deviation of those runs. ``memory`` is in **bytes** (2018: the drop
    in free GPU memory since the profiler started, framework workspace included; 2019+:
    the model's peak memory). Pre- and postprocessing are per query, in microseconds. An
    early profiler wrote ``latency(ms)``; the unit in the header is honoured. Nexus
    multiplies latencies by ``--profile_multiplier`` when it loads a profile; the file
    holds the raw values, and so does the stored curve.

What is stored
    One curve per file, a point per row: ``latency_ms`` = the mean (Nexus reports no
    median; the curve's ``latency_basis`` says so), ``std_ms`` = the std, ``n`` = the
    ``repeat`` column where present, ``memory_mb`` = bytes / 2**20 (the mebibytes that
    ``nvidia-smi`` and PyTorch report). The model name and the card default to the
    profile's model and device name (``TITAN X (Pascal)``); ``--model`` and ``--card``
    replace them, and the profile id and device stay in the environment. The input size
    in the profile id is the curve's resolution, written ``WIDTHxHEIGHT``; a different
    ``--resolution`` is an error. Pre- and postprocessing times are kept in the
    environment: they are per query and not part of a batch's forward latency.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from planner.curves.curve import Point, clean_batch, make_point
from planner.curves.imports.base import (
    MAX_COLUMNS,
    ImportFormat,
    ImportOptions,
    ParsedFile,
    Problems,
    Row,
    table_number,
    tool_metadata,
)
from planner.errors import BadInput

FORMAT = "nexus"
FORWARD = "Forward latency"
BYTES_PER_MB = 2**20
_UNIT = re.compile(r"^(?P<what>[a-z ]+)\((?P<unit>us|ms|b)\)$")
_INPUT_SIZE = re.compile(r"^(\d+)x(\d+)$")
PER_MS = {"us": Decimal(1000), "ms": Decimal(1)}  # divisors from the header's unit to ms


def looks_like(text: str) -> bool:
    """A ``Forward latency`` line within the first four lines, after a profile id."""
    lines = [line.strip() for line in text.splitlines()[:6]]
    return bool(lines) and ":" in lines[0] and FORWARD in lines[1:5]


def parse(name: str, text: str, options: ImportOptions) -> ParsedFile:
    """The forward-latency table of a Nexus profile as one curve."""
    lines = [line.strip() for line in text.splitlines()]
    try:
        forward = lines.index(FORWARD, 0, 5)
    except ValueError:
        raise BadInput(
            f"{name}: not a Nexus profile: expected a '{FORWARD}' line after the profile id "
            "and device name (and, in 2019+ profiles, the GPU UUID)"
        ) from None
    if forward not in (2, 3):
        raise BadInput(
            f"{name} line {forward + 1}: '{FORWARD}' must follow the profile id, the device "
            "name and optionally the GPU UUID"
        )
    profile_id, device = lines[0], lines[1]
    uuid = lines[2] if forward == 3 else None
    framework, model, version, resolution, shared = _profile_id(name, profile_id)
    columns, width = _columns(name, lines, forward + 1)

    parsed = ParsedFile(name=name, format=FORMAT)
    problems = Problems(name)
    points: list[tuple[int, Point]] = []
    index = forward + 2
    while (
        index < len(lines)
        and "," in lines[index]
        and not lines[index].startswith(("Preprocess", "Postprocess"))
    ):
        where = f"{name} line {index + 1}"
        try:
            points.append((index + 1, _forward_row(lines[index], columns, width)))
        except BadInput as exc:
            problems.extend(f"{where}: {p}" for p in exc.problems)
        index += 1
    if not points and not problems:
        raise BadInput(f"{name}: has a header but no data rows (no '{FORWARD}' rows)")
    per_query = _per_query_sections(name, lines, index, problems)
    problems.check()

    first, last = points[0][0], points[-1][0]
    where_all = f"{name} lines {first}-{last}"
    card = device.replace("_", " ")
    metadata = tool_metadata(
        {"model": model, "card": card}, {"resolution": resolution}, options, where_all
    )
    environment: dict[str, Any] = {
        "import_format": FORMAT,
        "latency_basis": (
            "mean forward latency of the whole batch over the profiler's repeated runs "
            "(Nexus reports mean and std, not a median); raw values, without Nexus's "
            "--profile_multiplier"
        ),
        "import_rows": f"{where_all} ({FORWARD} table)",
        "nexus_profile": profile_id,
        "framework": framework,
        "model_version": version,
        "device": device,
        "memory_basis": (
            "peak memory of the model (memory column / 2^20)"
            if uuid is not None
            else "drop in free GPU memory since the profiler started, framework workspace "
            "included (memory column / 2^20)"
        ),
    }
    if uuid is not None:
        environment["device_uuid"] = uuid
    if shared:
        environment["shared_prefix"] = True
    environment.update(per_query)
    for line, point in points:
        parsed.rows.append(
            Row(
                point=point, metadata=metadata, where=f"{name} line {line}", environment=environment
            )
        )

    batches = [point.batch for _, point in points]
    parsed.notes.append(
        f"read {len(points)} batch sizes ({min(batches)}..{max(batches)}) from lines "
        f"{first}-{last}: latency_ms is the mean forward latency, std_ms its std"
        + (", memory_mb the memory column / 2^20" if "memory" in columns else "")
    )
    if per_query:
        parsed.notes.append(
            "pre- and postprocessing times are per query and not part of latency_ms; they "
            "are kept in the environment"
        )
    if options.model and options.model.strip() != model:
        parsed.notes.append(
            f"profile model {model!r} stored as model {options.model!r} "
            f"({options.wording.name('model')})"
        )
    if options.card and options.card.strip() != card:
        parsed.notes.append(
            f"device {card!r} stored as card {options.card!r} ({options.wording.name('card')})"
        )
    return parsed


def _profile_id(name: str, profile_id: str) -> tuple[str, str, str, str | None, bool]:
    """(framework, model, version, WIDTHxHEIGHT or None, shared prefix) of a profile id."""
    shared = profile_id.endswith("-prefix")
    parts = profile_id.removesuffix("-prefix").split(":")
    if len(parts) not in (3, 4) or not all(p.strip() for p in parts):
        raise BadInput(
            f"{name} line 1: profile id {profile_id!r} is not framework:model:version[:HxW]"
        )
    resolution = None
    if len(parts) == 4:
        size = _INPUT_SIZE.match(parts[3])
        if not size:
            raise BadInput(f"{name} line 1: input size {parts[3]!r} is not HEIGHTxWIDTH")
        # Nexus writes height x width; the planner writes width x height.
        resolution = f"{size[2]}x{size[1]}"
    return parts[0], parts[1], parts[2], resolution, shared


def _columns(name: str, lines: list[str], at: int) -> tuple[dict[str, tuple[int, str]], int]:
    """Positions and units of the columns in the table header at line index ``at``, and
    the number of columns."""
    header = lines[at] if at < len(lines) else ""
    width = header.count(",") + 1
    if width > MAX_COLUMNS:
        raise BadInput(
            f"{name} line {at + 1}: the header has {width:,} columns, more than the "
            f"{MAX_COLUMNS} a table may have"
        )
    columns: dict[str, tuple[int, str]] = {}
    for position, cell in enumerate(c.strip().lower() for c in header.split(",")):
        if cell in ("batch", "repeat"):
            columns[cell] = (position, "")
            continue
        unit = _UNIT.match(cell)
        if unit and unit["what"].strip() in ("latency", "std"):
            columns[unit["what"].strip()] = (position, unit["unit"])
        elif unit and unit["what"].strip() in ("memory", "peak memory"):
            columns["memory"] = (position, unit["unit"])
    missing = [c for c in ("batch", "latency") if c not in columns]
    if missing:
        raise BadInput(
            f"{name} line {at + 1}: missing required column(s) {', '.join(missing)} "
            f"(expected a header like batch,latency(us),std(us),memory(B),repeat; got "
            f"{header!r})"
        )
    return columns, width


def _forward_row(line: str, columns: dict[str, tuple[int, str]], width: int) -> Point:
    cells = [c.strip() for c in line.split(",")]
    if len(cells) != width:
        raise BadInput(f"{len(cells)} cells but the header has {width}")
    problems: list[str] = []
    raw: dict[str, Any] = {}

    def cell(column: str) -> str:
        return cells[columns[column][0]]

    try:
        raw["batch"] = clean_batch(cell("batch"))
    except BadInput as exc:
        problems.extend(exc.problems)
    for column, field, positive in (("latency", "latency_ms", True), ("std", "std_ms", False)):
        if column in columns:
            try:
                table_number(cell(column), column, positive=positive)
                raw[field] = to_ms(cell(column), columns[column][1])
            except BadInput as exc:
                problems.extend(exc.problems)
    if "memory" in columns:
        try:
            raw["memory_mb"] = table_number(cell("memory"), "memory") / BYTES_PER_MB
        except BadInput as exc:
            problems.extend(exc.problems)
    if "repeat" in columns:
        try:
            repeat = table_number(cell("repeat"), "repeat", positive=True)
            if not repeat.is_integer():
                raise BadInput(f"repeat {cell('repeat')!r} is not a whole number")
            raw["n"] = int(repeat)
        except BadInput as exc:
            problems.extend(exc.problems)
    if problems:
        raise BadInput(problems)
    return make_point(raw)


def _per_query_sections(
    name: str, lines: list[str], start: int, problems: Problems
) -> dict[str, float]:
    """Mean and std (ms) of the preprocess and postprocess sections, where present."""
    found: dict[str, float] = {}
    index = start
    for title, key in (
        ("Preprocess latency", "preprocess"),
        ("Postprocess latency", "postprocess"),
    ):
        while index < len(lines) and not lines[index].startswith(title):
            index += 1
        if index >= len(lines):
            break
        unit = "us"
        index += 1
        # 2018: a "mean(us),std(us)" header line; 2019+: the values follow the title.
        if index < len(lines) and lines[index][:1].isalpha():
            unit = "ms" if "(ms)" in lines[index] else "us"
            index += 1
        if index >= len(lines):
            problems.append(f"{name}: '{title}' has no values line")
            break
        cells = [c.strip() for c in lines[index].split(",")]
        try:
            table_number(cells[0], f"{key} mean")
            table_number(cells[1] if len(cells) > 1 else "", f"{key} std")
        except BadInput as exc:
            problems.extend(f"{name} line {index + 1}: {p}" for p in exc.problems)
            continue
        found[f"{key}_ms"] = to_ms(cells[0], unit)
        found[f"{key}_std_ms"] = to_ms(cells[1], unit)
    return found


def to_ms(text: str, unit: str) -> float:
    """A checked number in ``unit`` as milliseconds, converted in decimal so that
    ``6277.4`` µs is stored as ``6.2774`` ms rather than ``6.277399999999999``."""
    return float(Decimal(text) / PER_MS[unit])


class NexusProfile(ImportFormat):
    """A Nexus model profile; it names its model and device itself."""

    name = FORMAT
    title = "Nexus profile"
    expected = "a Nexus profile"

    def detect(self, text: str) -> bool:
        return looks_like(text.lstrip())

    def parse(self, name: str, text: str, options: ImportOptions) -> ParsedFile:
        return parse(name, text, options)
