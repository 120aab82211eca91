"""One colour per method: a figure of many methods (lesson 04 compares twelve) never draws two in one colour."""

from __future__ import annotations

from dro_course.figures._style import PALETTE, method_colors


def test_up_to_thirty_methods_get_distinct_colours():
    names = [f"method {i}" for i in range(30)]
    colours = method_colors(names, None)
    assert len(set(colours.values())) == 30
    assert [colours[n] for n in names[: len(PALETTE)]] == PALETTE  # the usual colours first, in order


def test_a_colour_given_by_the_caller_is_not_reused():
    colours = method_colors(["ERM", "ALSO", "DRAGO"], {"ALSO": PALETTE[0]})
    assert colours["ALSO"] == PALETTE[0] and len(set(colours.values())) == 3


def test_twelve_methods_of_an_experiment_figure_are_twelve_colours():
    import dataclasses

    from dro_course.figures import experiment_curves_figure
    from dro_lab.experiments import load_reference

    result = load_reference("also").result("ratio 10")
    more = dataclasses.replace(result, methods=result.methods + ["ALSO again", "ERM again"])
    more.runs = result.runs + [
        dict(r, method=new)
        for old, new in (("ALSO", "ALSO again"), ("ERM (Adam)", "ERM again"))
        for r in result.runs
        if r["method"] == old
    ]
    fig = experiment_curves_figure(more, "worst_class_accuracy")
    lines = {t.name: t.line.color for t in fig.data if t.mode == "lines" and t.fill != "toself"}
    assert len(lines) == 12 and len(set(lines.values())) == 12


def _zero_run():
    """A smoke-like run whose accuracies are all 0 (an untrained model on the rare class)."""
    import dataclasses

    from dro_lab.experiments import load_reference

    ref = load_reference("hws").result()
    runs = [{**r, "curves": {k: [0.0] * len(v) for k, v in r["curves"].items()}} for r in ref.runs]
    return ref, dataclasses.replace(ref, runs=runs, preset="smoke")


def test_an_all_zero_accuracy_curve_gets_a_non_negative_axis():
    from dro_course.figures import experiment_curves_figure, reference_beside_live_figure

    ref, zero = _zero_run()
    lo, hi = experiment_curves_figure(zero, "minority_accuracy").layout.yaxis.range
    assert -1.0 <= lo <= 0.0 and hi >= 10.0  # plotly's own default would be −1 … 1
    fig = reference_beside_live_figure(ref, zero, "minority_accuracy")
    lo2, hi2 = fig.layout.yaxis2.range
    assert -1.0 <= lo2 <= 0.0 and hi2 >= 10.0
    lo1, hi1 = fig.layout.yaxis.range  # the trained reference: every mean ± sd inside the range, none past 0–100
    means = [ref.curve("minority_accuracy", m).mean(0) * 100 for m in ref.methods]
    assert -1.0 <= lo1 <= min(float(m.min()) for m in means) and max(float(m.max()) for m in means) <= hi1 <= 101.0


def test_a_short_band_draws_no_corner_markers():
    """Under 20 points plotly's default mode adds markers: a band's corners would show as dots."""
    from dro_course.figures import experiment_curves_figure
    from dro_lab.experiments import load_reference

    result = load_reference("hws").result()
    bands = [t for t in experiment_curves_figure(result, "minority_accuracy").data if t.fill == "toself"]
    assert bands and all(t.mode == "lines" for t in bands)
