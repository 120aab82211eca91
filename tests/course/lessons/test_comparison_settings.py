"""Lesson 07's set-up call (dro_course.lessons.comparison.settings): the settings hold every parameter the lesson's
cell used to spell out, each under run_comparison's own name, and they run.

* every knob of ``run_comparison`` that the lesson sets reaches ``RUN`` by its own name, checked against the
  function's signature (not against the module's own list);
* the benchmark is ``make_benchmark``'s arguments and is ``RUN["data"]``; the threads are the lesson's on a CPU and
  torch's own on a GPU; ``methods=None`` is every method; a list without ERM, or a setup of the wrong type, is
  refused;
* the settings of the syllabus's smoke preset train one short comparison.
"""

from __future__ import annotations

import inspect

import nbformat
import pytest
import torch

from dro_course import load_syllabus, notebook_parameters, setup_lesson
from dro_course.lessons.comparison import METHODS, comparison_settings, make_benchmark, run_comparison


def _namespace(**changes):
    """The lesson's parameters as its parameters cell writes them (run from the notebook), with ``changes``."""
    lesson = load_syllabus(check_notebooks=False).lesson("07_comparison")
    source = next(c for c in _cells(lesson.notebook) if "parameters" in c.get("metadata", {}).get("tags", []))
    namespace: dict = {}
    exec(source["source"], namespace)  # literals only: the lesson's parameters
    assert set(notebook_parameters(lesson.notebook)) <= set(namespace)
    return {**{k: v for k, v in namespace.items() if not k.startswith("__")}, **changes}


def _cells(path):
    return nbformat.read(str(path), as_version=4).cells


def _settings(**changes):
    namespace = _namespace(**changes)
    setup = setup_lesson("07_comparison", namespace, choices={"methods": list(METHODS)})
    return setup, comparison_settings(setup)


def test_every_knob_reaches_run_comparison_by_its_own_name(capsys):
    setup, settings = _settings(device="cpu")
    accepted = set(inspect.signature(run_comparison).parameters)
    assert set(settings.run) <= accepted, set(settings.run) - accepted
    for name in accepted & set(setup.values) - {"seeds", "epochs", "methods", "device", "hidden"}:
        assert settings.run[name] == setup[name], name
    assert settings.run["hidden"] == (setup["hidden"],) and settings.run["device"] == torch.device("cpu")
    assert settings.run["threads"] == setup["cpu_threads"]
    assert set(settings.benchmark) <= set(inspect.signature(make_benchmark).parameters)
    assert settings.run["data"] == settings.benchmark
    assert settings.methods == list(METHODS) and "ERM" in settings.methods
    assert settings.seeds == tuple(setup["seeds"]) and settings.epochs == setup["epochs"]
    line = settings.summary()
    assert f"{len(METHODS)} methods × {len(setup['seeds'])} paired seed(s)" in line, line


def test_on_a_gpu_torch_keeps_its_own_threads():
    _, cpu = _settings(device="cpu")
    gpu_like = {**dict(_settings(device="cpu")[0].values), "device": torch.device("cuda")}
    assert cpu.run["threads"] == 1 and comparison_settings(gpu_like).run["threads"] is None


def test_a_list_of_methods_without_erm_is_refused_and_so_is_a_setup_of_the_wrong_type():
    with pytest.raises(ValueError, match="ERM"):
        _settings(device="cpu", methods=["KL-DRO"])
    with pytest.raises(TypeError, match="setup"):
        comparison_settings(["beta", 10.0])


def test_the_smoke_settings_train_a_short_comparison():
    _, settings = _settings(device="cpu", methods=["ERM", "CVaR"])
    rows = run_comparison(settings.methods, seeds=settings.seeds[:1], epochs=1, progress=False, **settings.run)
    assert sorted(r["method"] for r in rows) == ["CVaR", "ERM"]
    assert all(0.0 <= r[key] <= 1.0 for r in rows for key in ("avg_acc", "worst_group_acc"))
