"""Lesson 06, label-smoothing DRO (GI-LS): ``ls_dro`` (the inner problem in feature space, its concavity threshold)
and ``studies`` (the Bayesian-optimisation studies and the γ perturbation)."""
