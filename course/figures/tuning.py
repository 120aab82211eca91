"""How much tuning each arm of an experiment got: expected validation performance (Dodge et al., 2019, "Show your
work: improved reporting of experimental results").

For k = 1 … N the figure draws the best validation score one would expect from k trials drawn at random from an
arm's N recorded ones (:meth:`dro_lab.experiments.ExperimentResult.expected_validation`). Arms tuned with equal
effort can be compared at every budget; an arm whose curve is still climbing at its last trial was under-tuned, and
two arms whose curves cross swap places with the budget.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go

from dro_course.figures._style import LAYOUT, method_colors
from dro_lab.experiments import EXPERIMENTS
from dro_lab.experiments.result import ExperimentResult

__all__ = ["expected_validation_figure"]

#: A selection metric named ``neg_<metric>`` is maximised as −metric; the figure draws ``metric`` itself.
_NEGATED = "neg_"
#: Legend entries a row holds on a narrow page (about 650 px, the course site's column): plain arm names, and names
#: with their coverage (a wider page fits more a row, and the plot takes the room left).
_PER_ROW, _PER_ROW_LONG = 4, 1
#: Pixels one legend row adds to the figure's height.
_ROW_HEIGHT = 22


def expected_validation_figure(result: ExperimentResult, *, title: str | None = None) -> go.Figure:
    r"""Expected validation performance: one line per arm of ``result`` with recorded tuning trials.

    At :math:`k` the line is :math:`\mathbb E[\max(v_1, …, v_k)]`, the best of :math:`k` trials drawn with
    replacement from the arm's :math:`N` recorded validation scores (Dodge et al., 2019, eq. 1), for
    :math:`k = 1 … N`. The score is the experiment's selection metric (``EXPERIMENTS[result.experiment].select``),
    in percent for an accuracy and drawn as the metric itself, lowest best, for a ``neg_`` metric (``neg_loss``
    is drawn as the expected lowest validation loss). Where the result records each arm's grid
    (``result.tuning``) the legend names its coverage: "ALSO — 12 of 48 settings, 25 %".

    Args:
        result: an experiment's result (a reference's part: ``load_reference("also").result("ratio 10")``).
        title: the heading; the default names the metric and the data set. A line under it says how to read it.

    Returns:
        A ``go.Figure``, x the number of trials k, y the expected best validation score.

    Example:
        >>> from dro_lab.experiments import load_reference
        >>> result = load_reference("hws").result()
        >>> len(expected_validation_figure(result).data) == len(result.expected_validation())
        True
    """
    if not isinstance(result, ExperimentResult):
        raise TypeError(f"result must be an ExperimentResult, got {type(result).__name__}")
    curves = result.expected_validation()
    if not curves:
        raise ValueError(f"result of {result.experiment!r} records no tuning trials: nothing to draw")
    metric, sign, scale = _metric(result)
    words = metric.replace("_", " ")
    unit = " (%)" if scale == 100.0 else ""
    palette = method_colors(result.methods, None)  # the colours the lesson's other experiment figures give each arm
    fig = go.Figure()
    for method, curve in curves.items():
        fig.add_trace(
            go.Scatter(
                x=list(range(1, len(curve) + 1)),
                y=[sign * scale * v for v in curve],
                name=_legend_name(method, result.tuning.get(method)),
                mode="lines+markers",
                line=dict(color=palette[method], width=2),
                marker=dict(size=6),
                hovertemplate=f"{method}: %{{y:.3g}}{unit.strip(' ()')} after %{{x}} trial(s)<extra></extra>",
            )
        )
    longest = max(len(c) for c in curves.values())
    best = "lowest" if sign < 0 else "best"
    heading = title or f"Expected {best} validation {words} after k tuning trials ({result.dataset})"
    climbing = "falling" if sign < 0 else "rising"
    reading = (
        f"Still {climbing} at the last trial: that arm was under-tuned. "
        "Curves that cross: the winner depends on the tuning budget."
    )
    # The legend goes under the plot, as in the course's other experiment figures: a legend beside it would take
    # half of a narrow page's width once it names coverage. Each of its rows adds to the figure's height, so the
    # plot keeps its own.
    rows = math.ceil(len(curves) / (_PER_ROW_LONG if result.tuning else _PER_ROW))
    fig.update_layout(
        **{**LAYOUT, "height": LAYOUT["height"] + _ROW_HEIGHT * rows, "margin": dict(l=60, r=20, t=75, b=50)},
        title=f"{heading}<br><sup>{reading}</sup>",
        xaxis=dict(title="trials k", range=[0.7, longest + 0.3], dtick=1 if longest <= 20 else None),
        yaxis_title=f"expected {best} validation {words}{unit}",
        legend=dict(orientation="h", yanchor="top", y=-0.2, x=0.0),
    )
    return fig


def _metric(result: ExperimentResult) -> tuple[str, float, float]:
    """The selection metric's name as drawn, the sign that turns a score into it and the scale (100 for an
    accuracy); a result of an experiment the registry does not know draws its raw ``validation score``."""
    experiment = EXPERIMENTS.get(result.experiment)
    if experiment is None:
        return "score", 1.0, 1.0
    metric, sign = experiment.select, 1.0
    if metric.startswith(_NEGATED):
        metric, sign = metric[len(_NEGATED) :], -1.0
    return metric, sign, 100.0 if "accuracy" in metric else 1.0


def _legend_name(method: str, effort: dict | None) -> str:
    """``method``, with its tuning effort where recorded: "ALSO — 12 of 48 settings, 25 %"."""
    if not effort:
        return method
    share = 100.0 * effort["coverage"]
    percent = f"{share:.1f}" if share < 10 and round(share, 1) != round(share) else f"{share:.0f}"
    return f"{method} — {effort['trials']} of {effort['grid_size']} settings, {percent} %"
