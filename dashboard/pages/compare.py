"""Compare cards: one model's curves on every card, their seat caps and cost per seat
under the same criteria, and the cards' hourly prices."""

from __future__ import annotations

import streamlit as st

from dashboard import cache, url_state
from dashboard.charts import Fitted, fit_figure
from dashboard.controls import Controls, queue_controls
from dashboard.plan_charts import caps_figure, cost_figure
from dashboard.state import store
from dashboard.ui import (
    default_curve_or_stop,
    flash,
    show_flash,
    show_over_budget,
    show_problems,
    static_table,
)
from planner import display, limits
from planner.curves.cards import Card
from planner.curves.curve import PRECISIONS
from planner.curves.fit import fit_curve
from planner.errors import BadInput, NotFound
from planner.plan.compare_cards import (
    CardPlan,
    comparable_curves,
    compare_cards,
    flagged_left_out,
    model_of,
    settle,
)
from planner.plan.params import CompareParams, PlanParams
from planner.plan.resolve import command_line
from planner.text import md
from planner.views.cards import card_comparison_view
from planner.views.choices import POLICIES
from planner.views.work import OverBudget

c = Controls("cmp_")
CRITERIA = ("budget_ms", "percentile", "min_fps", "overhead_ms", "max_overwritten", "policies")
REST = ("peak_sessions", "headroom", "seeds", "duration_s", "max_sessions")
SHARED = tuple(n for n in (*CRITERIA, *REST) if n in PlanParams.__dataclass_fields__)


def check(params: CompareParams) -> tuple[CompareParams, list[str]]:
    """A model, card, precision or resolution with no stored curve is ignored."""
    return settle(db, params)


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
    queue_controls(c, bar.expander("How the server serves"))
    bar.markdown("**Fleet**")
    left, right = bar.columns(2)
    c.number(left, "peak_sessions", "Peak sessions", placeholder="not set")
    c.number(right, "headroom", "Headroom (0.2 = 20%)", step=0.05, fmt="%.2f")
    effort = bar.expander("Simulation effort")
    c.number(effort, "seeds", "Random phase draws per count")
    c.number(effort, "duration_s", "Simulated seconds per draw", step=5.0)
    c.number(
        effort,
        "max_sessions",
        "Largest session count considered",
        placeholder=f"until the first failure, up to {int(limits.MAX_SESSIONS.high):,}",
    )
    c.check(
        bar,
        "flagged",
        "Include flagged curves",
        help="Curves whose measurement failed its drift check (the device was busy or its "
        "clocks changed) are left out of the comparison unless you include them.",
    )

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
            flash(
                "success",
                f"{md(card.name)} now costs {md(display.money(card.price_per_hour))} per hour.",
            )
            st.rerun()


def what_to_add(plans: list[CardPlan], params: CompareParams, model: str) -> None:
    """A comparison of one card is no comparison: say what would make it one."""
    cards = {p.curve.card for p in plans}
    if len(cards) > 1:
        return
    others = sorted({x.card for x in db.curves(model=model)} - cards)
    if params.cards and others:
        st.info(
            f"Only {md(', '.join(sorted(cards)))} is compared. Add "
            f"{md(', '.join(others))} under **Cards** in the sidebar, or measure "
            f"{md(model)} on another card.",
            icon=":material/add_circle:",
        )
    else:
        st.info(
            f"{md(model)} has curves on one card only ({md(', '.join(sorted(cards)))}). To "
            "compare cards, add a curve of it on another card: upload a benchmark on the "
            "Curves page, or measure one on the Measure page.",
            icon=":material/add_circle:",
        )
    left, right = st.columns(2)
    left.page_link("dashboard/pages/curves.py", label="Upload a curve",
                   icon=":material/upload:", query_params={"tab": "Upload"})  # fmt: skip
    right.page_link("dashboard/pages/measure.py", label="Measure a card", icon=":material/speed:")


# ---------------------------------------------------------------------------------------

show_flash()
db = store()
default = default_curve_or_stop(db, "Compare cards", "to compare")
link = url_state.opened(CompareParams, check=check)
if link is not None:
    c.load(link.params)
    if link.params.model is None:
        st.session_state[c.key("model")] = default.model
    url_state.show_ignored(link.ignored)

params = controls()
if params is None:
    st.stop()
url_state.publish(params)
model = model_of(db, params)
st.title(f"Compare cards: {md(model)}", anchor=False)  # no in-page link of user text
left_out = flagged_left_out(db, params)
if left_out:
    st.warning(
        f"{len(left_out)} flagged curve(s) left out (their measurement failed its drift "
        f"check): {md('; '.join(f'{x.label} ({x.id})' for x in left_out))}. Tick **Include "
        "flagged curves** in the sidebar to compare them anyway.",
        icon=":material/warning:",
    )
if not comparable_curves(db, params):
    st.info("No stored curve of this model matches; widen the choice in the sidebar.")
    st.stop()

progress = st.progress(0.0, text="Simulating sessions on each curve…")


def _advance(done: int, total: int) -> None:
    progress.progress(done / total, text=f"Simulated {done} of {total} curves")


try:
    with cache.working("Comparing") as account:
        plans = compare_cards(
            db,
            params,
            recommend_with=lambda request: cache.recommendation(request, account),
            progress=_advance,
        )
except OverBudget as exc:
    progress.empty()
    show_over_budget(exc, "comparison", command_line("compare-cards", params))
    st.stop()
progress.empty()
for plan in plans:
    if plan.problems:
        show_problems(f"{md(plan.curve.label)} cannot be planned:", list(plan.problems))
entries = [(p.curve, p.card, p.result) for p in plans if p.result is not None]
planned = [p for p in plans if p.result is not None]

st.caption(
    f"Each curve is planned with the same criteria: p{params.percentile:g} latency within "
    f"{display.ms(params.budget_ms)} end to end, the slowest session at "
    f"{display.fps(params.min_fps)} or more, the card to itself (exclusive). Seats are a "
    "range when the fit's band makes the cap uncertain."
)
static_table(card_comparison_view(planned, params).table.records, key="cmp_table")
what_to_add(planned, params, model)
labels = [f"{x.card}, {x.resolution or '-'} {(x.precision or '').upper()}" for x, _, _ in entries]
left, right = st.columns(2)
fitted = [
    Fitted(label, curve.points, fit_curve(curve.points))
    for label, (curve, _, _) in zip(labels, entries, strict=True)
]
upto = max([16, *(curve.points[-1].batch for curve, _, _ in entries)])
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
costs = [r.fleet.cost_per_seat_hour_span if r.fleet is not None else None for _, _, r in entries]
if any(cost is not None for cost in costs):
    right.plotly_chart(cost_figure(labels, costs), width="stretch", key="cmp_chart_cost")
else:
    right.info(
        "No card compared here has an hourly price yet; set one below to see the cost per "
        "seat side by side.",
        icon=":material/sell:",
    )
price_form(db.cards(), [curve.card for curve, _, _ in entries])
