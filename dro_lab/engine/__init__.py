"""The one training engine: :func:`fit` and the :class:`Strategy` interface.

* :mod:`~dro_lab.engine.strategy` — :class:`Strategy`: how a batch is drawn, changed, reduced and learnt from;
* :mod:`~dro_lab.engine.loop` — :func:`fit`: the loop (fit → one epoch → one step);
* :mod:`~dro_lab.engine.history` — :class:`History`, the per-epoch records;
* :mod:`~dro_lab.engine.checkpoint` — atomic checkpoints and bit-identical resume;
* :mod:`~dro_lab.engine.distributed` — data-parallel training under ``torchrun``.

Methods are strategies (:mod:`dro_lab.strategies`), not loops.
"""

from __future__ import annotations

from .history import History
from .loop import OPTIMIZERS, clone_model, fit
from .strategy import Batch, Strategy

__all__ = ["Batch", "History", "OPTIMIZERS", "Strategy", "clone_model", "fit"]
