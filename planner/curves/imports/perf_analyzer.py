"""Triton perf_analyzer's (formerly perf_client's) ``-f FILE.csv`` export.

Format
    One CSV table, one row per load level, **sorted by throughput, not by load**. The
    first column is the load: ``Concurrency`` (outstanding requests) or ``Request Rate``
    (requests per second). ``Inferences/Second`` is requests per second times the batch
    size. Every other time column is a whole number of **microseconds**. The batch size
    (``-b``) is not in the file: it appears only in perf_analyzer's console output, so it
    must be given (``--batch B``). A request carries one batch, so the latency of a
    request is the latency of one batched call.

Header variants (all read by column name, in any order)
    - perf_client <= 19.05: ``Concurrency,Inferences/Second,Client Send,Network+Server
      Send/Recv,Server Queue,Server Compute,Client Recv`` -- no percentiles.
    - perf_client 19.07 to about 20.02: the same plus ``p50 latency,p90 latency,p95
      latency,p99 latency``.
    - perf_analyzer (2020 on): ``Server Compute`` split into ``Server Compute Input,
      Server Compute Infer,Server Compute Output``; ``Request Rate`` in place of
      ``Concurrency`` for request-rate runs; optional ``Response Throughput`` (decoupled
      models), ``Server Cache Hit,Server Cache Miss`` (response cache), and with
      ``--verbose-csv`` ``Avg latency,request/response,response wait`` and, with
      ``--collect-metrics``, GPU columns whose cells read ``GPU-<uuid>:<value>;``. The
      server columns are absent for non-Triton services. Older versions end each data
      row with an extra comma.

What is stored
    One point per file: the row with the lowest load (lowest concurrency, or lowest
    request rate), because it is the closest to one batch on an otherwise idle server.
    ``latency_ms`` and ``p50_ms`` are its p50 latency, ``p90_ms`` and ``p99_ms`` its
    spread. The import notes say which row was used; when the lowest load is above one
    request in flight the notes say that the latency includes queueing.

    A file without percentile columns (perf_client <= 19.05) is imported with
    ``latency_ms`` = the sum of its latency components (Client Send + Network+Server
    Send/Recv + Server Queue + Server Compute... + Client Recv). perf_client derives the
    network column so that the components add up to the average request latency, so the
    sum is a **mean** (each part truncated to whole microseconds; the network part is
    clipped at zero, which can only make the sum larger). It is stored without spread,
    and the notes and the curve's ``latency_basis`` say it is an average, not a median.

    The batch size given is checked against the row itself: by Little's law a closed
    loop of C requests with average latency W serves C / W requests per second, so
    ``Inferences/Second * W / C`` estimates the batch size (for request-rate rows,
    ``Inferences/Second / Request Rate``). When that estimate is far from ``--batch``, the
    notes say so; the value given is still used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from planner.curves.curve import make_point
from planner.curves.imports.base import (
    ImportFormat,
    ImportOptions,
    ParsedFile,
    Row,
    Table,
    Wording,
    first_row,
    read_table,
    table_number,
    tool_metadata,
)
from planner.errors import BadInput

FORMAT = "perf-analyzer"
LOAD_COLUMNS = ("Concurrency", "Request Rate")
THROUGHPUT = "Inferences/Second"
COMPONENTS = (
    "Client Send",
    "Network+Server Send/Recv",
    "Server Queue",
    "Server Compute",
    "Server Compute Input",
    "Server Compute Infer",
    "Server Compute Output",
    "Client Recv",
)
# Without percentiles, the latency is rebuilt from these; they must all be there.
NEEDED_FOR_SUM = ("Client Send", "Network+Server Send/Recv", "Server Queue", "Client Recv")
PERCENTILES = {"p50 latency": "p50_ms", "p90 latency": "p90_ms", "p99 latency": "p99_ms"}
OTHER_TIMES = (
    "p95 latency",
    "Avg latency",
    "request/response",
    "response wait",
    "Server Cache Hit",
    "Server Cache Miss",
)
# Other columns (throughput, GPU utilisation, power and memory) are read by nobody.
BATCH_MISMATCH = 0.25  # relative distance of the Little's-law estimate that earns a note


def looks_like(header: list[str]) -> bool:
    """A header whose first column is the load and which has ``Inferences/Second``."""
    names = [h.strip().lower() for h in header]
    return (
        bool(names) and names[0] in ("concurrency", "request rate") and "inferences/second" in names
    )


@dataclass(frozen=True)
class _Measured:
    line: int
    load: float
    throughput: float | None
    percentiles: dict[str, float]  # "p50 latency" -> µs
    components: dict[str, float]  # column -> µs


def parse(name: str, text: str, options: ImportOptions) -> ParsedFile:
    """The lowest-load row of a perf_analyzer CSV as one point at batch ``options.batch``."""
    table = read_table(name, text)
    load_column = _load_column(table)
    has_percentiles = table.index("p50 latency") is not None
    if not has_percentiles:
        missing = [c for c in NEEDED_FOR_SUM if table.index(c) is None]
        if table.index("Server Compute", "Server Compute Infer") is None:
            missing.append("Server Compute")
        if missing:
            raise BadInput(
                f"{name} line {table.header_line}: missing required column(s) p50 latency "
                f"(or, for perf_client files without percentiles, {', '.join(missing)})"
            )
    if not table.records and not table.problems:
        raise BadInput(f"{name}: has a header but no data rows")
    measured: list[_Measured] = []
    problems = table.report()
    if len(options.batch) != 1:
        problems.append(missing_batch(name, options.wording))
    for line, cells in table.records:
        try:
            measured.append(_measure(table, load_column, line, cells))
        except BadInput as exc:
            problems.extend(f"{name} line {line}: {p}" for p in exc.problems)
    problems.check()
    batch = options.batch[0]

    # min() keeps the first of equal loads, i.e. the earliest line.
    chosen = min(measured, key=lambda m: m.load)
    parsed = ParsedFile(name=name, format=FORMAT)
    where = f"{name} line {chosen.line}"
    load_text = f"{load_column.lower()} {chosen.load:g}"
    if has_percentiles:
        p50 = chosen.percentiles["p50 latency"]
        raw = {"batch": batch, "latency_ms": p50 / 1000}
        raw.update(
            {
                field: chosen.percentiles[c] / 1000
                for c, field in PERCENTILES.items()
                if c in chosen.percentiles
            }
        )
        basis = f"p50 latency of the lowest-load row ({load_text})"
        spread = ", ".join(
            f"{c.split()[0]} {chosen.percentiles[c]:.10g} µs"
            for c in ("p90 latency", "p99 latency")
            if c in chosen.percentiles
        )
        summary = f"p50 {p50:.10g} µs -> latency_ms {p50 / 1000:.10g}" + (
            f" ({spread})" if spread else ""
        )
    else:
        total = sum(chosen.components.values())
        raw = {"batch": batch, "latency_ms": total / 1000}
        basis = (
            f"average request latency of the lowest-load row ({load_text}): the sum of the "
            "latency components, as the file has no percentile columns; a mean, not a median"
        )
        parts = " + ".join(f"{c} {v:.10g}" for c, v in chosen.components.items())
        summary = (
            f"no percentile columns (perf_client <= 19.05): latency_ms {total / 1000:.10g} is the "
            f"sum of the average latency components ({parts} = {total:.10g} µs), an average, not a "
            "median"
        )
    try:
        point = make_point(raw)
    except BadInput as exc:
        raise BadInput([f"{where}: {p}" for p in exc.problems]) from None
    parsed.notes.append(f"used line {chosen.line} ({load_text}) as batch {batch}: {summary}")
    parsed.notes.extend(
        _load_notes(chosen, load_column, point.latency_ms, batch, options.wording.name("batch"))
    )
    metadata = tool_metadata({}, {}, options, where)
    environment = {
        "import_format": FORMAT,
        "latency_basis": basis,
        "import_rows": f"batch {batch}: {where} ({load_text})",
    }
    parsed.rows.append(Row(point=point, metadata=metadata, where=where, environment=environment))
    return parsed


def _load_column(table: Table) -> str:
    present = [c for c in LOAD_COLUMNS if table.index(c) is not None]
    if not present:
        raise BadInput(
            f"{table.name} line {table.header_line}: missing required column Concurrency or "
            "Request Rate (is this perf_analyzer's -f CSV?)"
        )
    if len(present) > 1:
        raise BadInput(
            f"{table.name} line {table.header_line}: has both Concurrency and Request Rate "
            "columns; perf_analyzer writes one of them"
        )
    return present[0]


def _measure(table: Table, load_column: str, line: int, cells: list[str]) -> _Measured:
    problems: list[str] = []

    def number(column: str, *, positive: bool = False) -> float | None:
        position = table.index(column)
        if position is None:
            return None
        try:
            return table_number(cells[position], column, positive=positive)
        except BadInput as exc:
            problems.extend(exc.problems)
            return None

    load = number(load_column, positive=True)
    if load is not None and load_column == "Concurrency" and not load.is_integer():
        problems.append(f"Concurrency {load:g} is not a whole number")
    throughput = number(THROUGHPUT)
    percentiles = {}
    for column in PERCENTILES:
        value = number(column, positive=column == "p50 latency")
        if value is not None:
            percentiles[column] = value
    components = {}
    for column in COMPONENTS:
        value = number(column)
        if value is not None:
            components[column] = value
    for column in OTHER_TIMES:
        number(column)
    if problems:
        raise BadInput(problems)
    assert load is not None  # a missing load was reported above
    return _Measured(line, load, throughput, percentiles, components)


def missing_batch(name: str, wording: Wording) -> str:
    """The problem of a perf_analyzer file whose batch size was not given."""
    given = wording.give_as("batch", "the run's -b", "B")
    return (
        f"{name}: a perf_analyzer CSV does not record the batch size; {given} "
        "(one value, or one per perf_analyzer file)"
    )


def _load_notes(
    chosen: _Measured, load_column: str, latency_ms: float, batch: int, batch_name: str
) -> list[str]:
    """Notes on how loaded the chosen row was, and whether its throughput fits ``batch``."""
    notes = []
    if load_column == "Concurrency" and chosen.load > 1:
        notes.append(
            f"the lowest concurrency in the file is {chosen.load:g}, not 1: its latency "
            f"includes queueing, with {chosen.load:g} requests outstanding at a time"
        )
    if load_column == "Request Rate":
        in_flight = chosen.load * latency_ms / 1000
        notes.append(
            f"request-rate run: at {chosen.load:g} requests/s about {in_flight:.2g} requests "
            "are in flight on average (rate x latency)"
            + ("; the latency includes queueing" if in_flight > 1 else "")
        )
    estimate = _batch_estimate(chosen, load_column)
    if estimate is not None and abs(estimate - batch) > BATCH_MISMATCH * batch:
        notes.append(
            f"{batch_name} {batch}, but the row's throughput suggests batch of about "
            f"{estimate:.2g} (Little's law); check the run's -b"
        )
    return notes


def _batch_estimate(chosen: _Measured, load_column: str) -> float | None:
    if not chosen.throughput:
        return None
    if load_column == "Request Rate":
        return chosen.throughput / chosen.load
    average_us = sum(chosen.components.values())
    if "Network+Server Send/Recv" not in chosen.components or average_us <= 0:
        return None  # without the server columns the components do not add up
    return chosen.throughput * average_us / 1e6 / chosen.load


_CONSOLE_BATCH = re.compile(r"^\s*Batch size:\s*(\d+)\s*$", re.MULTILINE)


class PerfAnalyzerCsv(ImportFormat):
    """perf_analyzer's ``-f`` CSV; the batch size is not in the file (see the module
    docstring), so it needs ``batch``, and a model and a card."""

    name = FORMAT
    title = "perf_analyzer CSV"
    expected = "a perf_analyzer CSV (Concurrency,Inferences/Second,...)"
    needs = ("model", "card", "batch")

    def detect(self, text: str) -> bool:
        return looks_like(first_row(text.lstrip()))

    def parse(self, name: str, text: str, options: ImportOptions) -> ParsedFile:
        return parse(name, text, options)

    def lacks(self, field: str, options: ImportOptions) -> bool:
        if field == "batch":
            return len(options.batch) != 1
        return super().lacks(field, options)

    def missing(self, name: str, field: str, wording: Wording) -> str:
        if field == "batch":
            return missing_batch(name, wording)
        return super().missing(name, field, wording)

    def near_miss(self, name: str, text: str, wording: Wording) -> str | None:
        """perf_analyzer's console output: say to rerun it with ``-f``."""
        if "*** Measurement Settings ***" not in text and "Request concurrency:" not in text:
            return None
        batch = _CONSOLE_BATCH.search(text)
        import_it = "upload" if wording.form else "import"
        if wording.form:
            hint = f" with {wording.name('batch')} {batch[1]}" if batch else ""
        else:
            hint = (
                f" with {wording.name('batch')} {batch[1]}" if batch else " with its -b as --batch"
            )
        return (
            f"{name}: this is perf_analyzer's console output, not its CSV; rerun it with "
            f"-f FILE.csv and {import_it} that file{hint}"
        )
