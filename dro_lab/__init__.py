"""dro_lab — distributionally robust optimisation and importance sampling for deep learning.

Everything a practitioner needs is importable from the top level::

    import dro_lab
    q = dro_lab.worst_case_weights(losses, divergence="kl", beta=10.0)
    loss = dro_lab.robust_loss(per_sample_losses, divergence="kl", beta=10.0)

Names load lazily (PEP 562): ``import dro_lab`` is instant and the ``dro-lab`` command does not
pay for torch until it needs it. Importing ``dro_lab`` never imports plotly or ipywidgets;
``dro_course.figures`` and ``dro_course.panels`` do, when you import them.
"""

from __future__ import annotations

import importlib

from ._moved import install_finder, moved_attribute

__version__ = "0.2.0"
install_finder()  # an import of a path that moved to the course package fails with one line naming its new home

# public name -> the submodule that defines it (a dotted path below dro_lab)
_EXPORTS = {
    # robust objectives, losses and weights (robust.py, losses.py, reweighting.py)
    "DIVERGENCES": "robust",
    "worst_case_weights": "robust",
    "robust_loss": "robust",
    "RobustLoss": "robust",
    "divergence_value": "robust",
    "radius_to_beta": "robust",
    "done_weights": "reweighting",
    "gairat_weights": "reweighting",
    "mail_weights": "reweighting",
    "class_balanced_weights": "reweighting",
    "spectral_risk_weights": "reweighting",
    "extremile_spectrum": "reweighting",
    "smoothed_targets": "losses",
    "ls_cross_entropy": "losses",
    "torch_label_smoothing": "losses",
    # set-up (utils.py)
    "resolve_device": "utils",
    "seed_everything": "utils",
    "make_generator": "utils",
    # data and models (data/, models.py, metrics.py)
    "evaluate": "metrics",
    "accuracy_report": "metrics",
    "dataset_losses": "metrics",
    "ArrayDataset": "data.datasets",
    "IndexedDataset": "data.datasets",
    "DatasetUnavailableError": "data.online",
    "load_digits": "data.embedded",
    "make_minority_blobs": "data.embedded",
    "load_tabular": "data.embedded",
    "make_imbalanced": "data.groups",
    "split_dataset": "data.datasets",
    "assign_groups": "data.groups",
    "load_mnist": "data.online",
    "load_fashion_mnist": "data.fashion",
    "FASHION_MNIST_CLASSES": "data.fashion",
    "load_cifar10": "data.online",
    "load_digits_defects": "data.defects",
    "make_defect_textures": "data.defects",
    "LogisticRegression": "models",
    "MLP": "models",
    "DigitsCNN": "models",
    "SmallCNN": "models",
    "WideResNet": "models",
    "make_model": "models",
    "count_parameters": "models",
    # samplers, optimizers, attacks, per-sample gradients (samplers/, optim/, attacks.py, pergrad/)
    "ALSO": "optim.also",
    "OptimisticMirrorProx": "optim.mirror_prox",
    "DRAGO": "optim.mirror_prox",
    "kl_prox_step": "optim.prox",
    "simplex_projection": "optim.prox",
    "bilinear_game_path": "optim.prox",
    "fgsm_attack": "attacks.gradient",
    "pgd_attack": "attacks.gradient",
    "robust_accuracy_report": "attacks.evaluation",
    "implicit_correction": "attacks.implicit",
    "gils_shift": "attacks.feature_shift",
    "gils_shift_report": "attacks.feature_shift",
    "HardnessWeightedSampler": "samplers.hardness",
    "ImportanceSampler": "samplers.importance",
    "per_sample_grad_norms": "pergrad.ghost",
    "logit_grad_norms": "pergrad.last_layer",
    "last_layer_grad_norms": "pergrad.last_layer",
    "sampling_quality": "pergrad.quality",
    "SamplingQuality": "pergrad.quality",
    # the training engine (engine/)
    "fit": "engine.loop",
    "Strategy": "engine.strategy",
    "Batch": "engine.strategy",
    "History": "engine.history",
    "clone_model": "engine.loop",
    # training methods (strategies/)
    "ERM": "strategies.basic",
    "RobustLossStrategy": "strategies.basic",
    "HardnessWeightedStrategy": "strategies.sampling",
    "OHEMStrategy": "strategies.basic",
    "ImportanceSamplingStrategy": "strategies.sampling",
    "GroupDROStrategy": "strategies.group_dro",
    "TransformGroupsStrategy": "strategies.group_dro",
    "CompressedWorkersStrategy": "strategies.group_dro",
    "AdversarialTrainingStrategy": "strategies.adversarial",
    "DONEStrategy": "strategies.adversarial",
    "GAIRATStrategy": "strategies.adversarial",
    "MAILStrategy": "strategies.adversarial",
    "UpsamplingStrategy": "strategies.baselines",
    "StaticWeightsStrategy": "strategies.baselines",
    "SpectralRiskStrategy": "strategies.baselines",
    "FastDROStrategy": "strategies.baselines",
    "RecoverStrategy": "strategies.baselines",
    "OnlineGroupDROStrategy": "strategies.baselines",
    "GILSStrategy": "strategies.smoothing",
    "LabelSmoothingStrategy": "strategies.smoothing",
    "MixupStrategy": "strategies.smoothing",
    "CutMixStrategy": "strategies.smoothing",
    "CutoutStrategy": "strategies.smoothing",
    "AttackAugmentStrategy": "strategies.smoothing",
    # experiments: tuning (experiments/)
    "GILS_SEARCH_SPACE": "experiments.tuning",
    "tune": "experiments.tuning",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:  # a name that moved to the course package fails with its new home
        return moved_attribute(__name__, name)
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # cache: later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
