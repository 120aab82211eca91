"""Per-sample gradient norms and the quality of a sampling distribution.

* :mod:`~dro_lab.pergrad.ghost` — :func:`per_sample_grad_norms`: exact norms in one forward and one
  backward ("ghost norms"), with the ``torch.func`` fallback of :mod:`~dro_lab.pergrad.vmap`;
* :mod:`~dro_lab.pergrad.last_layer` — forward-only bounds (:func:`logit_grad_norms`,
  :func:`last_layer_grad_norms`);
* :mod:`~dro_lab.pergrad.quality` — :func:`sampling_quality` (Lahire's Algorithm 1 and the score ρ).
"""

from __future__ import annotations

from .ghost import per_sample_grad_norms
from .last_layer import last_layer_grad_norms, logit_grad_norms
from .quality import SamplingQuality, is_estimator_stats, sampling_quality

__all__ = [
    "per_sample_grad_norms",
    "last_layer_grad_norms",
    "logit_grad_norms",
    "SamplingQuality",
    "is_estimator_stats",
    "sampling_quality",
]
