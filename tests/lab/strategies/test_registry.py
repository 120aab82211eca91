"""dro_lab.strategies is the one list of training methods: every strategy class is in it, once, and exported.

That the course's every-method comparison picks from it is checked in tests/course/lessons/test_comparison_study.py.
"""

from __future__ import annotations

import inspect

import dro_lab
import dro_lab.strategies as S
from dro_lab.engine import Strategy


def _defined_strategies() -> set[str]:
    """Every public Strategy subclass defined in a module of dro_lab.strategies."""
    found = set()
    for module in (S.basic, S.sampling, S.group_dro, S.baselines, S.adversarial, S.smoothing):
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, Strategy)
                and obj.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found.add(name)
    return found


def test_the_list_holds_every_strategy_class_once():
    listed = [cls.__name__ for family in S.FAMILIES.values() for cls in family]
    assert len(listed) == len(set(listed)) == len(S.STRATEGIES)
    assert set(listed) == _defined_strategies()


def test_every_listed_strategy_is_a_top_level_name():
    exported = {
        n
        for n in dro_lab._EXPORTS
        if inspect.isclass(getattr(dro_lab, n))
        and issubclass(getattr(dro_lab, n), Strategy)
        and getattr(dro_lab, n) is not Strategy
    }
    assert exported == set(S.STRATEGIES)
    assert all(getattr(dro_lab, name) is cls for name, cls in S.STRATEGIES.items())
