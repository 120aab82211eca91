"""One colour per method: a figure of many methods (lesson 04 compares twelve) never draws two in one colour."""

from __future__ import annotations

from dro_lab.viz._style import PALETTE, method_colors


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

    from dro_lab.experiments import load_reference
    from dro_lab.viz import experiment_curves_figure

    result = load_reference("also").result("ratio 10")
    more = dataclasses.replace(result, methods=result.methods + ["ALSO again", "ERM again"])
    more.runs = result.runs + [
        dict(r, method=new)
        for old, new in (("ALSO", "ALSO again"), ("ERM (Adam)", "ERM again"))
        for r in result.runs
        if r["method"] == old
    ]
    fig = experiment_curves_figure(more, "worst_class_accuracy")
    lines = {t.name: t.line.color for t in fig.data if t.mode == "lines"}
    assert len(lines) == 12 and len(set(lines.values())) == 12
