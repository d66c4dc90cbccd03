"""The chart of seats per card against latency at the cap names every option worth
choosing beside its marker, and no two names print over each other (the A100 plan's
batch-all and deadline stand a few tenths of a millisecond apart at the same cap)."""

from __future__ import annotations

from dashboard.plan_charts import pareto_figure
from planner.plan.pareto import dominated
from planner.plan.recommend import recommend
from planner.plan.request import Request
from tests.test_stability import curve

A100 = [(1, 0.76), (2, 0.81), (4, 0.93), (8, 1.14), (16, 1.54), (32, 2.45), (64, 4.27),
        (128, 7.81), (256, 14.74)]  # fmt: skip
WIDTH = 420.0  # the plot area of a chart in half a laptop's page, pixels
CHAR, LINE, MARKER = 6.6, 14.0, 8.0  # an 11 px label's character width and line; a marker


def boxes(figure: dict) -> list[tuple[str, tuple[float, float, float, float]]]:
    """Each named option's label, as the pixels it covers (left, top, right, bottom)."""
    layout = figure["layout"]
    (x0, x1), (y0, y1) = layout["xaxis"]["range"], layout["yaxis"]["range"]
    margin = layout["margin"]
    height = layout["height"] - margin["t"] - margin["b"]
    out = []
    for trace in figure["data"]:
        if "text" not in trace["mode"]:
            continue
        positions = trace["textposition"]
        if isinstance(positions, str):
            positions = [positions] * len(trace["x"])
        for x, y, text, where in zip(trace["x"], trace["y"], trace["text"], positions, strict=True):
            px, py = (x - x0) / (x1 - x0) * WIDTH, (y1 - y) / (y1 - y0) * height
            vertical, side = where.split()
            top = {"top": py - MARKER - LINE, "middle": py - LINE / 2, "bottom": py + MARKER}
            gap = MARKER if vertical == "middle" else 0.0
            left = px + gap if side == "right" else px - gap - CHAR * len(text)
            out.append((text, (left, top[vertical], left + CHAR * len(text), top[vertical] + LINE)))
    return out


def test_the_names_of_close_options_do_not_print_over_each_other() -> None:
    request = Request(curve=curve(A100), policies=("batch-all", "deadline", "max-batch"))
    options = recommend(request).options
    by = {o.policy: o for o in options}
    # The case seen: two options within a seat and a few milliseconds of each other.
    assert abs(by["batch-all"].seats_per_card - by["deadline"].seats_per_card) <= 2
    figure = pareto_figure(options, dominated(options)).to_plotly_json()
    labels = boxes(figure)
    assert {text for text, _ in labels} >= {"batch-all", "deadline"}
    for i, (a, (l1, t1, r1, b1)) in enumerate(labels):
        for b, (l2, t2, r2, b2) in labels[i + 1 :]:
            assert not (l1 < r2 and l2 < r1 and t1 < b2 and t2 < b1), (a, b)
