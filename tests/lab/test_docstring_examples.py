"""The library's docstrings keep their promises: every example runs and prints what it shows.

* Every docstring of every module of ``dro_lab`` that holds an example (``>>>`` lines) is one test: the example
  runs as a doctest (``ELLIPSIS | NORMALIZE_WHITESPACE``), with torch's print options reset and
  ``torch.manual_seed(0)`` first, and a failure shows doctest's report. As torch's examples take ``torch`` as
  imported, ours take ``torch``, ``F`` (``torch.nn.functional``) and ``from dro_lab import *``.
* Every callable of ``import dro_lab`` documents its arguments (an ``Args:`` section) or takes none, and the names
  a researcher starts from carry an example, so that examples cannot silently vanish.
"""

from __future__ import annotations

import copy
import dataclasses
import doctest
import importlib
import inspect

import pytest
import torch
from _util import library_modules  # tests/_util.py

import dro_lab

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
#: What every example may take as imported (a module's own names come first).
IMPORTED = {"torch": torch, "F": torch.nn.functional, **{n: getattr(dro_lab, n) for n in dro_lab.__all__}}
#: The public names a researcher starts from: each docstring shows an example.
WITH_EXAMPLES = (
    "worst_case_weights", "robust_loss", "RobustLoss", "divergence_value", "radius_to_beta",
    "done_weights", "class_balanced_weights", "spectral_risk_weights", "smoothed_targets", "ls_cross_entropy",
    "HardnessWeightedSampler", "ImportanceSampler", "ALSO", "OptimisticMirrorProx", "simplex_projection",
    "kl_prox_step", "fgsm_attack", "pgd_attack", "per_sample_grad_norms", "logit_grad_norms", "fit", "History",
    "ERM", "HardnessWeightedStrategy", "GroupDROStrategy", "DONEStrategy", "GILSStrategy", "make_model",
    "load_digits", "make_minority_blobs", "evaluate", "accuracy_report", "tune",
    "dro_lab.experiments.verdict.judge", "dro_lab.experiments.runner.run_experiment",
)  # fmt: skip


def _examples() -> dict[str, doctest.DocTest]:
    """Docstring name -> its examples, each docstring once (a package re-exports what its modules define)."""
    finder = doctest.DocTestFinder(exclude_empty=True)
    found: dict[str, doctest.DocTest] = {}
    for name in library_modules():
        for test in finder.find(importlib.import_module(name), name):
            if test.examples:
                found.setdefault(test.name, test)
    return dict(sorted(found.items()))


EXAMPLES = _examples()


@pytest.fixture
def _default_torch():
    """Torch's default print options and seed 0 for an example; the print options reset again after it."""
    torch.set_printoptions(profile="default")
    torch.manual_seed(0)
    yield
    torch.set_printoptions(profile="default")


@pytest.mark.usefixtures("_default_torch")
@pytest.mark.parametrize("name", list(EXAMPLES))
def test_docstring_example(name):
    test = copy.copy(EXAMPLES[name])
    test.globs = {**IMPORTED, **EXAMPLES[name].globs}  # each run in a fresh copy of its module's namespace
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=FLAGS, verbose=False)
    result = runner.run(test, out=report.append, clear_globs=True)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed\n" + "".join(report)


def _takes_arguments(obj) -> bool:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    return bool(signature.parameters)


def _is_record(obj) -> bool:
    """A dataclass or a named tuple: its parameters are its fields, documented as ``Attributes:``."""
    return inspect.isclass(obj) and (
        dataclasses.is_dataclass(obj) or (issubclass(obj, tuple) and hasattr(obj, "_fields"))
    )


@pytest.mark.parametrize("name", [n for n in dro_lab.__all__ if callable(getattr(dro_lab, n))])
def test_every_public_callable_documents_its_arguments(name):
    obj = getattr(dro_lab, name)
    doc = "\n" + (obj.__doc__ and inspect.cleandoc(obj.__doc__) or "")
    assert doc.strip(), f"dro_lab.{name} has no docstring"
    sections = ("\nArgs:\n", "\nAttributes:\n") if _is_record(obj) else ("\nArgs:\n",)
    documented = any(section in doc for section in sections)
    assert documented or not _takes_arguments(obj), f"dro_lab.{name}'s docstring has no {sections[0].strip()} section"


def _resolve(name: str):
    if "." not in name:
        return getattr(dro_lab, name)
    module, attribute = name.rsplit(".", 1)
    return getattr(importlib.import_module(module), attribute)


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_the_starting_points_show_an_example(name):
    doc = inspect.getdoc(_resolve(name)) or ""
    assert doctest.DocTestParser().get_examples(doc), f"{name}'s docstring lost its example"
