"""Compare cards: one model's curves on every card, their seat caps and cost per seat
under the same criteria, and the cards' hourly prices."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import streamlit as st

from dashboard import cache, links
from dashboard.charts import Fitted, fit_figure
from dashboard.controls import Controls
from dashboard.plan_charts import caps_figure, cost_figure
from dashboard.state import store
from dashboard.text import md
from dashboard.ui import flash, show_flash, show_problems, table
from planner.cards import Card
from planner.curve import PRECISIONS, Curve
from planner.errors import BadInput, NotFound
from planner.fit import fit_curve
from planner.links import CompareParams, PlanParams
from planner.plan import default_curve, plan_inputs
from planner.policies import POLICIES
from planner.recommend import Recommendation

c = Controls("cmp_")
CRITERIA = ("budget_ms", "percentile", "min_fps", "overhead_ms", "max_overwritten", "policies")
REST = ("peak_sessions", "headroom", "seeds", "duration_s", "max_sessions")
SHARED = tuple(n for n in (*CRITERIA, *REST) if n in PlanParams.__dataclass_fields__)
TABLE_COLUMNS: dict[str, Any] = {
    "latency at cap (ms)": st.column_config.NumberColumn(format="%.1f"),
    "slowest fps at cap": st.column_config.NumberColumn(format="%.1f"),
}


def chosen_curves(params: CompareParams, model: str) -> list[Curve]:
    """The model's curves on the chosen cards, precision and resolution."""
    wanted = {card.lower() for card in params.cards}
    return [
        curve
        for curve in db.curves(model=model)
        if (not wanted or curve.card.lower() in wanted)
        and params.precision in (None, curve.precision)
        and params.resolution in (None, curve.resolution)
        and curve.mig_profile is None
    ]


def check(params: CompareParams) -> tuple[CompareParams, list[str]]:
    """A model, card, precision or resolution with no stored curve is ignored."""
    ignored = []
    if params.model is not None and not db.curves(model=params.model):
        ignored.append(f"ignored model={params.model!r}: no stored curve of that model")
        params = replace(params, model=None)
    model = params.model or default.model
    having = {curve.card.lower() for curve in db.curves(model=model)}
    unknown = [card for card in params.cards if card.lower() not in having]
    if unknown:
        ignored.append(
            f"ignored cards {', '.join(repr(u) for u in unknown)}: no curve of {model!r} on them"
        )
    names = {curve.card.lower(): curve.card for curve in db.curves(model=model)}
    cards = tuple(dict.fromkeys(names[x.lower()] for x in params.cards if x.lower() in names))
    if cards != params.cards:
        params = replace(params, cards=cards)
    if (params.precision or params.resolution) and not chosen_curves(params, model):
        ignored.append("ignored precision and resolution: no curve of the model has them")
        params = replace(params, precision=None, resolution=None)
    return params, ignored


def controls() -> CompareParams | None:
    bar = st.sidebar
    bar.markdown("### What to compare")
    models = sorted({curve.model for curve in db.curves()})
    c.default("model", default.model)
    model = c.select(bar, "model", "Model", models)
    curves = db.curves(model=model)
    cards = sorted({x.card for x in curves})
    precisions = [p for p in PRECISIONS if any(x.precision == p for x in curves)]
    resolutions = sorted({x.resolution for x in curves if x.resolution})
    # Another model may lack the cards, precision or resolution chosen for the last one.
    st.session_state[c.key("cards")] = [x for x in c.get("cards") or [] if x in cards]
    for name, offered in (("precision", precisions), ("resolution", resolutions)):
        if c.get(name) not in offered:
            st.session_state[c.key(name)] = None
    c.multi(bar, "cards", "Cards", cards, placeholder="all cards")
    left, right = bar.columns(2)
    c.select(left, "precision", "Precision", precisions, optional=True, placeholder="all")
    c.select(right, "resolution", "Resolution", resolutions, optional=True, placeholder="all")
    bar.markdown("**What every seat must get**")
    left, right = bar.columns(2)
    c.number(left, "budget_ms", "Latency budget (ms)", step=5.0)
    c.number(right, "percentile", "Percentile", step=0.5)
    left, right = bar.columns(2)
    c.number(left, "min_fps", "Frame-rate floor (fps)", step=0.5)
    c.number(right, "overhead_ms", "Overhead per frame (ms)", step=1.0)
    c.number(
        bar,
        "max_overwritten",
        "Most frames overwritten (fraction)",
        step=0.01,
        placeholder="no limit",
    )
    c.multi(bar, "policies", "Scheduling policies", list(POLICIES))
    bar.markdown("**Fleet**")
    left, right = bar.columns(2)
    c.number(left, "peak_sessions", "Peak sessions", placeholder="not set")
    c.number(right, "headroom", "Headroom (0.2 = 20%)", step=0.05, fmt="%.2f")
    effort = bar.expander("Simulation effort")
    c.number(effort, "seeds", "Random phase draws per count")
    c.number(effort, "duration_s", "Simulated seconds per draw", step=5.0)
    c.number(effort, "max_sessions", "Largest session count considered")

    values, problems = c.values()
    if values.get("model") == default.model:
        values["model"] = None  # the page's default: links stay short
    if problems:
        show_problems("These settings do not make a comparison:", problems)
        return None
    try:
        return CompareParams(**values)
    except BadInput as exc:
        show_problems("These settings do not make a comparison:", c.explain(exc.problems))
        return None


def price_form(cards: list[Card], compared: list[str]) -> None:
    st.subheader("Hourly prices")
    st.caption(
        "No prices are shipped with the planner. Set what you pay per card-hour; cost per "
        "seat follows everywhere (Plan and here)."
    )
    left, middle, right = st.columns([2, 1, 1], vertical_alignment="bottom")
    # The cards compared above first: their prices are the ones that change the table.
    names = sorted((card.name for card in cards), key=lambda n: (n not in compared, n))
    card_name = left.selectbox("Card", names, key="cmp_price_card")
    current = next((x.price_per_hour for x in cards if x.name == card_name), None)
    price = middle.number_input(
        "USD per hour",
        min_value=0.0,
        max_value=10_000.0,
        value=current,
        step=0.1,
        format="%.2f",
        key=f"cmp_price_value_{card_name}",
        placeholder="not set",
    )
    if right.button("Set price", key="cmp_price_set", icon=":material/sell:"):
        try:
            card = db.set_price(str(card_name), price)
        except (BadInput, NotFound) as exc:
            show_problems("The price was not set:", exc.problems)
        else:
            flash("success", f"{md(card.name)} now costs ${card.price_per_hour:.2f} per hour.")
            st.rerun()


def rows(
    entries: list[tuple[Curve, Card | None, Recommendation]], params: CompareParams
) -> list[dict[str, Any]]:
    out = []
    for curve, card, result in entries:
        best = result.recommended
        fleet = result.fleet
        at = best.at_cap if best is not None else None
        row: dict[str, Any] = {
            "card": curve.card,
            "precision": curve.precision or "-",
            "resolution": curve.resolution or "-",
            "seats": best.seats if best is not None else "0",
            "with": best.label if best is not None else "nothing fits",
            "latency at cap (ms)": None if at is None else at.e2e_latency_ms,
            "slowest fps at cap": None if at is None else at.min_fps,
            "price per card-hour": _usd(card.price_per_hour if card is not None else None, 2),
            "cost per seat-hour": _usd(None if fleet is None else fleet.cost_per_seat_hour, 3),
        }
        if params.peak_sessions is not None:
            row["GPUs for peak"] = None if fleet is None else fleet.gpus
        row["measure next"] = result.measure_next
        out.append(row)
    return out


def _usd(value: float | None, digits: int) -> str:
    return "not set" if value is None else f"${value:.{digits}f}"


# ---------------------------------------------------------------------------------------

show_flash()
db = store()
try:
    default = default_curve(db)
except NotFound as exc:
    st.title("Compare cards")
    show_problems("There is no curve to compare:", [*exc.problems, "Add one on the Curves page."])
    st.stop()
link = links.opened(CompareParams, check=check)
if link is not None:
    c.load(link.params)
    if link.params.model is None:
        st.session_state[c.key("model")] = default.model
    links.show_ignored(link.ignored)

params = controls()
if params is None:
    st.stop()
links.publish(params)
model = params.model or default.model
st.title(f"Compare cards: {md(model)}", anchor=False)  # no in-page link made of user text
curves = chosen_curves(params, model)
if not curves:
    st.info("No stored curve of this model matches; widen the choice in the sidebar.")
    st.stop()

entries: list[tuple[Curve, Card | None, Recommendation]] = []
progress = st.progress(0.0, text="Simulating sessions on each curve…")
for index, curve in enumerate(curves):
    plan = PlanParams(curve=curve.id, **{n: getattr(params, n) for n in SHARED})
    try:
        inputs = plan_inputs(plan, db)
    except (BadInput, NotFound) as exc:
        show_problems(f"{md(curve.label)} cannot be planned:", exc.problems)
        continue
    entries.append((curve, inputs.card, cache.recommendation(inputs.request)))
    progress.progress(
        (index + 1) / len(curves), text=f"Simulated {index + 1} of {len(curves)} curves"
    )
progress.empty()

st.caption(
    f"Each curve is planned with the same criteria: p{params.percentile:g} latency within "
    f"{params.budget_ms:g} ms end to end, the slowest session at {params.min_fps:g} fps or "
    "more, the card to itself (exclusive). Seats are a range when the fit's band makes the "
    "cap uncertain."
)
table(rows(entries, params), key="cmp_table", column_config=TABLE_COLUMNS)
labels = [f"{x.card}, {x.resolution or '-'} {(x.precision or '').upper()}" for x, _, _ in entries]
left, right = st.columns(2)
fitted = [
    Fitted(label, curve.points, fit_curve(curve.points))
    for label, (curve, _, _) in zip(labels, entries, strict=True)
]
upto = max(16, *(curve.points[-1].batch for curve, _, _ in entries))
left.plotly_chart(fit_figure(fitted, upto=min(upto, 256)), width="stretch", key="cmp_chart_latency")
right.plotly_chart(
    fit_figure(fitted, view="per_frame", upto=min(upto, 256)),
    width="stretch",
    key="cmp_chart_per_frame",
)
st.caption(
    "Lines are the fitted curves (dotted where extrapolated) with their bands; markers are "
    "measured points. Where time per frame falls as the batch grows, batching pays on that "
    "card."
)
left, right = st.columns(2)
left.plotly_chart(
    caps_figure(labels, [r.recommended for _, _, r in entries]),
    width="stretch",
    key="cmp_chart_caps",
)
costs = [r.fleet.cost_per_seat_hour if r.fleet is not None else None for _, _, r in entries]
if any(cost is not None for cost in costs):
    right.plotly_chart(cost_figure(labels, costs), width="stretch", key="cmp_chart_cost")
else:
    right.info(
        "No card compared here has an hourly price yet; set one below to see the cost per "
        "seat side by side.",
        icon=":material/sell:",
    )
price_form(db.cards(), [curve.card for curve, _, _ in entries])
