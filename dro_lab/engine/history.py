"""The per-epoch records of one training run."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["History"]


@dataclass
class History:
    """Per-epoch records of one run: ``history["test_accuracy"]`` is the column over epochs.

    Args:
        strategy, seed, device, world_size: the run's.
        records: one dict of metrics per epoch (:func:`~dro_lab.fit` appends them).

    Example:
        >>> history = History(records=[{"epoch": 1, "loss": 0.9}, {"epoch": 2, "loss": 0.4}])
        >>> history["loss"], history.last["epoch"], len(history)
        ([0.9, 0.4], 2, 2)
    """

    strategy: str = ""
    seed: int = 0
    device: str = "cpu"
    records: list[dict] = field(default_factory=list)
    world_size: int = 1

    def append(self, record: dict) -> None:
        self.records.append(record)

    def __getitem__(self, key: str) -> list:
        if not self.records or key not in self.records[-1]:
            have = sorted(self.records[-1]) if self.records else []
            raise KeyError(f"no metric {key!r} in this history; have {have}")
        return [r.get(key) for r in self.records]

    def __len__(self) -> int:
        return len(self.records)

    def __contains__(self, key: str) -> bool:
        return bool(self.records) and key in self.records[-1]

    @property
    def last(self) -> dict:
        if not self.records:
            raise IndexError("empty history: no epoch has finished")
        return self.records[-1]

    def to_dict(self) -> dict:
        return {
            "strategy": self.strategy,
            "seed": self.seed,
            "device": self.device,
            "records": self.records,
            "world_size": self.world_size,
        }
