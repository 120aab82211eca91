"""The minority toy's figures: each method's decision boundary, and a metric against each knob."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from dro_course.figures._style import LAYOUT, PALETTE
from dro_course.lessons.dro_foundations.toys import TOY_METHODS, MinorityToy
from dro_lab._validation import check_choice
from dro_lab.experiments.summary import summarize_runs
from dro_lab.utils import to_numpy

__all__ = ["TOY_COLORS", "toy_boundaries_figure", "toy_sweep_figure"]


#: One colour per method of the minority toy, the same in every figure of the lesson.
TOY_COLORS = dict(zip(TOY_METHODS, PALETTE))


def _check_toy(toy) -> MinorityToy:
    if not isinstance(toy, MinorityToy):
        raise TypeError(f"toy must be the MinorityToy that run_minority_toy returns, got {type(toy).__name__}")
    return toy


def toy_boundaries_figure(toy: MinorityToy, *, title: str | None = None) -> go.Figure:
    """The minority toy's training points and each method's decision boundary (P(class 1) = ½), first seed.

    Grey shades are the classes, circles the majority group and crosses the minority; the dashed black line is the
    boundary that is fair to both groups, x₁ = 0. Each legend entry carries the model's test worst-group accuracy.
    """
    toy = _check_toy(toy)
    x, y, g = to_numpy(toy.train.x), to_numpy(toy.train.y).astype(int), to_numpy(toy.train.groups).astype(int)
    fig = go.Figure()
    for group, (symbol, size, opacity) in enumerate((("circle", 5, 0.45), ("x", 8, 0.9))):
        for c, color in enumerate(("#b0b0b0", "#3a3a3a")):
            m = (g == group) & (y == c)
            fig.add_scatter(
                x=x[m, 0],
                y=x[m, 1],
                mode="markers",
                name=f"class {c}, {'majority' if group == 0 else 'minority'}",
                marker=dict(color=color, symbol=symbol, size=size, opacity=opacity),
            )
    method_of = {label: method for method, label in toy.headline.items()}
    for label, (gx, gy, prob) in toy.grids.items():
        color = TOY_COLORS[method_of[label]]
        worst = toy.histories[label].last["test_worst_group_accuracy"]
        fig.add_contour(
            x=gx,
            y=gy,
            z=prob,
            contours=dict(start=0.5, end=0.5, size=1, coloring="lines"),
            line=dict(color=color, width=7 if method_of[label] == "ERM" else 3),  # ERM wide: others often lie on it
            colorscale=[[0, color], [1, color]],
            showscale=False,
            showlegend=True,
            name=f"{label}: worst-group {worst:.2f}",
        )
    lo, hi = float(x[:, 1].min()) - 0.5, float(x[:, 1].max()) + 0.5
    fig.add_scatter(
        x=[0, 0], y=[lo, hi], mode="lines", name="fair boundary x₁ = 0", line=dict(color="black", dash="dash")
    )
    fig.update_layout(
        **{**LAYOUT, "height": 520},
        title=title or f"Decision boundaries on the 2-D toy (training points, seed {toy.seeds[0]})",
        xaxis_title="x₁ (core feature)",
        yaxis_title="x₂ (spurious feature)",
        legend=dict(x=1.02, y=1, font=dict(size=11)),
    )
    return fig


def toy_sweep_figure(toy: MinorityToy, knob: str = "beta", *, title: str | None = None) -> go.Figure:
    """Test accuracy (dotted) and worst-group accuracy (solid) against ``knob`` (``"beta"`` or ``"alpha"``), mean ±
    sd over seeds (bars kept in [0, 1]), for the toy's methods swept over that knob; ERM as horizontal lines."""
    check_choice(knob, "knob", ("beta", "alpha"))
    toy = _check_toy(toy)
    methods = [m for m in toy.headline if TOY_METHODS[m] == knob and len({r["value"] for r in toy.rows([m])}) > 1]
    if not methods:
        raise ValueError(f"the toy has no method swept over {knob!r}: pass kl_betas / cvar_alphas to run_minority_toy")
    metrics = (("worst_group_accuracy", "worst-group", "solid"), ("accuracy", "average", "dot"))
    fig = go.Figure()
    erm = summarize_runs(toy.rows(["ERM"]), by=("method",), metrics=[m for m, _, _ in metrics])[0]
    for metric, word, dash in metrics:
        fig.add_hline(y=erm[metric], line=dict(color=TOY_COLORS["ERM"], dash=dash), opacity=0.8)
        fig.add_scatter(x=[None], y=[None], name=f"ERM: {word}", line=dict(color=TOY_COLORS["ERM"], dash=dash))
    for method in methods:
        rows = sorted(summarize_runs(toy.rows([method]), by=("value",), metrics=[m for m, _, _ in metrics]),
                      key=lambda r: r["value"])  # fmt: skip
        for metric, word, dash in metrics:
            mean = np.array([r[metric] for r in rows])
            sd = np.array([r[f"{metric}_std"] for r in rows])
            fig.add_scatter(
                x=[r["value"] for r in rows],
                y=mean,
                mode="lines+markers",
                name=f"{method}: {word}",
                line=dict(color=TOY_COLORS[method], dash=dash),
                error_y=dict(type="data", array=np.minimum(sd, 1 - mean), arrayminus=np.minimum(sd, mean)),
            )
    symbol = "β" if knob == "beta" else "α (CVaR level)"
    values = sorted({r["value"] for m in methods for r in toy.rows([m])})
    fig.update_xaxes(tickvals=values, ticktext=[f"{v:g}" for v in values], minor=dict(showgrid=False))
    fig.update_layout(
        **LAYOUT,
        title=title or f"The toy across {symbol}: test accuracy, mean ± sd over {len(toy.seeds)} seeds",
        xaxis_title=symbol,
        yaxis_title="test accuracy",
        xaxis_type="log",
        legend=dict(orientation="h", y=-0.25),
    )
    return fig
