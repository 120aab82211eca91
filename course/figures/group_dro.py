"""Lesson 04, group DRO: descent–ascent on the bilinear game, the worst-case group weights π* against β = 1/τ,
the weights π over training, and the parts of the shipped reference run side by side."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dro_course.figures._style import LAYOUT, PALETTE, layout, method_colors
from dro_course.figures.experiments import reference_beside_live_figure
from dro_lab._validation import check_nonempty
from dro_lab.experiments.result import ExperimentResult
from dro_lab.optim.prox import group_prior, pi_star
from dro_lab.utils import to_numpy

_MAX_FRAMES = 60
_VIEW_CAP = 10.0  # a diverging path is drawn until it passes 10 × the view the calm paths need
_MARGIN = 1.05  # the view: 5 % beyond the farthest drawn point


def _path_array(path, name: str) -> np.ndarray:
    p = to_numpy(path)
    if p.ndim != 2 or p.shape[1] != 2 or p.shape[0] < 1:
        raise ValueError(f"paths[{name!r}] must be an array (T, 2) of (x, y) iterates, got shape {p.shape}")
    if not np.isfinite(p[0]).all():
        raise ValueError(f"paths[{name!r}] must start at a finite point, got {p[0]}")
    return p


def _calm_extent(arrays: Mapping[str, np.ndarray]) -> float:
    """1.5 × the largest coordinate of the paths that do not grow (‖z_T‖ ≤ ‖z_0‖, finite); of the starts if none."""
    calm = [
        p
        for p in arrays.values()
        if np.isfinite(p).all() and np.linalg.norm(p[-1]) <= np.linalg.norm(p[0]) * (1 + 1e-9)
    ]
    pts = np.concatenate(calm) if calm else np.stack([p[0] for p in arrays.values()])
    ext = float(np.abs(pts[np.isfinite(pts)]).max(initial=0.0))
    return 1.5 * (ext if ext > 0 else 1.0)


def _in_view(p: np.ndarray, cap: float) -> np.ndarray:
    """The path up to (not including) its first iterate with a coordinate past ``cap`` (or not finite): a path
    that explodes is drawn while it stays within ``cap``, so the others are not squashed to a dot."""
    out = np.flatnonzero(~(np.abs(p) <= cap).all(1))
    return p if out.size == 0 else p[: max(out[0], 1)]


def bilinear_traces(paths: Mapping[str, object]) -> tuple[list[go.Scatter], float]:
    r"""The traces of :func:`bilinear_figure` and the half-width of its square view.

    One line per path (legend name with the final distance :math:`\|z_T\|` to the saddle, and the last step
    drawn when a diverging path is cut), a marker on each path's last drawn iterate, then the start and the
    saddle (0, 0). Every path is drawn whole unless a coordinate passes 10 × the view the non-growing paths need
    (1.5 × their extent); the half-width covers every drawn point. The widget panel redraws these in place.
    """
    if not paths:
        raise ValueError("paths must map at least one name to a (T, 2) path")
    arrays = {name: _path_array(p, name) for name, p in paths.items()}
    cap = _VIEW_CAP * _calm_extent(arrays)
    shown_paths = {name: _in_view(p, cap) for name, p in arrays.items()}
    traces: list[go.Scatter] = []
    for k, (name, p) in enumerate(arrays.items()):
        color = PALETTE[k % len(PALETTE)]
        final = float(np.linalg.norm(p[-1]))
        shown = shown_paths[name]
        cut = "" if len(shown) == len(p) else f" (drawn to step {len(shown) - 1})"
        traces.append(
            go.Scatter(
                x=shown[:, 0],
                y=shown[:, 1],
                mode="lines",
                name=f"{name}: ‖z_T‖ = {final:.3g}{cut}",
                legendgroup=name,
                line=dict(color=color, width=2),
            )
        )
        traces.append(
            go.Scatter(
                x=shown[-1:, 0],
                y=shown[-1:, 1],
                mode="markers",
                name=f"{name}: z_T",
                legendgroup=name,
                showlegend=False,
                marker=dict(color=color, size=9),
            )
        )
    starts = np.stack([p[0] for p in arrays.values()])
    traces.append(
        go.Scatter(
            x=starts[:, 0],
            y=starts[:, 1],
            mode="markers",
            name="start z₀",
            marker=dict(symbol="circle-open", size=13, color="black", line=dict(width=2)),
        )
    )
    traces.append(
        go.Scatter(
            x=[0.0], y=[0.0], mode="markers", name="saddle (0, 0)", marker=dict(symbol="x", size=12, color="black")
        )
    )
    drawn = float(max(np.abs(p).max() for p in [*shown_paths.values(), starts]))
    return traces, max(_MARGIN * drawn, _calm_extent(arrays))


def _frame_steps(lengths: Sequence[int], max_frames: int = _MAX_FRAMES) -> np.ndarray:
    """At most ``max_frames`` step indices from 0 to the longest path's last step, both ends included."""
    last = max(lengths) - 1
    return np.unique(np.linspace(0, last, min(last + 1, max_frames)).round().astype(int))


def _animate_bilinear(fig: go.Figure, arrays: Mapping[str, np.ndarray]) -> None:
    """Frames moving each path's trail and current iterate (within the still figure's drawn paths); play/pause
    buttons and a step slider."""
    cap = _VIEW_CAP * _calm_extent(arrays)
    steps = _frame_steps([len(p) for p in arrays.values()])
    moving = list(range(2 * len(arrays)))
    frames = []
    for s in steps:
        data = []
        for p in arrays.values():
            trail = _in_view(p[: min(s, len(p) - 1) + 1], cap)
            data += [go.Scatter(x=trail[:, 0], y=trail[:, 1]), go.Scatter(x=trail[-1:, 0], y=trail[-1:, 1])]
        frames.append(go.Frame(data=data, traces=moving, name=str(int(s))))
    fig.frames = frames
    still = {"mode": "immediate", "frame": {"duration": 0, "redraw": False}, "transition": {"duration": 0}}
    fig.update_layout(
        updatemenus=[
            dict(
                type="buttons",
                direction="left",
                x=0.0,
                y=-0.14,
                xanchor="left",
                yanchor="top",
                showactive=False,
                buttons=[
                    dict(
                        label="▶ play",
                        method="animate",
                        args=[
                            None,
                            {
                                "frame": {"duration": 80, "redraw": False},
                                "fromcurrent": True,
                                "transition": {"duration": 0},
                            },
                        ],
                    ),
                    dict(label="❚❚ pause", method="animate", args=[[None], still]),
                ],
            )
        ],
        sliders=[
            dict(
                active=len(frames) - 1,
                x=0.2,
                len=0.8,
                y=-0.1,
                yanchor="top",
                currentvalue=dict(prefix="step t = "),
                steps=[dict(label=f.name, method="animate", args=[[f.name], still]) for f in frames],
            )
        ],
    )


def bilinear_figure(paths: Mapping[str, object], *, animate: bool = False, title: str | None = None) -> go.Figure:
    r"""Iterates of descent–ascent on :math:`\min_x\max_y xy` in the (x, y) plane, saddle and start marked.

    ``paths`` maps a label (e.g. ``"α = 0"``) to a ``(T, 2)`` path, as returned by
    :func:`dro_lab.optim.bilinear_game_path`. The square view holds every drawn point (the outward spiral of
    descent–ascent included); a path that explodes is drawn only while it stays within 10 × the view the
    non-growing paths need, and its legend entry says where it was cut and gives the final distance
    :math:`\|z_T\|`. ``animate=True`` adds plotly frames
    (at most 60, sub-sampled) with play/pause buttons and a step slider; the still figure shows
    the whole paths.
    """
    traces, extent = bilinear_traces(paths)
    fig = go.Figure(data=traces)
    if animate:
        _animate_bilinear(fig, {name: _path_array(p, name) for name, p in paths.items()})
    fig.update_layout(
        **layout(height=480, margin=dict(l=60, r=20, t=50, b=110 if animate else 50)),
        title=title or "Descent–ascent on min_x max_y xy",
        legend=dict(x=1.02, y=1, xanchor="left", yanchor="top"),
    )
    # a square plot area of exactly ±extent on both axes (not a range stretched to fill a wide figure)
    fig.update_xaxes(title_text="x (minimising player)", range=[-extent, extent], zeroline=True, constrain="domain")
    fig.update_yaxes(
        title_text="y (maximising player)",
        range=[-extent, extent],
        zeroline=True,
        scaleanchor="x",
        scaleratio=1,
        constrain="domain",
    )
    return fig


def _group_names(c: int, labels: Sequence | None) -> list[str]:
    if labels is None:
        return [f"group {j}" for j in range(c)]
    labels = [str(s) for s in labels]
    if len(labels) != c:
        raise ValueError(f"labels must name the {c} groups, got {len(labels)}")
    return labels


def pi_star_figure(
    group_losses,
    prior=None,
    betas: Sequence[float] | None = None,
    *,
    labels: Sequence | None = None,
    title: str | None = None,
) -> go.Figure:
    r"""π*_j(β) ∝ π̂_j exp(β L_j) for each group against β = 1/τ (log axis); KL(π*‖π̂) on the right axis.

    β → 0 leaves π at the prior π̂; β → ∞ puts all mass on the worst group. The dotted line is
    the radius :math:`r=\mathrm{KL}(\pi^\star\|\hat\pi)` the penalised problem reaches (it tends to
    :math:`-\log\hat\pi_{j^\star}`). ``betas`` default: 61 points from 10⁻² to 10³.
    """
    betas = np.logspace(-2, 3, 61) if betas is None else np.asarray(list(betas), dtype=float)
    if betas.size == 0 or np.any(~(betas > 0)) or np.any(~np.isfinite(betas)):
        raise ValueError("betas must be finite positive numbers (a log axis; β = 0 is the prior itself)")
    losses = to_numpy(group_losses).reshape(-1)
    solved = [pi_star(losses, prior, beta=b) for b in betas]
    pis = np.stack([s[0] for s in solved])
    kls = np.array([s[1] for s in solved])
    names = _group_names(losses.size, labels)
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for j, name in enumerate(names):
        fig.add_trace(
            go.Scatter(
                x=betas,
                y=pis[:, j],
                mode="lines",
                name=f"π*: {name} (L = {losses[j]:.3g})",
                line=dict(color=PALETTE[j % len(PALETTE)], width=2),
            ),
            secondary_y=False,
        )
    fig.add_trace(
        go.Scatter(x=betas, y=kls, mode="lines", name="r = KL(π*‖π̂)", line=dict(color="black", dash="dot", width=2)),
        secondary_y=True,
    )
    fig.update_layout(
        **LAYOUT, title=title or "Worst-case group weights π*(β), β = 1/τ", legend=dict(orientation="h", y=-0.25)
    )
    fig.update_xaxes(type="log", title_text="β = 1/τ (robustness)")
    fig.update_yaxes(title_text="π*_j", range=[0, 1.02], secondary_y=False)
    fig.update_yaxes(title_text="r = KL(π*‖π̂)", rangemode="tozero", showgrid=False, tickformat=".2g", secondary_y=True)
    return fig


def pi_star_bar_figure(
    group_losses, prior=None, *, beta: float, labels: Sequence | None = None, title: str | None = None
) -> go.Figure:
    r"""Bars of π*(β) per group beside the prior π̂ (the figure the τ panel redraws); the title reads
    out β, τ = 1/β and :math:`r=\mathrm{KL}(\pi^\star\|\hat\pi)`."""
    losses = to_numpy(group_losses).reshape(-1)
    q, r = pi_star(losses, prior, beta=beta)
    p = group_prior(prior, losses.size).numpy()
    names = [f"{n}<br>L = {loss:.3g}" for n, loss in zip(_group_names(losses.size, labels), losses)]
    fig = go.Figure()
    fig.add_bar(x=names, y=p, name="prior π̂", marker_color="#bbbbbb")
    fig.add_bar(x=names, y=q, name="π*(β)", marker_color=PALETTE[1])
    fig.update_layout(
        **LAYOUT,
        barmode="group",
        yaxis_range=[0, 1.02],
        yaxis_title="weight",
        title=title or f"π* at β = {beta:.3g} (τ = {1 / beta:.3g}): r = KL(π*‖π̂) = {r:.3f}",
        legend=dict(orientation="h", y=-0.25),
    )
    return fig


def pi_trajectory_figure(
    pi_history,
    *,
    labels: Sequence | None = None,
    prior=None,
    kl=None,
    top: int = 8,
    title: str | None = None,
    x_title: str = "step t",
) -> go.Figure:
    r"""Group weights π_t over steps, one line per group, dashed at each group's prior weight.

    With more than ``top`` groups the ``top`` groups of largest final weight are drawn and the rest
    are summed into one "others" line. ``kl`` (one value per step, e.g.
    ``opt.kl_to_prior()`` recorded along the run) goes on the right axis as
    :math:`r_t=\mathrm{KL}(\pi_t\|\hat\pi)`. ``x_title`` names the steps (``"epoch"`` when π is recorded
    once per epoch); with at most 12 of them the ticks are whole steps.
    """
    if not isinstance(x_title, str):
        raise TypeError(f"x_title must be a string, got {type(x_title).__name__}")
    pi = to_numpy(pi_history)
    if pi.ndim != 2 or pi.shape[0] < 1:
        raise ValueError(f"pi_history must be an array (T, c), got shape {pi.shape}")
    steps, c = pi.shape
    if not isinstance(top, (int, np.integer)) or top < 1:
        raise ValueError(f"top must be an integer ≥ 1, got {top!r}")
    p = None if prior is None else group_prior(prior, c).numpy()
    lines, others = _trajectory_lines(pi, _group_names(c, labels), p, top)
    t = np.arange(steps)
    fig = make_subplots(specs=[[{"secondary_y": kl is not None}]])
    for k, (name, y, level) in enumerate(lines):
        color = "#7f7f7f" if others and k == len(lines) - 1 else PALETTE[k % len(PALETTE)]
        fig.add_trace(
            go.Scatter(x=t, y=y, mode="lines", name=f"π: {name}", legendgroup=name, line=dict(color=color, width=2)),
            secondary_y=False,
        )
        if level is not None:
            fig.add_trace(
                go.Scatter(
                    x=[t[0], t[-1]],
                    y=[level, level],
                    mode="lines",
                    name=f"prior π̂: {name}",
                    legendgroup=name,
                    showlegend=False,
                    hoverinfo="name+y",
                    line=dict(color=color, dash="dash", width=1),
                ),
                secondary_y=False,
            )
    if kl is not None:
        r = to_numpy(kl).reshape(-1)
        if r.size != steps:
            raise ValueError(f"kl must have one value per step ({steps}), got {r.size}")
        fig.add_trace(
            go.Scatter(x=t, y=r, mode="lines", name="r_t = KL(π_t‖π̂)", line=dict(color="black", dash="dot", width=2)),
            secondary_y=True,
        )
        fig.update_yaxes(
            title_text="r_t = KL(π_t‖π̂)", rangemode="tozero", showgrid=False, tickformat=".2g", secondary_y=True
        )
    fig.update_layout(
        **LAYOUT,
        title=title or "Group weights π over training (dashed: prior π̂)",
        legend=dict(orientation="h", y=-0.25),
    )
    fig.update_xaxes(title_text=x_title, dtick=1 if steps <= 12 else None)  # whole steps: no tick at "0.2 epochs"
    fig.update_yaxes(title_text="π_j", rangemode="tozero", secondary_y=False)
    return fig


def _trajectory_lines(pi: np.ndarray, names: list[str], prior: np.ndarray | None, top: int) -> tuple[list, bool]:
    """``(name, π_j over steps, prior level or None)`` for the ``top`` groups of largest final weight (all of them
    when there are at most ``top``), then one line summing the others; and whether that last line exists."""
    c = pi.shape[1]
    shown = list(range(c)) if c <= top else sorted(np.argsort(-pi[-1], kind="stable")[:top].tolist())
    rest = [j for j in range(c) if j not in shown]
    lines = [(names[j], pi[:, j], None if prior is None else prior[j]) for j in shown]
    if rest:
        lines.append((f"others ({len(rest)} groups)", pi[:, rest].sum(1), None if prior is None else prior[rest].sum()))
    return lines, bool(rest)


def saddle_distance_figure(
    distances: Mapping[str, object], *, title: str | None = None, y_title: str = "‖θ_k − θ*‖₂ + ‖π_k − π*‖₁"
) -> go.Figure:
    """The distance to the saddle point after each step, one line per run, on a log axis: a linear rate of
    convergence (Theorem 1 of the ALSO paper) is a straight line.

    ``distances`` maps a label (``"α = 1"``) to one positive distance per step, as
    :func:`dro_course.lessons.group_dro_also.checks.mirror_prox_distances` returns them; every run gets its own
    colour and dash.
    """
    check_nonempty(distances, "distances")
    names = [str(name) for name in distances]
    colors = method_colors(names, None)
    dashes = ["dot", "dash", "solid", "dashdot", "longdash"]
    fig = go.Figure()
    for k, (name, values) in enumerate(distances.items()):
        d = to_numpy(values).reshape(-1)
        if d.size == 0 or not np.isfinite(d).all() or (d <= 0).any():
            raise ValueError(f"distances[{name!r}] must be a non-empty vector of finite positive distances")
        fig.add_trace(
            go.Scatter(
                x=np.arange(1, d.size + 1),
                y=d,
                mode="lines",
                name=str(name),
                line=dict(color=colors[str(name)], width=2, dash=dashes[k % len(dashes)]),
            )
        )
    fig.update_layout(**LAYOUT, title=title or "Distance to the saddle point", legend=dict(orientation="h", y=-0.25))
    fig.update_yaxes(type="log", title_text=y_title, tickformat=".1g")  # 0.3, not a bare "3" inside a decade
    fig.update_xaxes(title_text="step k (one full gradient each)")
    return fig


def reference_parts_figure(
    parts: Mapping[str, ExperimentResult],
    metric: str,
    *,
    methods: Sequence[str] | None = None,
    title: str | None = None,
    percent: bool = True,
) -> go.Figure:
    """Two parts of one experiment's reference run side by side (ALSO's two imbalance ratios): per panel, each
    method's per-epoch ``metric``, the mean over seeds with a ± one-sd band, one colour per method in both panels,
    each panel titled with its label (the key in ``parts``), data set and number of seeds. ``methods`` (default:
    the first part's) must be in both parts. The panels are those of
    :func:`~dro_course.figures.experiments.reference_beside_live_figure`, with both sides from the reference."""
    if not isinstance(parts, Mapping) or len(parts) != 2:
        raise ValueError(f"parts must map two labels to results, got {parts!r:.80}")
    for label, result in parts.items():
        if not isinstance(result, ExperimentResult):
            raise TypeError(f"parts[{label!r}] must be an ExperimentResult, got {type(result).__name__}")
        lacking = [m for m in methods or [] if m not in result.methods]
        if lacking:
            raise ValueError(f"parts[{label!r}] lacks methods {lacking}; it has {result.methods}")
    first, second = parts.values()
    fig = reference_beside_live_figure(first, second, metric, methods=methods, percent=percent)
    for annotation, (label, result) in zip(fig.layout.annotations, parts.items()):
        annotation.text = f"{label}: {result.dataset}, {len(result.seeds)} seeds"
    fig.update_layout(title=title or f"{metric.replace('_', ' ')} per epoch: mean over seeds ± 1 sd")
    return fig
