"""Hyper-parameter tuning: Bayesian optimisation with optuna (the GI-LS paper's search, §4.2), and the expected
validation performance of a tuning budget (Dodge et al., 2019)."""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Mapping
from types import MappingProxyType

import numpy as np

from .._validation import check_int

__all__ = ["GILS_SEARCH_SPACE", "tune", "best_at_bounds", "expected_validation_performance"]


#: GI-LS's 4-D search space, name → (type, low, high), with the paper's four knobs (§4.2) on the scale of
#: inputs in [0, 1] and networks trained from scratch. Keys are the GI-LS arguments ``alpha``, ``steps`` (T),
#: ``eta`` and the number of ``epochs``:
#:
#: * α ∈ [0, 0.5], the paper's range;
#: * T ∈ {0..15}: the paper's 1..15 plus T = 0, plain label smoothing (the method's special case, one LS
#:   step per batch in :class:`dro_lab.GILSStrategy`);
#: * η ∈ [1e-3, 0.3] on a log scale, not the paper's [1.5, 3.0]: that box was searched for ImageNet-pretrained
#:   ResNets (§4.2) on ImageNet-sized inputs, and on 8×8 digits in [0, 1] η = 2 moves an image by 30–40 % of
#:   its norm and a cross-entropy model labels 0–3 % of the shifted defect images correctly (η = 0.1 at T = 10
#:   already keeps only 60–75 % of the labels on 10-class digits; 1e-3 is a shift well under 1 %);
#: * epochs ∈ {5..40}, for small sets trained from scratch (the paper's 21..60 fine-tuned pretrained ResNets).
#:
#: Copy and override entries for other data, e.g. ``{**GILS_SEARCH_SPACE, "epochs": ("int", 2, 6)}``; check a
#: candidate η on your inputs with :func:`dro_lab.attacks.gils_shift_report`.
GILS_SEARCH_SPACE: Mapping[str, tuple] = MappingProxyType(
    {
        "alpha": ("float", 0.0, 0.5),
        "steps": ("int", 0, 15),
        "eta": ("logfloat", 1e-3, 0.3),
        "epochs": ("int", 5, 40),
    }
)


_SAMPLERS = ("gp", "tpe", "random")


def expected_validation_performance(scores) -> list[float]:
    r"""The expected best validation score after :math:`k = 1 … N` trials drawn from the :math:`N` observed ones
    (Dodge et al., 2019, "Show your work", eq. 1): with the scores sorted, :math:`v_{(1)} ≤ … ≤ v_{(N)}`,

    .. math:: \mathbb E[\max_k] = \sum_{i=1}^N v_{(i)}\,\big[(i/N)^k - ((i-1)/N)^k\big],

    the empirical CDF of the trials taken as the distribution of one trial. A curve that is still rising at the
    budget says that arm was under-tuned; two arms' curves crossing says a win depends on the budget.

    Args:
        scores: the validation scores of one arm's trials; a trial that diverged (−∞) counts as the arm's worst
            finite score (a figure of −∞ would show nothing).

    Returns:
        ``N`` numbers, non-decreasing, the first the trials' mean and the last at most their maximum.

    Example:
        >>> [round(v, 3) for v in expected_validation_performance([0.1, 0.3, 0.2])]
        [0.2, 0.244, 0.267]
    """
    v = np.sort(np.asarray(scores, dtype=float).reshape(-1))
    finite = v[np.isfinite(v)]
    if finite.size == 0 or np.isnan(v).any() or np.isposinf(v).any():
        raise ValueError(f"scores must hold finite numbers (−∞ for a diverged trial), got {v.tolist()}")
    v = np.where(np.isneginf(v), finite.min(), v)
    cdf = np.arange(v.size + 1) / v.size
    return [float(np.sum(v * (cdf[1:] ** k - cdf[:-1] ** k))) for k in range(1, v.size + 1)]


def _import_optuna():
    try:
        import optuna
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "dro_lab.experiments.tune needs optuna: pip install 'dro-lab[bo]' (or pip install optuna)"
        ) from err
    return optuna


def _check_space(space: Mapping) -> dict:
    """Validate entries: (``"float"``|``"int"``|``"logfloat"``, low, high), (``"categorical"``, choices), or a
    fixed value."""
    if not isinstance(space, Mapping):
        raise TypeError(
            f"space must be a mapping name -> (type, low, high) or a fixed value, got {type(space).__name__}"
        )
    if not space:
        raise ValueError("space is empty: name at least one parameter to tune")
    out = {}
    for name, spec in space.items():
        if isinstance(spec, tuple) and spec and spec[0] in ("float", "int", "logfloat"):
            if len(spec) != 3 or not spec[1] <= spec[2]:
                raise ValueError(f"space[{name!r}] must be (type, low, high) with low ≤ high, got {spec!r}")
            if spec[0] == "int" and not all(isinstance(v, numbers.Integral) for v in spec[1:]):
                raise ValueError(f"space[{name!r}]: integer bounds needed, got {spec!r}")
        elif isinstance(spec, tuple) and spec and spec[0] == "categorical":
            if len(spec) != 2 or not len(spec[1]):
                raise ValueError(f"space[{name!r}] must be ('categorical', choices), got {spec!r}")
        out[name] = spec
    return out


def _suggest(trial, name: str, spec):
    if not isinstance(spec, tuple) or not spec or spec[0] not in ("float", "int", "logfloat", "categorical"):
        return spec  # a fixed value, passed through
    if spec[0] == "int":
        return int(trial.suggest_int(name, int(spec[1]), int(spec[2])))
    if spec[0] == "categorical":
        return trial.suggest_categorical(name, list(spec[1]))
    return float(trial.suggest_float(name, float(spec[1]), float(spec[2]), log=spec[0] == "logfloat"))


def tune(
    objective: Callable[[dict], float],
    space: Mapping = GILS_SEARCH_SPACE,
    *,
    n_trials: int,
    sampler: str = "gp",
    seed: int = 0,
    n_startup_trials: int | None = None,
    direction: str = "maximize",
    verbose: bool = False,
):
    r"""Bayesian optimisation of hyper-parameters with optuna (the paper's §4.2, with a validation split).

    ``objective(params) -> float`` receives a dict of suggested values (``space``'s names; ints for
    ``"int"`` entries; fixed entries passed through) and returns the score to maximise. **The caller
    trains on a training split and scores on a VALIDATION split** carved from the training data (the
    paper reported the best of its 20 test evaluations, an optimistic number); evaluate the chosen
    parameters on the test split once, afterwards.

    Args:
        objective: ``params -> score``.
        space: name → ``("float"|"int"|"logfloat", low, high)``, ``("categorical", choices)`` or a
            fixed value; default :data:`GILS_SEARCH_SPACE` (α ∈ [0, 0.5], T ∈ {0..15}, η ∈ [1e-3, 0.3]
            log-scaled for inputs in [0, 1], epochs ∈ {5..40}).
        n_trials: the budget (the paper: 20 full trainings).
        sampler: ``"gp"`` (:class:`optuna.samplers.GPSampler`, a Matérn-5/2 GP: the closest to the paper's
            Ax set-up), ``"tpe"`` (:class:`optuna.samplers.TPESampler`) or ``"random"``.
        seed: the sampler's seed (same seed and deterministic objective → same study).
        n_startup_trials: random trials before the model-based proposals; ``None``: ``min(10, max(1, n_trials // 3))``
            (optuna's default of 10 would make a short study pure random search).
        direction: ``"maximize"`` (accuracy, the default) or ``"minimize"``.
        verbose: keep optuna's per-trial log lines (silenced to WARNING by default).

    Returns:
        The :class:`optuna.Study`: ``study.best_params``, ``study.best_value``, ``study.trials_dataframe()``
        and ``optuna.visualization`` plots (history, importances, contours) all apply.

    Example:
        >>> study = tune(lambda p: -((p["x"] - 0.3) ** 2), {"x": ("float", 0.0, 1.0)}, n_trials=20)  # doctest: +SKIP
        >>> round(study.best_params["x"], 1)  # doctest: +SKIP
        0.3
    """
    optuna = _import_optuna()
    if not callable(objective):
        raise TypeError(f"objective must be callable params -> float, got {type(objective).__name__}")
    n_trials = check_int(n_trials, "n_trials")
    if sampler not in _SAMPLERS:
        raise ValueError(f"sampler must be one of {_SAMPLERS}, got {sampler!r}")
    if direction not in ("maximize", "minimize"):
        raise ValueError(f"direction must be 'maximize' or 'minimize', got {direction!r}")
    space = _check_space(space)
    startup = {
        "n_startup_trials": min(10, max(1, n_trials // 3))
        if n_startup_trials is None
        else check_int(n_startup_trials, "n_startup_trials")
    }
    if not verbose:
        optuna.logging.set_verbosity(optuna.logging.WARNING)

    def run_trial(trial) -> float:
        params = {name: _suggest(trial, name, spec) for name, spec in space.items()}
        return float(objective(params))

    # optuna 4.x marks GPSampler (and some of its arguments) experimental and warns on every study: the warning
    # speaks of optuna's API stability, not of the study, and would print in every notebook page that tunes.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        if sampler == "gp":
            chosen = optuna.samplers.GPSampler(seed=seed, **startup)
        elif sampler == "tpe":
            chosen = optuna.samplers.TPESampler(seed=seed, **startup)
        else:
            chosen = optuna.samplers.RandomSampler(seed=seed)
        study = optuna.create_study(direction=direction, sampler=chosen)
        study.optimize(run_trial, n_trials=n_trials)
    return study


def best_at_bounds(study, space: Mapping = GILS_SEARCH_SPACE) -> list[str]:
    """The names of the best trial's parameters that sit on an edge of ``space`` (then widen the box: several of
    the paper's Table 3 optima sit on its search bounds)."""
    best = study.best_params
    return [
        name
        for name, spec in space.items()
        if isinstance(spec, tuple)
        and spec
        and spec[0] in ("float", "int", "logfloat")
        and name in best
        and (math.isclose(best[name], spec[1], abs_tol=1e-9) or math.isclose(best[name], spec[2], abs_tol=1e-9))
    ]
