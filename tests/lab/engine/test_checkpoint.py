"""Checkpoint and resume: a run interrupted mid-epoch and resumed from its checkpoint by a fresh model and a fresh
strategy ends bit-identical (CPU) to the same run uninterrupted — parameters, optimizer state and history (less the
measured `seconds`) — for every strategy of `tests/lab/engine/test_determinism.py`'s table. The oracle is the
uninterrupted run, which never touches a checkpoint.

The interruption is an exception raised by the strategy's `observe` in epoch 2 (after the optimizer step it
follows, before that step's checkpoint): the steps after the last checkpoint are lost and redone by the resume.
"""

from __future__ import annotations

import os

import pytest
import torch
from test_determinism import BATCH, IMAGE_STRATEGIES, STRATEGIES, TIME_KEYS, _model, _same, small_benchmark

import dro_lab
import dro_lab.engine.checkpoint as checkpoint_module

EPOCHS = 2
EVERY = 2  # checkpoint_every: optimizer steps
SEED = 3
# strategies whose state_dict misses running epoch statistics: parameters and optimizer state still resume
# exactly, these history keys may differ in the interrupted epoch (remove the entry once the state_dict has them)
KNOWN_MISSING: dict[str, tuple[str, ...]] = {}


class Interrupted(BaseException):
    """What a Ctrl-C or a killed job does to fit: an exception out of the middle of an epoch."""


@pytest.fixture(scope="module")
def data():
    # 200 examples: 4 batches of 64 (the last one short), so "mid-epoch" is a real middle
    return small_benchmark(200)


def _interrupt_after(strategy, calls: int):
    """Make ``strategy.observe`` raise on its ``calls``-th call (the strategy object only, not its class)."""
    count = [0]
    observe = strategy.observe

    def wrapped(indices, losses):
        count[0] += 1
        if count[0] == calls:
            raise Interrupted(f"interrupted at observe #{calls}")
        observe(indices, losses)

    strategy.observe = wrapped
    return count


def _fit(name, data, *, strategy=None, interrupt_at=None, **kw):
    factory, options = STRATEGIES[name]
    train, test = data["image" if name in IMAGE_STRATEGIES else "flat"]
    torch.manual_seed(SEED)
    model = _model(name in IMAGE_STRATEGIES)
    strategy = strategy if strategy is not None else factory()
    if interrupt_at is not None:
        _interrupt_after(strategy, interrupt_at)
    history = dro_lab.fit(
        model,
        train,
        strategy=strategy,
        test=test,
        batch_size=BATCH,
        device="cpu",
        seed=SEED,
        progress=False,
        **{"lr": 0.05, "epochs": EPOCHS, **options, **kw},
    )
    return model, history, strategy


def _records(history, drop=()):
    return [
        {k: v for k, v in r.items() if not any(t in k for t in TIME_KEYS) and k not in drop} for r in history.records
    ]


def _steps_per_epoch(history) -> int:
    return history.records[0]["steps"]


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_interrupted_run_resumes_bit_identically(name, data, tmp_path):
    path = tmp_path / "run.pt"
    # A: uninterrupted, checkpointing (the final checkpoint carries A's optimizer state for the comparison)
    model_a, hist_a, strat_a = _fit(name, data, checkpoint=tmp_path / "a.pt", checkpoint_every=EVERY)
    ref_model, ref_hist, _ = _fit(name, data)  # and without any checkpoint: the checkpoint changes nothing
    for key, value in ref_model.state_dict().items():
        assert torch.equal(value, model_a.state_dict()[key]), f"{name}: checkpointing changed parameter {key}"
    assert _same(_records(hist_a), _records(ref_hist))

    # B: interrupted in epoch 2, one observe after a checkpoint (so one step is lost and redone)
    per_epoch = _steps_per_epoch(hist_a)
    assert per_epoch >= 3, "the data must give several steps per epoch"
    calls = per_epoch + EVERY + 1
    with pytest.raises(Interrupted):
        _fit(name, data, interrupt_at=calls, checkpoint=path, checkpoint_every=EVERY)
    saved = torch.load(path, weights_only=True)
    assert saved["epoch"] == 2 and saved["consumed"] > 0, (saved["epoch"], saved["consumed"])
    assert len(saved["history"]) == 1

    # C: a fresh model (another initialisation) and a fresh strategy continue from the checkpoint
    torch.manual_seed(SEED + 100)
    model_c, hist_c, strat_c = _fit(name, data, checkpoint=path, checkpoint_every=EVERY)
    for key, value in model_a.state_dict().items():
        assert torch.equal(value, model_c.state_dict()[key]), f"{name}: parameter {key} differs after the resume"
    final_a = torch.load(tmp_path / "a.pt", weights_only=True)
    final_c = torch.load(path, weights_only=True)
    assert _same(final_a["optimizer"], final_c["optimizer"]), f"{name}: optimizer state differs after the resume"
    assert _same(final_a["strategy"], final_c["strategy"]), f"{name}: strategy state differs after the resume"
    assert _same(final_a["rng"], final_c["rng"]), f"{name}: generator states differ after the resume"
    drop = KNOWN_MISSING.get(name, ())
    assert _same(_records(hist_a, drop), _records(hist_c, drop)), f"{name}: history differs after the resume"
    if drop and not _same(_records(hist_a), _records(hist_c)):
        pytest.xfail(f"{name}.state_dict lacks its running epoch statistics {drop} (see KNOWN_MISSING)")


def test_resume_at_an_epoch_boundary_and_a_finished_run(data, tmp_path):
    """Interrupted right after an epoch's checkpoint: the resume starts epoch 2 afresh; a finished run returns."""
    path = tmp_path / "run.pt"
    model_a, hist_a, _ = _fit("HardnessWeightedStrategy", data)
    per_epoch = _steps_per_epoch(hist_a)
    with pytest.raises(Interrupted):
        _fit("HardnessWeightedStrategy", data, interrupt_at=per_epoch + 1, checkpoint=path)
    assert torch.load(path, weights_only=True)["consumed"] == 0
    model_c, hist_c, _ = _fit("HardnessWeightedStrategy", data, checkpoint=path)
    assert all(torch.equal(v, model_c.state_dict()[k]) for k, v in model_a.state_dict().items())
    assert _same(_records(hist_a), _records(hist_c))
    # the checkpoint now holds the finished run: fit with it trains no further and returns the same history
    torch.manual_seed(0)
    model_d, hist_d, _ = _fit("HardnessWeightedStrategy", data, checkpoint=path)
    assert _same(_records(hist_a), _records(hist_d))
    assert all(torch.equal(v, model_d.state_dict()[k]) for k, v in model_a.state_dict().items())


def test_interrupted_on_the_last_batch_of_an_epoch(data, tmp_path):
    """checkpoint_every=1 saves after the epoch's last batch too (before the epoch's end is known): the resume
    must close the epoch, not start the sampler's next one, nor redraw a permutation."""
    for name in ("HardnessWeightedStrategy", "ERM", "UpsamplingStrategy"):
        path = tmp_path / f"{name}.pt"
        model_a, hist_a, _ = _fit(name, data)
        per_epoch = _steps_per_epoch(hist_a)
        real_save = checkpoint_module.write

        def save_then_stop(p, state):
            real_save(p, state)
            if state["epoch"] == 1 and state["consumed"] == per_epoch:
                raise Interrupted("after the last batch's checkpoint")

        checkpoint_module.write = save_then_stop
        try:
            with pytest.raises(Interrupted):
                _fit(name, data, checkpoint=path, checkpoint_every=1)
        finally:
            checkpoint_module.write = real_save
        assert torch.load(path, weights_only=True)["consumed"] == per_epoch
        model_c, hist_c, _ = _fit(name, data, checkpoint=path, checkpoint_every=1)
        assert all(torch.equal(v, model_c.state_dict()[k]) for k, v in model_a.state_dict().items()), name
        assert _same(_records(hist_a), _records(hist_c)), name


def test_a_checkpoint_of_another_configuration_is_refused(data, tmp_path):
    path = tmp_path / "run.pt"
    _fit("ERM", data, checkpoint=path)
    for change, word in (({"batch_size": 32}, "batch_size"), ({"seed": 5}, "seed"), ({"lr": 0.01}, "lr")):
        train, test = data["flat"]
        options = {"epochs": EPOCHS, "batch_size": BATCH, "seed": SEED, "lr": 0.05, **change}
        with pytest.raises(ValueError, match=word):
            dro_lab.fit(
                _model(False), train, strategy=dro_lab.ERM(), device="cpu", progress=False, checkpoint=path, **options
            )
    with pytest.raises(ValueError, match="strategy"):
        _fit("OHEMStrategy", data, checkpoint=path)
    with pytest.raises(ValueError, match="epochs"):
        _fit("ERM", data, checkpoint=path, epochs=3)
    with pytest.raises(ValueError, match="optimizer"):
        _fit("ERM", data, checkpoint=path, optimizer="adam")
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="cannot be read") as raised:
        _fit("ERM", data, checkpoint=path)
    message = str(raised.value)  # one line: the file, what is wrong, and the keyword fit has to start afresh
    assert "\n" not in message and repr(str(path)) in message and "resume=False" in message


def test_resume_false_ignores_and_overwrites(data, tmp_path):
    path = tmp_path / "run.pt"
    _fit("OHEMStrategy", data, checkpoint=path)  # another configuration in the file
    model_a, hist_a, _ = _fit("ERM", data)
    model_b, hist_b, _ = _fit("ERM", data, checkpoint=path, resume=False)
    assert all(torch.equal(v, model_b.state_dict()[k]) for k, v in model_a.state_dict().items())
    saved = torch.load(path, weights_only=True)
    assert saved["header"]["strategy"] == "erm" and saved["epoch"] == EPOCHS + 1
    model_c, hist_c, _ = _fit("ERM", data, checkpoint=path)  # now it resumes (a finished run)
    assert _same(_records(hist_a), _records(hist_c))


def test_a_fresh_run_overwrites_at_once(data, tmp_path):
    """With resume=False an interruption before the first epoch's end must not leave the old run resumable."""
    path = tmp_path / "run.pt"
    _fit("OHEMStrategy", data, checkpoint=path)
    with pytest.raises(Interrupted):
        _fit("ERM", data, interrupt_at=2, checkpoint=path, resume=False)
    assert torch.load(path, weights_only=True)["header"]["strategy"] == "erm"


def test_the_write_is_atomic(data, tmp_path, monkeypatch):
    """An interruption inside torch.save leaves the previous checkpoint whole and no temporary file."""
    path = tmp_path / "run.pt"
    _fit("ERM", data, checkpoint=path, epochs=1)
    before = path.read_bytes()
    real_save = torch.save

    def partial_save(obj, f, *args, **kwargs):
        if isinstance(f, (str, os.PathLike)):
            with open(f, "wb") as handle:
                handle.write(b"half a checkpoi")
        else:  # an open file
            f.write(b"half a checkpoi")
        raise Interrupted("killed while saving")

    monkeypatch.setattr(checkpoint_module.torch, "save", partial_save)
    with pytest.raises(Interrupted):
        _fit("ERM", data, checkpoint=path, epochs=1, resume=False)
    monkeypatch.setattr(checkpoint_module.torch, "save", real_save)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.pt"]
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    "kw, word, error",
    [
        ({"checkpoint_every": 2}, "checkpoint_every needs checkpoint", ValueError),
        ({"checkpoint": "x.pt", "checkpoint_every": 0}, "checkpoint_every", ValueError),
        ({"checkpoint": "x.pt", "checkpoint_every": True}, "checkpoint_every", TypeError),
        ({"checkpoint": "x.pt", "checkpoint_every": 1.5}, "checkpoint_every", TypeError),
        ({"checkpoint": "x.pt", "resume": "yes"}, "resume", TypeError),
        ({"checkpoint": "no/such/folder/x.pt"}, "folder", ValueError),
        ({"checkpoint": ""}, "checkpoint", ValueError),
    ],
)
def test_bad_checkpoint_arguments(kw, word, error, data, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    train, _ = data["flat"]
    with pytest.raises(error, match=word):
        dro_lab.fit(_model(False), train, epochs=1, device="cpu", progress=False, **kw)
    with pytest.raises(TypeError, match="checkpoint"):
        dro_lab.fit(_model(False), train, epochs=1, device="cpu", progress=False, checkpoint=3)


class _GlobalRandomness(dro_lab.ERM):
    """A strategy drawing from the global generators (torch, Python, NumPy), as user code may."""

    name = "global-randomness"

    def transform(self, x, y, *, indices, groups, model):
        import random

        import numpy as np

        shift = 0.01 * (torch.rand(()) + random.random() + float(np.random.rand()))
        return [dro_lab.Batch(x + shift, y, groups)]


def test_global_generators_dropout_momentum_and_lr_schedule_resume(data, tmp_path):
    """Dropout and the strategy draw from the global generators; momentum and a per-epoch lr schedule."""
    train, test = data["flat"]

    def run(interrupt_at=None, **kw):
        dro_lab.seed_everything(SEED)
        model = torch.nn.Sequential(
            torch.nn.Linear(64, 16), torch.nn.ReLU(), torch.nn.Dropout(0.3), torch.nn.Linear(16, 10)
        )
        strategy = _GlobalRandomness()
        if interrupt_at is not None:
            _interrupt_after(strategy, interrupt_at)
        if kw.get("checkpoint") and interrupt_at is None:
            dro_lab.seed_everything(SEED + 1)  # the resume restores the global generators itself
        history = dro_lab.fit(
            model,
            train,
            strategy=strategy,
            test=test,
            epochs=3,
            batch_size=BATCH,
            device="cpu",
            seed=SEED,
            progress=False,
            lr=0.05,
            momentum=0.9,
            eval_train=True,
            lr_schedule=lambda e: 1.0 / e,
            **kw,
        )
        return model, history

    model_a, hist_a = run()
    path = tmp_path / "run.pt"
    with pytest.raises(Interrupted):
        run(interrupt_at=_steps_per_epoch(hist_a) + 2, checkpoint=path, checkpoint_every=1)
    model_c, hist_c = run(checkpoint=path, checkpoint_every=1)
    assert all(torch.equal(v, model_c.state_dict()[k]) for k, v in model_a.state_dict().items())
    assert _same(_records(hist_a), _records(hist_c))
    assert hist_c["lr"] == [0.05, 0.025, 0.05 / 3]


@pytest.mark.parametrize("sampling", ["pi", "group"])
def test_group_first_sampling_resumes(sampling, data, tmp_path):
    """GroupDRO's group-first draws read π at every step (the replay reads the saved π, then discards the draws)."""
    train, test = data["flat"]

    def run(interrupt_at=None, **kw):
        torch.manual_seed(SEED)
        model = _model(False)
        strategy = dro_lab.GroupDROStrategy("also", grouping="class", sampling=sampling, pi_lr=0.05, tau=0.5)
        if interrupt_at is not None:
            _interrupt_after(strategy, interrupt_at)
        history = dro_lab.fit(
            model,
            train,
            strategy=strategy,
            test=test,
            epochs=EPOCHS,
            batch_size=BATCH,
            device="cpu",
            seed=SEED,
            progress=False,
            lr=0.003,
            **kw,
        )
        return model, history, strategy

    model_a, hist_a, strat_a = run()
    path = tmp_path / "run.pt"
    with pytest.raises(Interrupted):
        run(interrupt_at=_steps_per_epoch(hist_a) + 3, checkpoint=path, checkpoint_every=2)
    model_c, hist_c, strat_c = run(checkpoint=path, checkpoint_every=2)
    assert all(torch.equal(v, model_c.state_dict()[k]) for k, v in model_a.state_dict().items())
    assert _same(_records(hist_a), _records(hist_c))
    assert torch.equal(strat_a.optimizer.log_pi, strat_c.optimizer.log_pi)
    assert _same(strat_a.pi_history, strat_c.pi_history)


_DDP_WORKER = """
import os, sys
import torch, torch.distributed as dist
import dro_lab

out = sys.argv[1]
dist.init_process_group("gloo")
rank = dist.get_rank()
g = torch.Generator().manual_seed(0)
x = torch.randn(89, 5, generator=g)
train = dro_lab.ArrayDataset(x, (x[:, 0] > 0).long())


class Stop(BaseException):
    pass


def run(name, interrupt_at=None, **kw):
    torch.manual_seed(1 + 100 * rank)
    model = torch.nn.Linear(5, 2)
    strategy = dro_lab.HardnessWeightedStrategy(beta=2.0) if name == "hws" else dro_lab.ERM()
    if interrupt_at is not None:
        count, observe = [0], strategy.observe

        def wrapped(i, l):
            count[0] += 1
            if count[0] == interrupt_at:
                raise Stop()
            observe(i, l)

        strategy.observe = wrapped
    hist = dro_lab.fit(model, train, strategy=strategy, epochs=3, batch_size=8, device="cpu", seed=2, progress=False,
                       **kw)
    return [p.detach().clone() for p in model.parameters()], [
        {k: v for k, v in r.items() if k != "seconds"} for r in hist.records]


result = {}
for name in ("erm", "hws"):
    path = os.path.join(os.path.dirname(out), name + ".pt")
    a = run(name)
    try:
        run(name, interrupt_at=9, checkpoint=path, checkpoint_every=2)  # 6 steps per epoch: epoch 2, step 3
    except Stop:
        pass
    dist.barrier()
    c = run(name, checkpoint=path, checkpoint_every=2)
    result[name] = (a, c)
torch.save(result, f"{out}.rank{rank}")
dist.barrier()  # both ranks done before gloo is torn down (a rank leaving first can abort its peer)
dist.destroy_process_group()
os._exit(0)  # skip the interpreter's teardown: gloo threads held by DDP can abort at exit (see tests/_ddp.py)
"""


@pytest.mark.slow
@pytest.mark.ddp
@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed is not available")
def test_resume_under_ddp_two_gloo_ranks(tmp_path):
    """Under torchrun (2 CPU ranks): rank 0 writes, both ranks load; the resumed run equals the uninterrupted
    one on every rank."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    worker = tmp_path / "worker.py"
    worker.write_text(_DDP_WORKER)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).parents[3])}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            str(worker),
            str(tmp_path / "out"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["erm.pt", "hws.pt", "out.rank0", "out.rank1", "worker.py"]
    for rank in (0, 1):
        result = torch.load(tmp_path / f"out.rank{rank}", weights_only=True)
        for name, ((params_a, records_a), (params_c, records_c)) in result.items():
            assert all(torch.equal(p, q) for p, q in zip(params_a, params_c)), (rank, name)
            assert _same(records_a, records_c), (rank, name)
