"""dro_lab — distributionally robust optimisation and importance sampling for deep learning.

The library behind the dro_lab course. Everything a practitioner needs is importable from the
top level::

    import dro_lab
    q = dro_lab.worst_case_weights(losses, divergence="kl", beta=10.0)
    loss = dro_lab.robust_loss(per_sample_losses, divergence="kl", beta=10.0)

Names load lazily (PEP 562): ``import dro_lab`` is instant and the ``dro-lab`` command does not
pay for torch until it needs it. Importing ``dro_lab`` never imports plotly or ipywidgets;
``dro_lab.viz`` and ``dro_lab.widgets`` do, when you import them.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> submodule that defines it
_EXPORTS = {
    # robust objectives (robust.py)
    "DIVERGENCES": "robust", "worst_case_weights": "robust", "robust_loss": "robust", "RobustLoss": "robust",
    "divergence_value": "robust", "radius_to_beta": "robust",
    # set-up (utils.py)
    "resolve_device": "utils", "seed_everything": "utils", "make_generator": "utils",
    # training engine and metrics (train.py, metrics.py)
    "fit": "train", "Strategy": "train", "ERM": "train", "RobustLossStrategy": "train", "History": "train",
    "clone_model": "train", "HardnessWeightedStrategy": "train", "OHEMStrategy": "train",
    "ImportanceSamplingStrategy": "train",
    "evaluate": "metrics", "accuracy_report": "metrics", "dataset_losses": "metrics",
    # group DRO (optim.py, group_dro.py) and adversarial examples (adversarial.py)
    "ALSO": "optim", "OptimisticMirrorProx": "optim", "DRAGO": "optim", "kl_prox_step": "optim",
    "simplex_projection": "optim", "bilinear_game_path": "optim",
    "GroupDROStrategy": "group_dro", "TransformGroupsStrategy": "group_dro", "CompressedWorkersStrategy": "group_dro",
    "fgsm_attack": "adversarial", "pgd_attack": "adversarial", "robust_accuracy_report": "adversarial",
    # adversarial training: Madry AT, DONE, GAIRAT, MAIL (adversarial_training.py)
    "AdversarialTrainingStrategy": "adversarial_training", "DONEStrategy": "adversarial_training",
    "GAIRATStrategy": "adversarial_training", "MAILStrategy": "adversarial_training",
    "done_weights": "adversarial_training", "implicit_correction": "adversarial_training",
    "gairat_weights": "adversarial_training", "mail_weights": "adversarial_training",
    # the ALSO paper's baselines as strategies (baselines.py)
    "UpsamplingStrategy": "baselines", "StaticWeightsStrategy": "baselines", "SpectralRiskStrategy": "baselines",
    "FastDROStrategy": "baselines", "RecoverStrategy": "baselines", "OnlineGroupDROStrategy": "baselines",
    "class_balanced_weights": "baselines", "spectral_risk_weights": "baselines", "extremile_spectrum": "baselines",
    # label-smoothing DRO (GI-LS), its baselines and Bayesian optimisation (smoothing.py)
    "smoothed_targets": "smoothing", "ls_cross_entropy": "smoothing", "torch_label_smoothing": "smoothing",
    "gils_shift": "smoothing", "GILSStrategy": "smoothing", "LabelSmoothingStrategy": "smoothing",
    "MixupStrategy": "smoothing", "CutMixStrategy": "smoothing", "CutoutStrategy": "smoothing",
    "AttackAugmentStrategy": "smoothing", "GILS_SEARCH_SPACE": "smoothing", "tune": "smoothing",
    # samplers (samplers.py)
    "HardnessWeightedSampler": "samplers", "ImportanceSampler": "samplers",
    # per-sample gradients and sampling quality (pergrad.py)
    "per_sample_grad_norms": "pergrad", "logit_grad_norms": "pergrad", "last_layer_grad_norms": "pergrad",
    "sampling_quality": "pergrad", "SamplingQuality": "pergrad",
    # data (data.py)
    "ArrayDataset": "data", "IndexedDataset": "data", "DatasetUnavailableError": "data", "load_digits": "data",
    "make_minority_blobs": "data", "load_tabular": "data", "make_imbalanced": "data", "split_dataset": "data",
    "assign_groups": "data", "load_mnist": "data", "load_cifar10": "data",
    "load_digits_defects": "data", "make_defect_textures": "data",
    # models (models.py)
    "LogisticRegression": "models", "MLP": "models", "DigitsCNN": "models", "SmallCNN": "models",
    "WideResNet": "models", "make_model": "models", "count_parameters": "models",
    # the capstone comparison: method registry and runner (comparison.py)
    "METHODS": "comparison", "MethodSpec": "comparison", "available_methods": "comparison",
    "make_benchmark": "comparison", "run_comparison": "comparison", "summarise": "comparison",
    "pareto_front": "comparison", "paired_differences": "comparison",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'dro_lab' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # cache: later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
