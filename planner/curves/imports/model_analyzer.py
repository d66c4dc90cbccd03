"""Triton Model Analyzer's ``results/metrics-model-inference.csv``.

Format
    One CSV table (ending with a blank line), one row per measured run: ``Model`` (the
    Triton model name), ``Batch`` (the perf_analyzer ``-b`` of that run), the load
    ``Concurrency`` (outstanding requests) or ``Request Rate`` (requests per second),
    ``Model Config Path`` (the model configuration Model Analyzer generated, e.g.
    ``add_sub_config_3``), ``Instance Group``, ``Max Batch Size`` (0: the model does not
    batch), ``Satisfies Constraints`` (Yes/No), ``Throughput (infer/sec)`` and
    ``p99 Latency (ms)`` in **milliseconds**. Rows are sorted by throughput.

Header variants (all read by column name)
    - 1.17dev and earlier: no ``Max Batch Size``.
    - up to 1.19dev the instance group reads ``1/GPU``; from August 2022 ``1:GPU``.
    - request-rate runs: ``Request Rate`` in place of ``Concurrency``.
    - ensembles quote the config cell (``"ensemble_config_1: add_config_0, sub_config_1"``)
      and list the composing models' instance groups and batch limits; BLS models are
      plain rows.
    - concurrent multi-model runs join per-model values with commas
      (``"resnet50,vgg19"``, ``"421.0, [184.5,236.5]"``); their p99 is a mean over the
      models, so no row is one model's latency: such a table is **rejected**.
    - the GPU-metrics table (``metrics-model-gpu.csv``) and the server-only table
      (``metrics-server-only.csv``) share the ``Model,GPU UUID,...`` start but have no
      latency: they are **rejected** with that reason.

What is stored
    One curve per model configuration (``--config NAME`` keeps one), with a point for each
    batch size measured at **concurrency 1**: the closest Model Analyzer comes to one
    batch on an idle server. Configurations without a concurrency-1 row are skipped and
    named in the notes. In a request-rate table, the row that stands for concurrency 1
    is the lowest request rate of each configuration and batch, provided that rate times
    the p99 latency is at most one request: by Little's law the mean number of requests
    in flight is rate x mean latency, and p99 bounds the mean from above, so such a row
    carries no more load than concurrency 1. A higher one is skipped, with a note.

    The table's only latency is the **p99**, so it is stored as ``p99_ms`` and as
    ``latency_ms``; the notes and the curve's ``latency_basis`` say so. Such a curve sits
    above a median-based one of the same model.

    The model is the ``Model`` column unless ``--model`` names it otherwise (the Triton
    name is then kept as ``triton_model`` in the curve's environment); ``--card`` is
    required, as the table does not name the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.curves.curve import clean_batch, make_point
from planner.curves.imports.base import (
    ImportFormat,
    ImportOptions,
    ParsedFile,
    Row,
    Table,
    first_row,
    read_table,
    table_number,
    tool_metadata,
)
from planner.errors import BadInput

FORMAT = "model-analyzer"
LATENCY = "p99 Latency (ms)"
REQUIRED = ("Model", "Batch", "Model Config Path", LATENCY)
LATENCY_BASIS = (
    "p99 latency: Model Analyzer reports no median, so latency_ms is the p99 (also p99_ms)"
)


def looks_like(header: list[str]) -> bool:
    """A header that starts with ``Model`` and has Model Analyzer's config or GPU columns."""
    names = [h.strip().lower() for h in header]
    return (
        bool(names)
        and names[0] == "model"
        and ("model config path" in names or "gpu uuid" in names)
    )


@dataclass(frozen=True)
class _Run:
    line: int
    model: str
    config: str
    config_cell: str
    batch: int
    load: float
    p99_ms: float
    instance_group: str
    max_batch_size: str


def parse(name: str, text: str, options: ImportOptions) -> ParsedFile:
    """Curves of the concurrency-1 rows of a Model Analyzer inference table, one per config."""
    table = read_table(name, text)
    _reject_tables_without_latency(table)
    load_column = "Concurrency" if table.index("Concurrency") is not None else "Request Rate"
    missing = [c for c in REQUIRED if table.index(c) is None]
    if table.index(load_column) is None:
        missing.insert(2, "Concurrency (or Request Rate)")
    if missing:
        raise BadInput(
            f"{name} line {table.header_line}: missing required column(s) {', '.join(missing)}"
        )
    if not table.records and not table.problems:
        raise BadInput(f"{name}: has a header but no data rows")
    runs = _read_runs(table, load_column)

    configs = list(dict.fromkeys(r.config for r in runs))
    if options.config is not None:
        wanted = options.config.strip()
        picked = [
            c for c in configs if wanted in (c, *(r.config_cell for r in runs if r.config == c))
        ]
        if not picked:
            raise BadInput(
                f"{name}: {options.wording.name('config')} {wanted!r} is not in this table; its "
                f"model configs are {', '.join(configs)}"
            )
        configs = picked

    parsed = ParsedFile(name=name, format=FORMAT)
    skipped: list[str] = []
    for config in configs:
        used, reason = _pick_rows([r for r in runs if r.config == config], load_column)
        if not used:
            skipped.append(f"{config} ({reason})")
            continue
        parsed.rows.extend(_row(run, load_column, options, name) for run in used)
        lines = ", ".join(
            f"line {r.line} (batch {r.batch}, {_load_text(load_column, r.load)}, "
            f"p99 {r.p99_ms:g} ms)"
            for r in sorted(used, key=lambda r: r.batch)
        )
        parsed.notes.append(f"config {config}: used {lines}")
        if reason:
            parsed.notes.append(f"config {config}: {reason}")
    if skipped and options.config is not None:
        raise BadInput(
            f"{name}: {options.wording.name('config')} {options.config.strip()!r} has no usable "
            f"row: {skipped[0]}"
        )
    if not parsed.rows:
        raise BadInput(
            f"{name}: no configuration has a row that stands for one request at a time: "
            + "; ".join(skipped)
        )
    if skipped:
        parsed.notes.append("skipped config(s) " + "; ".join(skipped))
    parsed.notes.append("the table's only latency is p99: stored as latency_ms and p99_ms")
    renamed = {r.model for r in runs if options.model and r.model != options.model.strip()}
    if renamed:
        parsed.notes.append(
            f"Triton model {', '.join(sorted(renamed))} stored as model {options.model!r} "
            f"({options.wording.name('model')}); the Triton name is kept as triton_model"
        )
    return parsed


def _reject_tables_without_latency(table: Table) -> None:
    if table.index("GPU UUID") is None or table.index(LATENCY) is not None:
        return
    if table.index("Batch") is None:
        kind = "server-only table (metrics-server-only.csv)"
    else:
        kind = "GPU-metrics table (metrics-model-gpu.csv)"
    raise BadInput(
        f"{table.name}: this is Model Analyzer's {kind}: it has GPU memory, utilisation and "
        "power but no latency, so it holds no batch curve; import metrics-model-inference.csv"
    )


def _read_runs(table: Table, load_column: str) -> list[_Run]:
    runs: list[_Run] = []
    problems = table.report()
    for line, cells in table.records:
        where = f"{table.name} line {line}"

        def cell(column: str, row: list[str] = cells) -> str:
            position = table.index(column)
            return "" if position is None else row[position]

        if "," in cell("Model") or "," in cell("Batch"):
            raise BadInput(
                f"{where}: a concurrent multi-model row ({cell('Model')}): its p99 is a mean "
                "over several models run at once, not one model's latency; profile the models "
                "one at a time to import them"
            )
        row_problems: list[str] = []
        values: dict[str, float] = {}
        batch = 0
        try:
            batch = clean_batch(cell("Batch"))
        except BadInput as exc:
            row_problems.extend(exc.problems)
        for column, positive in ((load_column, True), (LATENCY, True)):
            try:
                values[column] = table_number(cell(column), column, positive=positive)
            except BadInput as exc:
                row_problems.extend(exc.problems)
        if table.index("Throughput (infer/sec)") is not None:
            try:
                table_number(cell("Throughput (infer/sec)"), "Throughput (infer/sec)")
            except BadInput as exc:
                row_problems.extend(exc.problems)
        load = values.get(load_column)
        if load is not None and load_column == "Concurrency" and not load.is_integer():
            row_problems.append(f"Concurrency {load:g} is not a whole number")
        if not cell("Model"):
            row_problems.append("Model is empty")
        if not cell("Model Config Path"):
            row_problems.append("Model Config Path is empty")
        if row_problems:
            problems.extend(f"{where}: {p}" for p in row_problems)
            continue
        config_cell = cell("Model Config Path")
        runs.append(
            _Run(
                line=line,
                model=cell("Model"),
                # An ensemble's cell is "ensemble_config_1: add_config_0, sub_config_1".
                config=config_cell.split(":")[0].strip(),
                config_cell=config_cell,
                batch=batch,
                load=values[load_column],
                p99_ms=values[LATENCY],
                instance_group=cell("Instance Group"),
                max_batch_size=cell("Max Batch Size"),
            )
        )
    problems.check()
    return runs


def _pick_rows(runs: list[_Run], load_column: str) -> tuple[list[_Run], str]:
    """The rows of one config that stand for concurrency 1, and a note (or why none do)."""
    if load_column == "Concurrency":
        ones = [r for r in runs if r.load == 1]
        if ones:
            return ones, ""
        least = min(r.load for r in runs)
        return [], f"no concurrency-1 row; the lowest concurrency is {least:g}"
    used: list[_Run] = []
    too_busy: list[_Run] = []
    for batch in dict.fromkeys(r.batch for r in runs):
        lowest = min((r for r in runs if r.batch == batch), key=lambda r: r.load)
        in_flight = lowest.load * lowest.p99_ms / 1000
        (used if in_flight <= 1 else too_busy).append(lowest)
    note = "; ".join(
        f"batch {r.batch} skipped: at its lowest request rate {r.load:g}/s about "
        f"{r.load * r.p99_ms / 1000:.2g} requests are in flight (rate x p99), more than one"
        for r in too_busy
    )
    return used, note or ""


def _load_text(load_column: str, load: float) -> str:
    if load_column == "Concurrency":
        return f"concurrency {load:g}"
    return f"lowest request rate {load:g}/s"


def _row(run: _Run, load_column: str, options: ImportOptions, name: str) -> Row:
    where = f"{name} line {run.line}"
    point = make_point({"batch": run.batch, "latency_ms": run.p99_ms, "p99_ms": run.p99_ms})
    metadata = tool_metadata({"model": run.model}, {}, options, where)
    environment = {
        "import_format": FORMAT,
        "latency_basis": LATENCY_BASIS,
        "import_rows": f"batch {run.batch}: {where} ({_load_text(load_column, run.load)})",
        "triton_model": run.model,
        "model_config": run.config,
    }
    if run.config_cell != run.config:
        environment["composing_configs"] = run.config_cell.split(":", 1)[1].strip()
    if run.instance_group:
        environment["instance_group"] = run.instance_group
    if run.max_batch_size:
        environment["max_batch_size"] = run.max_batch_size
    return Row(
        point=point,
        metadata=metadata,
        where=where,
        environment=environment,
        variant=f"{run.model}\x00{run.config}",
    )


class ModelAnalyzerTable(ImportFormat):
    """Model Analyzer's ``metrics-model-inference.csv``; it does not name the card."""

    name = FORMAT
    title = "Model Analyzer table"
    expected = "a Model Analyzer metrics-model-inference.csv (Model,Batch,Concurrency,...)"
    needs = ("card",)

    def detect(self, text: str) -> bool:
        return looks_like(first_row(text.lstrip()))

    def parse(self, name: str, text: str, options: ImportOptions) -> ParsedFile:
        return parse(name, text, options)
