"""Balanced accuracy and F1 against scikit-learn's (a peer library), and the model-on-a-grid evaluation."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from sklearn.metrics import balanced_accuracy_score, f1_score

from dro_lab.metrics import balanced_accuracy, f1_scores, macro_f1


def _labels(seed: int, n: int = 60, k: int = 5, k_pred: int = 6):
    rng = np.random.default_rng(seed)
    return torch.from_numpy(rng.integers(0, k_pred, n)), torch.from_numpy(rng.integers(0, k, n))


@pytest.mark.parametrize("seed", range(20))
def test_balanced_accuracy_and_f1_equal_scikit_learn(seed):
    pred, y = _labels(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn warns when pred holds a class y lacks
        assert balanced_accuracy(pred, y) == pytest.approx(balanced_accuracy_score(y, pred), abs=1e-12)
        assert macro_f1(pred, y) == pytest.approx(f1_score(y, pred, average="macro", zero_division=0), abs=1e-12)
        expect = f1_score(y, pred, average=None, labels=list(range(7)), zero_division=0)
    np.testing.assert_allclose(f1_scores(pred, y, num_classes=7), expect, atol=1e-12)


def test_perfect_and_constant_predictions():
    y = torch.tensor([0, 0, 0, 1, 2])
    assert balanced_accuracy(y, y) == 1.0 and macro_f1(y, y) == 1.0
    always_zero = torch.zeros(5, dtype=torch.long)
    assert balanced_accuracy(always_zero, y) == pytest.approx(1 / 3)  # class 0 recalled fully, 1 and 2 never
    assert f1_scores(always_zero, y) == pytest.approx([2 * 3 / (5 + 3), 0.0, 0.0])


@pytest.mark.parametrize(
    ("pred", "y", "error"),
    [
        (torch.tensor([0, 1]), torch.tensor([0, 1, 1]), ValueError),
        ([0, 1], torch.tensor([0, 1]), TypeError),
        (torch.tensor([], dtype=torch.long), torch.tensor([], dtype=torch.long), ValueError),
    ],
)
def test_bad_inputs_are_refused(pred, y, error):
    with pytest.raises(error):
        balanced_accuracy(pred, y)
