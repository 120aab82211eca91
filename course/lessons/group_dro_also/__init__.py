"""Lesson 04, group DRO and ALSO: ``saddle`` (the same problems solved by other means: SciPy, the bilinear game, the
saddle point of KL-regularised logistic DRO), ``checks`` (the optimizers checked against it) and ``tasks`` (ALSO on
tabular groups, transformations and workers)."""
