"""Lesson 05, DONE: ``theory`` (the derivation measured on a model: the KL objective, the Jensen bias, CID's running
average, the implicit term and the input curvature)."""
