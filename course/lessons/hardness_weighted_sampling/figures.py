"""Lesson 02: the hardness-weighted sampling distribution by class, the minority's share of it against β, the
staleness of its loss history and the Monte-Carlo error of the DRO gradient."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from dro_course.figures._style import CLASS_COLORS, LAYOUT, PALETTE, layout
from dro_course.lessons.hardness_weighted_sampling.diagnostics import (
    age_survival,
    age_tail,
    minority_mass_curve,
    sampling_summary,
)
from dro_lab._validation import check_int, check_nonempty
from dro_lab.robust import worst_case_weights
from dro_lab.utils import to_numpy

__all__ = [
    "sampling_figure",
    "hws_sampling_figure",
    "minority_mass_figure",
    "age_figure",
    "mc_error_figure",
]

#: Pixels under :func:`sampling_figure`'s plot for its legend's rows (up to three on a page's figure column).
LEGEND_PX = 110


def sampling_figure(
    losses,
    q,
    labels,
    *,
    minority: int | None = None,
    batch_size: int | None = None,
    title: str | None = None,
    heading: str = "Hardness-weighted sampling distribution",
) -> go.Figure:
    """The sampling distribution over a training set, by class.

    Left: each example's probability ``q_i`` against its loss (log y-axis), coloured by class,
    the ``minority`` class drawn large and red; the dashed line is uniform sampling ``1/n``.
    Right: the q-mass of each class (how often a draw lands in it) beside its uniform share
    ``n_c / n``. The title reads out the minority's mass and, with ``batch_size``, its expected
    draws per batch (see :func:`sampling_summary`); ``heading`` is its first line, ``title``
    replaces the whole title.
    """
    ln, qn, yn = to_numpy(losses), to_numpy(q), to_numpy(labels).astype(int)
    if not (ln.shape == qn.shape == yn.shape) or ln.ndim != 1:
        raise ValueError(f"losses, q and labels must be 1-D of one length, got {ln.shape}, {qn.shape}, {yn.shape}")
    summary = sampling_summary(qn, yn, minority=minority, batch_size=batch_size)
    qn = qn / qn.sum()
    n = len(qn)
    classes = list(range(len(summary["class_mass"])))
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.62, 0.38],
        horizontal_spacing=0.12,
        subplot_titles=("q_i against the loss (one dot per example)", "q-mass per class vs uniform"),
    )
    _add_probability_dots(fig, ln, qn, yn, classes, minority)
    fig.add_trace(
        go.Scatter(
            x=[ln.min(), ln.max()],
            y=[1.0 / n, 1.0 / n],
            mode="lines",
            name="uniform 1/n (ERM)",
            line=dict(color="black", dash="dash"),
        ),
        row=1,
        col=1,
    )
    _add_class_mass(fig, summary, classes, minority)
    fig.update_yaxes(type="log", title_text="sampling probability q_i", row=1, col=1)
    fig.update_xaxes(title_text="per-sample loss (history)", row=1, col=1)
    fig.update_xaxes(title_text="class", row=1, col=2)
    fig.update_yaxes(title_text="share of the draws", row=1, col=2)
    if title is None:
        title = _sampling_title(summary, heading, minority=minority, batch_size=batch_size)
    # the legend (a row per six classes, then the two reference lines) gets a bottom margin of its own, so that
    # nothing drawn under the figure (a static twin's sliders and their read-out "β = 10") lands on it
    fig.update_layout(
        **layout(height=430 + LEGEND_PX, margin=dict(l=60, r=20, t=90, b=50 + LEGEND_PX)),
        title=title,
        legend=dict(orientation="h", y=-0.2),
    )
    return fig


def _add_probability_dots(
    fig: go.Figure, ln: np.ndarray, qn: np.ndarray, yn: np.ndarray, classes: Sequence[int], minority: int | None
) -> None:
    """Each example's q_i against its loss, one trace per class, the minority large and red (left panel)."""
    # an underflowed q_i = 0 cannot sit on a log axis: draw it a decade below the smallest positive q (at a large β
    # only the hardest example keeps q > 0, and the others must not be drawn on top of it)
    smallest = qn[qn > 0].min() if np.any(qn > 0) else 1.0 / len(qn)
    floor = max(smallest / 10.0, 1e-30) if np.any(qn == 0) else smallest
    for c in classes:
        m = yn == c
        if not m.any():
            continue
        is_min = c == minority
        color = PALETTE[1] if is_min else CLASS_COLORS[c % len(CLASS_COLORS)]
        marker = dict(
            color=color,
            size=10 if is_min else 5,
            opacity=1.0 if is_min else 0.55,
            line=dict(width=1, color="black") if is_min else dict(width=0),
        )
        fig.add_trace(
            go.Scatter(
                x=ln[m],
                y=np.maximum(qn[m], floor),
                mode="markers",
                legendgroup=f"class {c}",
                name=f"class {c}" + (" (minority)" if is_min else ""),
                marker=marker,
            ),
            row=1,
            col=1,
        )


def _add_class_mass(fig: go.Figure, summary: dict, classes: Sequence[int], minority: int | None) -> None:
    """The q-mass of each class as bars beside its uniform share n_c / n (right panel)."""
    bar_colors = [PALETTE[1] if c == minority else "#7f7f7f" for c in classes]
    fig.add_trace(
        go.Bar(
            x=[str(c) for c in classes],
            y=summary["class_mass"],
            name="q-mass",
            marker_color=bar_colors,
            showlegend=False,
        ),
        row=1,
        col=2,
    )
    fig.add_trace(
        go.Scatter(
            x=[str(c) for c in classes],
            y=summary["class_share"],
            mode="markers",
            name="uniform share n_c/n",
            marker=dict(symbol="line-ew-open", size=22, color="black", line=dict(width=3)),
        ),
        row=1,
        col=2,
    )


def _sampling_title(summary: dict, heading: str, *, minority: int | None, batch_size: int | None) -> str:
    """``heading`` and, for a minority class, its q-mass, expected draws per batch and the ESS as a subtitle."""
    if minority is None:
        return heading
    title = (
        f"{heading}<br><sup>class {minority}: q-mass {summary['minority_mass']:.3f} vs uniform "
        f"{summary['minority_share']:.3f} (×{summary['minority_ratio']:.1f})"
    )
    if batch_size is not None:
        title += (
            f"; expected draws per batch of {batch_size}: {summary['expected_minority_draws']:.2f} "
            f"vs {summary['uniform_minority_draws']:.2f}"
        )
    return title + f"; ESS {summary['ess']:.0f} of n = {summary['n']}</sup>"


def hws_sampling_figure(
    losses, labels, *, beta: float, divergence: str = "kl", minority: int | None = None, batch_size: int | None = None
) -> go.Figure:
    """:func:`sampling_figure` for the hardness-weighted sampler's ``q = worst_case_weights(losses, divergence, β)``.

    The figure the lesson-02 panel redraws when β or the divergence changes. KL and χ² β scales
    are not comparable (χ² at 2β ≈ KL at β to first order).
    """
    ell = torch.as_tensor(to_numpy(losses))
    q = worst_case_weights(ell, divergence=divergence, beta=float(beta))
    name = {"kl": "KL", "chi2": "χ²"}.get(divergence, divergence)
    return sampling_figure(
        ell,
        q,
        labels,
        minority=minority,
        batch_size=batch_size,
        heading=f"Hardness-weighted sampling, {name}, β = {beta:.3g}",
    )


def minority_mass_figure(
    losses, labels, *, minority: int, betas=None, batch_size: int | None = None, title: str | None = None
) -> go.Figure:
    """The minority class's share of the hardness-weighted draws against β (log x-axis), KL beside χ².

    Left: the q-mass of class ``minority`` under KL at β (solid) and under χ² at 2β (dotted; the two agree to
    first order), against its uniform share ``n_c / n`` (dashed: what ERM draws); with ``batch_size`` the title
    reads the peak as expected draws per batch. Right (log y): the effective sample size
    ``1 / Σ q_i²`` of the KL distribution, from ``n`` (uniform) down to 1 (the single largest loss).
    ``betas`` defaults to 101 points from 10⁻² to 10³. The numbers come from
    :func:`dro_lab.samplers.minority_mass_curve`.
    """
    grid = np.logspace(-2, 3, 101) if betas is None else np.asarray(betas, dtype=float)
    if grid.ndim != 1 or grid.size < 2 or not np.all(grid > 0):
        raise ValueError(f"betas must be at least two positive values (a log axis), got {np.ravel(grid).tolist()}")
    if batch_size is not None:
        batch_size = check_int(batch_size, "batch_size")
    mass_kl, ess = minority_mass_curve(losses, labels, minority=minority, betas=grid)
    mass_chi2, _ = minority_mass_curve(losses, labels, minority=minority, betas=2 * grid, divergence="chi2")
    y = to_numpy(labels)
    share = float(np.mean(y == minority))
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12, subplot_titles=(
        f"q-mass of class {minority}", "effective sample size 1/Σq² (KL)"))  # fmt: skip
    fig.add_scatter(x=grid, y=mass_kl, name="KL at β", line=dict(color=PALETTE[1], width=3), row=1, col=1)
    fig.add_scatter(x=grid, y=mass_chi2, name="χ² at 2β", line=dict(color=PALETTE[3], dash="dot"), row=1, col=1)
    fig.add_scatter(x=grid[[0, -1]], y=[share, share], name=f"uniform share n_c/n = {share:.4f} (ERM)",
                    mode="lines", line=dict(color="black", dash="dash"), row=1, col=1)  # fmt: skip
    fig.add_scatter(x=grid, y=ess, name="ESS (KL)", line=dict(color=PALETTE[0]), showlegend=False, row=1, col=2)
    fig.update_xaxes(type="log", title_text="β")
    fig.update_yaxes(title_text="share of the draws", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(type="log", title_text="ESS (examples)", row=1, col=2)
    peak = int(np.argmax(mass_kl))
    heading = (
        f"Whom does the sampler draw? Class {minority}'s share peaks at {mass_kl[peak]:.3f} (KL, β ≈ {grid[peak]:.2g})"
    )
    if batch_size is not None:
        heading += (f"<br><sup>{batch_size * mass_kl[peak]:.2f} of {batch_size} draws per batch, against "
                    f"{batch_size * share:.2f} under uniform sampling</sup>")  # fmt: skip
    fig.update_layout(**layout(height=440, margin=dict(l=60, r=20, t=90, b=50)), legend=dict(orientation="h", y=-0.25),
                      title=title or heading)  # fmt: skip
    return fig


def age_figure(runs: Mapping[str, tuple], *, batch_size: int, title: str | None = None) -> go.Figure:
    """Staleness of the loss history: ages ``t − t_i(t)`` against the paper's tail bound (eq. 104).

    ``runs`` maps a label (e.g. ``"β = 5"``) to ``(ages, q)``: pooled ages of the history entries
    (any shape; ``-1`` = never written, dropped) and the sampling distribution they were drawn
    with. Left: the distribution of the ages. Right (log y): the empirical ``P(age ≥ k)``
    (solid), the exact tail of b i.i.d. draws per iteration from a fixed ``q``,
    ``(1/n) Σ_i (1 − q_i)^{kb}`` (dotted), and the bound ``(1 − α)^{kb}`` with
    ``α = min_i q_i`` (dashed), which holds for every entry.
    """
    check_nonempty(runs, "runs")
    batch_size = check_int(batch_size, "batch_size")
    fig = make_subplots(
        rows=1,
        cols=2,
        horizontal_spacing=0.12,
        subplot_titles=("distribution of history ages", "tail P(age ≥ k) and the bound (1 − α)^{kb}"),
    )
    for j, (label, (ages, q)) in enumerate(runs.items()):
        _add_age_run(fig, label, ages, q, batch_size=batch_size, color=PALETTE[(j + 1) % len(PALETTE)])
    fig.update_xaxes(title_text="age k (iterations since the entry was last written)")
    fig.update_yaxes(title_text="share of entries", row=1, col=1)
    fig.update_yaxes(type="log", title_text="P(age ≥ k)", row=1, col=2)
    fig.update_layout(
        **layout(height=470, barmode="overlay", margin=dict(l=60, r=20, t=90, b=50)),
        legend=dict(orientation="h", y=-0.25),
        title=title or f"Staleness of the loss history (b = {batch_size})",
    )
    return fig


def _add_age_run(fig: go.Figure, label: str, ages, q, *, batch_size: int, color: str) -> None:
    """One run of :func:`age_figure`: its age distribution (left), its empirical tail, the exact tail under
    i.i.d. draws and the bound (right)."""
    k, surv = age_survival(ages)
    probs = np.r_[surv[:-1] - surv[1:], surv[-1]]
    exact, bound, alpha = age_tail(q, k, batch_size)
    fig.add_trace(
        go.Bar(x=k, y=probs, name=f"{label}: ages", marker_color=color, opacity=0.6, legendgroup=label), row=1, col=1
    )
    fig.add_trace(
        go.Scatter(
            x=k,
            y=surv,
            mode="lines",
            name=f"{label}: empirical tail",
            legendgroup=label,
            line=dict(color=color, width=3, shape="hv"),
        ),
        row=1,
        col=2,
    )
    fig.add_trace(
        go.Scatter(
            x=k,
            y=exact,
            mode="lines",
            name=f"{label}: (1/n)Σ(1−q_i)^(kb)",
            legendgroup=label,
            line=dict(color=color, dash="dot"),
        ),
        row=1,
        col=2,
    )
    fig.add_trace(
        go.Scatter(
            x=k,
            y=bound,
            mode="lines",
            name=f"{label}: bound (1−α)^(kb), α={alpha:.2g}",
            legendgroup=label,
            line=dict(color=color, dash="dash"),
        ),
        row=1,
        col=2,
    )


def mc_error_figure(
    ms: Sequence[int],
    errors: Mapping[str, Sequence[float] | None],
    *,
    reference: Sequence[float] | None = None,
    reference_label: str = "∝ 1/√M",
    title: str | None = None,
    note: str | None = None,
) -> go.Figure:
    """Monte-Carlo error against the number of batches ``M`` (log–log), one line per estimator.

    ``reference`` is an optional curve over ``ms`` (e.g. the predicted RMS error
    ``√(tr Σ_q / (bM))`` of an unbiased estimator); drawn dashed black. An estimator whose errors are ``None``
    (one that cannot be computed, e.g. batches of distinct indices when fewer examples have positive probability)
    is not drawn; ``note`` is written under the title (say there why).
    """
    ms = np.asarray(ms, dtype=float)
    if ms.ndim != 1 or ms.size == 0 or not np.isfinite(ms).all() or np.any(ms < 1):
        raise ValueError(f"ms must be a non-empty vector of batch counts M ≥ 1 (a log axis), got {ms.tolist()}")
    if note is not None and not isinstance(note, str):
        raise TypeError(f"note must be a string or None, got {type(note).__name__}")
    fig = go.Figure()
    for j, (label, err) in enumerate(errors.items()):
        if err is None:
            continue
        err = np.asarray(err, dtype=float)
        if err.shape != ms.shape:
            raise ValueError(f"errors[{label!r}] has shape {err.shape}, expected {ms.shape}")
        fig.add_scatter(x=ms, y=err, name=label, mode="lines", line=dict(color=PALETTE[j % len(PALETTE)], width=2))
    if reference is not None:
        fig.add_scatter(
            x=ms,
            y=np.asarray(reference, dtype=float),
            name=reference_label,
            mode="lines",
            line=dict(color="black", dash="dash"),
        )
    fig.update_layout(
        **LAYOUT,
        title=title or "Monte-Carlo estimate of the DRO gradient",
        xaxis_title="number of batches M",
        yaxis_title="relative error ‖ĝ_M − ∇R‖ / ‖∇R‖",
        xaxis_type="log",
        yaxis_type="log",
        legend=dict(orientation="h", y=-0.25),
    )
    if note:
        fig.add_annotation(text=note, xref="paper", yref="paper", x=0.0, y=1.0, xanchor="left", yanchor="bottom",
                           showarrow=False, font=dict(size=12))  # fmt: skip
    return fig
