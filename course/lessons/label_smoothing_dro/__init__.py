"""Lesson 06, label-smoothing DRO (GI-LS): ``ls_dro`` (the inner problem in feature space, its concavity threshold),
``studies`` (the Bayesian-optimisation studies and the γ perturbation), ``tables`` (the checks' Markdown tables),
``data`` (the experiment's data at the notebook's parameters) and ``toolkit`` (every name the lesson's cells call)."""
