"""Run a paper's experiment with the course's one fair protocol: tune every arm alike, run paired seeds, judge.

:func:`run_experiment` is what notebooks and ``dro-lab experiment`` call. With ``out=DIR`` every finished
training run is kept in ``DIR/runs/`` and the run in progress checkpoints in ``DIR/checkpoints/``
(:func:`dro_lab.fit`'s checkpoints), so calling it again with the same arguments skips what is done and
continues the interrupted run where it stopped; ``DIR/result.json`` is rewritten after every run. Every file is
written atomically (:mod:`dro_lab._files`); one that cannot be read back stops the resume with one line naming it and
the way out, and ``restart=True`` (``dro-lab experiment --restart``) starts the folder over.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import datetime
import hashlib
import json
import multiprocessing
import os
import platform
import re
import shlex
import subprocess
import sys
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from .. import __version__
from .._files import RecordError, atomic_write_text, read_json_record
from .._validation import check_bool, check_choice, check_folder, check_int
from ..engine.loop import fit
from ..optim.schedules import one_cycle_factor
from ..strategies import STRATEGIES
from ..utils import resolve_device, seed_everything
from .papers import EXPERIMENTS
from .protocol import FIT_KNOBS, Arm, Experiment, Splits, tuning_effort
from .result import RUN_KEYS, ExperimentResult

__all__ = ["run_experiment", "train_arm", "parse_seeds", "available_experiments"]

#: The data sets every experiment accepts.
DATASETS = ("digits", "fashion-mnist")


def available_experiments() -> tuple[str, ...]:
    """The names :func:`run_experiment` and ``dro-lab experiment`` accept."""
    return tuple(EXPERIMENTS)


def parse_seeds(text: str | int | Sequence[int]) -> list[int]:
    """``"0-4"`` → ``[0, 1, 2, 3, 4]``; ``"0,2,5"`` → ``[0, 2, 5]``; a list or an int passes through."""
    if isinstance(text, str):
        seeds: list[int] = []
        for part in text.split(","):
            m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
            if not m:
                raise ValueError(f"seeds must look like '0-4' or '0,2,5', got {text!r}")
            low, high = int(m[1]), int(m[2] if m[2] is not None else m[1])
            if high < low:
                raise ValueError(f"seed range {part.strip()!r} runs backwards")
            seeds += range(low, high + 1)
    elif isinstance(text, int) and not isinstance(text, bool):
        seeds = [text]
    else:
        seeds = [check_int(s, "seeds[i]", low=0) for s in text]
    for s in seeds:
        check_int(s, "seed", low=0)
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct and non-empty, got {seeds}")
    return seeds


def run_experiment(
    experiment: str | Experiment,
    *,
    dataset: str = "digits",
    seeds: str | Sequence[int] = (0, 1, 2),
    preset: str = "smoke",
    trials: int | None = None,
    out: str | os.PathLike | None = None,
    methods: Sequence[str] | None = None,
    device: str | torch.device = "auto",
    progress: bool = True,
    restart: bool = False,
    jobs: int = 1,
    threads: int | None = None,
    **overrides,
) -> ExperimentResult:
    """Tune, run and judge a paper's experiment (see :mod:`dro_lab.experiments.protocol` for the protocol).

    Args:
        experiment: a name of :func:`available_experiments` (``"hws"``, ``"importance"``, ``"also"``,
            ``"done"``, ``"gils"``) or an :class:`~dro_lab.experiments.protocol.Experiment`.
        dataset: ``"digits"`` (embedded, offline) or ``"fashion-mnist"`` (Debian's ``dataset-fashion-mnist``,
            see :func:`dro_lab.load_fashion_mnist`).
        seeds: the paired seeds of the final runs: a list, or text such as ``"0-4"``. The first one also
            seeds the tuning runs.
        preset: ``"smoke"`` (seconds, no verdict worth reading), ``"full"`` or ``"gpu"`` where the
            experiment has it: the sizes, epochs and trials to start from.
        trials: tuning trials per arm (the same for every arm); default the preset's. ``1`` runs each arm's
            first grid point (its default) untuned.
        out: a folder for the runs, checkpoints and ``result.json``; ``None`` keeps nothing. A second call with
            the same arguments resumes (a file that cannot be read stops it with a ``ValueError`` naming it).
        methods: run only these arms (by name; the claims between them are kept); default all.
        device: ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"`` …
        progress: a progress bar over the training runs.
        restart: discard what earlier calls left in ``out`` and start over (saying on stderr what it discarded).
        jobs: training runs at once, each in its own process (independent runs: the tuning trials, then the final
            runs); ``1`` trains in this process.
        threads: torch's threads per training run, with torch's deterministic algorithms on (the same command
            then gives the same numbers on the same machine); ``None`` leaves this process's settings alone.
            Both are recorded in the result's ``meta``; a reference run uses ``jobs=2, threads=1``.
        **overrides: settings of the preset to change (``epochs=5``, ``per_class=500`` …; the experiment's
            preset names them).

    Returns:
        An :class:`~dro_lab.experiments.result.ExperimentResult`; ``.verdicts()`` judges the claims.

    Example:
        >>> result = run_experiment("hws", seeds="0-2", preset="smoke", out="runs/hws")  # doctest: +SKIP
        >>> [v["verdict"] for v in result.verdicts()]  # doctest: +SKIP
    """
    named = isinstance(experiment, str)
    if named:
        check_choice(experiment, "experiment", EXPERIMENTS)
        experiment = EXPERIMENTS[experiment]
    elif not isinstance(experiment, Experiment):
        raise TypeError(f"experiment must be a name or an Experiment, got {type(experiment).__name__}")
    if methods is not None:
        experiment = _only(experiment, methods)
    check_choice(dataset, "dataset", DATASETS)
    check_bool(progress, "progress")
    check_bool(restart, "restart")
    jobs = check_int(jobs, "jobs", low=1)
    threads = None if threads is None else check_int(threads, "threads", low=1)
    seeds = parse_seeds(seeds)
    config = experiment.config(dataset, preset, overrides)
    config["trials"] = check_int(trials if trials is not None else config.get("trials", 1), "trials", low=1)
    config["tune_seed"] = seeds[0]
    command = (
        _command(experiment.name, dataset, seeds, preset, trials, methods, device, overrides, out) if named else None
    )
    device = resolve_device(device)
    folder = _Folder.make(out, command, restart)
    meta = _meta(device, threads, jobs)
    _claim_folder(folder, experiment.name, dataset, config, meta["commit"])
    result = ExperimentResult(
        experiment=experiment.name,
        title=experiment.title,
        paper=experiment.paper,
        dataset=dataset,
        preset=preset,
        seeds=seeds,
        config=dict(config),
        methods=[a.name for a in experiment.arms],
        claims=[asdict(c) for c in experiment.claims],
        meta=meta,
        tuning=tuning_effort(experiment, config["trials"]),
        plain=experiment.plain if experiment.plain in [a.name for a in experiment.arms] else None,
    )
    work = _Work(experiment, dataset, config, folder, device, threads)
    tuned = config["trials"] > 1
    total = (sum(e["trials"] for e in result.tuning.values()) if tuned else 0) + len(experiment.arms) * len(seeds)
    with _bar(total, progress, experiment.name) as bar, _pool(jobs) as pool:
        _tune(work, result, pool, bar)
        for seed in seeds:
            result.data[str(seed)] = experiment.data(dataset, seed, config).info
        jobs_ = [("run", arm.name, result.chosen[arm.name], seed) for seed in seeds for arm in experiment.arms]
        for record in _map(work, jobs_, pool, bar):
            result.runs.append(record)
            _save(result, folder)
    return result


def _only(experiment: Experiment, methods: Sequence[str]) -> Experiment:
    """The experiment restricted to some arms, with the claims that compare two of them."""
    if isinstance(methods, str) or not isinstance(methods, Sequence):
        raise TypeError(f"methods must be a list of arm names, got {methods!r}")
    arms = tuple(experiment.arm(name) for name in dict.fromkeys(methods))
    if not arms:
        raise ValueError("methods is empty: name at least one arm")
    kept = {a.name for a in arms}
    claims = tuple(c for c in experiment.claims if {c.method, c.baseline} <= kept)
    return dataclasses.replace(experiment, arms=arms, claims=claims)


@dataclass
class _Work:
    """What every training run of a call shares (sent to each worker process whole)."""

    experiment: Experiment
    dataset: str
    config: dict
    folder: _Folder | None
    device: torch.device
    threads: int | None


def _tune(work: _Work, result: ExperimentResult, pool, bar) -> None:
    """Every arm's trials on the validation split of the tuning seed; the best score's setting is chosen."""
    experiment, config = work.experiment, work.config
    settings = {a.name: a.settings(config["trials"], config["tune_seed"]) for a in experiment.arms}
    if config["trials"] == 1:
        result.chosen = {name: s[0] for name, s in settings.items()}
        return
    jobs = [("tune", name, setting, config["tune_seed"]) for name, options in settings.items() for setting in options]
    records = list(_map(work, jobs, pool, bar))
    for arm in experiment.arms:
        best = None
        for record in (r for r in records if r["method"] == arm.name):
            score = record["final"][experiment.select]
            result.trials.append({"method": arm.name, "setting": record["setting"], "score": score})
            if best is None or score > best[0]:
                best = (score, record["setting"])
        result.chosen[arm.name] = best[1]
    _save(result, work.folder)


def _map(work: _Work, jobs: list[tuple], pool, bar):
    """The records of ``jobs`` (phase, arm, setting, seed), in order, trained ``pool``'s processes at a time."""
    if pool is None:
        for job in jobs:
            yield _job(work, job)
            bar.update(1)
        return
    futures = [pool.submit(_job, work, job) for job in jobs]
    for future in concurrent.futures.as_completed(futures):
        future.result()  # a failed run stops the call at once, naming its error
        bar.update(1)
    yield from (future.result() for future in futures)


@contextlib.contextmanager
def _pool(jobs: int):
    if jobs == 1:
        yield None
        return
    # spawn, not fork: a forked child inherits torch's thread pool in whatever state the parent left it
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield pool


_SPLITS: dict[tuple, Splits] = {}


def _splits(experiment: Experiment, dataset: str, seed: int, config: Mapping) -> Splits:
    """One seed's data, drawn once per process (every arm of a seed trains on the same draw)."""
    key = (experiment.name, dataset, seed, json.dumps(config, sort_keys=True, default=list))
    if key not in _SPLITS:
        if len(_SPLITS) >= 4:
            _SPLITS.pop(next(iter(_SPLITS)))
        _SPLITS[key] = experiment.data(dataset, seed, config)
    return _SPLITS[key]


def _job(work: _Work, job: tuple) -> dict:
    """One training run of the protocol: a tuning trial (scored on the validation split) or a final run."""
    phase, name, setting, seed = job
    if work.threads is not None:
        torch.set_num_threads(work.threads)
        torch.use_deterministic_algorithms(True, warn_only=True)
    splits = _splits(work.experiment, work.dataset, seed, work.config)
    if phase == "tune":
        splits = Splits(splits.train, None, splits.val, splits.info)
    arm = work.experiment.arm(name)
    return _run(work.experiment, arm, setting, splits, seed, work.config, work.folder, work.device, phase)


def _run(experiment, arm: Arm, setting: Mapping, splits: Splits, seed: int, config, folder, device, phase):
    """One training run (or its saved record): the final metrics on ``splits.test`` (the mean over the last
    ``average_last`` epochs) and the per-epoch curves."""
    key = _run_key(phase, arm.name, seed, setting)
    done = folder.path / "runs" / f"{key}.json" if folder else None
    if done is not None and done.exists():
        return folder.read_run(done, arm.name, seed)
    checkpoint = folder.path / "checkpoints" / f"{key}.pt" if folder else None
    start = time.perf_counter()
    tail = _Tail(experiment, splits.test, config, checkpoint)
    try:
        model, history = _train(experiment, arm, setting, splits, seed, config, device, test=phase == "run",
                                checkpoint=checkpoint, callback=tail)  # fmt: skip
    except RecordError as exc:  # this run's checkpoint cannot be resumed: the way out is this folder's, not fit's
        raise exc.with_fix(folder.fix) if folder is not None else exc from None
    curves = _curves(experiment, history.records, config) if phase == "run" else {}
    record = {
        "seed": seed,
        "method": arm.name,
        "setting": dict(setting),
        "final": _final(experiment, model, splits, config, curves, tail.mean(), tuning=phase == "tune"),
        "curves": curves,
        "seconds": time.perf_counter() - start,
    }
    if done is not None:
        atomic_write_text(done, json.dumps(record))
        checkpoint.unlink(missing_ok=True)
        tail.path.unlink(missing_ok=True)
    return record


class _Tail:
    """The final metrics of each of the last ``config["average_last"]`` epochs (a callback of :func:`dro_lab.fit`),
    kept beside the run's checkpoint so that a resumed run still averages every one of them."""

    def __init__(self, experiment, dataset, config, checkpoint: Path | None):
        self.experiment, self.dataset, self.config = experiment, dataset, config
        self.first = config["epochs"] - check_int(config.get("average_last", 1), "average_last", low=1) + 1
        self.path = checkpoint.with_suffix(".tail.json") if checkpoint is not None else None
        self.epochs: dict[str, dict] = {}
        if self.path is not None and self.path.exists():
            self.epochs = read_json_record(
                self.path, what="run's last-epoch metrics", fix="delete it and its checkpoint"
            )

    def __call__(self, epoch: int, record: dict, model) -> None:
        if self.first <= epoch < self.config["epochs"]:  # the last epoch is measured after training, by _final
            measure = self.experiment.tail_metrics or self.experiment.metrics
            self.epochs[str(epoch)] = dict(measure(model, self.dataset, self.config))
            if self.path is not None:
                atomic_write_text(self.path, json.dumps(self.epochs))

    def mean(self) -> dict[str, list[float]]:
        """metric → its values at the measured epochs before the last (the last is measured after training)."""
        keys = set.intersection(*(set(m) for m in self.epochs.values())) if self.epochs else set()
        return {k: [float(m[k]) for m in self.epochs.values()] for k in keys}


def _train(experiment, arm: Arm, setting, splits: Splits, seed, config, device, *, test, checkpoint=None,
           callback=None):  # fmt: skip
    """Seed, build the model and train one arm at one setting: what every run of the protocol does.
    ``callback(epoch, record, model)`` runs after each epoch."""
    strategy_options, fit_options = arm.split(setting, config)
    fit_options = {
        "epochs": config["epochs"],
        "batch_size": config["batch_size"],
        "lr": config["lr"],
        "optimizer": config.get("optimizer", "sgd"),
        "momentum": config.get("momentum", 0.0),
        **fit_options,
    }
    seed_everything(seed)
    model = experiment.model(splits.train, config)
    strategy = STRATEGIES[arm.strategy](**strategy_options) if arm.strategy else None
    history = fit(
        model,
        splits.train,
        strategy=strategy,
        test=splits.test if test else None,
        seed=seed,
        device=device,
        progress=False,
        checkpoint=checkpoint,
        callback=None if callback is None else (lambda epoch, record: callback(epoch, record, model)),
        lr_schedule=lr_schedule(config.get("lr_schedule"), fit_options["epochs"]),
        eval_train=bool(config.get("eval_train", False)),
        **fit_options,
    )
    return model, history


def lr_schedule(name: str | None, epochs: int):
    """A preset's ``lr_schedule`` as :func:`dro_lab.fit`'s ``epoch → factor``: ``None`` (constant),
    ``"one_cycle"`` (up to the peak at 25/60 of training, then down: Sow et al.'s cyclic schedule) or
    ``"step:E:F"`` (× F every E epochs: ``"step:20:0.3"``, Wang et al.'s)."""
    if name is None:
        return None
    if name == "one_cycle":
        return lambda epoch: one_cycle_factor(epoch, epochs)
    m = re.fullmatch(r"step:(\d+):([0-9.]+)", str(name))
    if not m:
        raise ValueError(f"lr_schedule must be None, 'one_cycle' or 'step:EVERY:FACTOR', got {name!r}")
    every, factor = int(m[1]), float(m[2])
    return lambda epoch: factor ** ((epoch - 1) // every)


def train_arm(
    experiment: Experiment | str,
    method: str,
    splits: Splits,
    config: Mapping,
    *,
    seed: int = 0,
    device: str | torch.device = "auto",
    callback=None,
    **setting,
):
    """One training run of one method of an experiment, as :func:`run_experiment` trains it: for a live panel
    (:func:`dro_course.panels.experiment_training_panel`) or a notebook's single run.

    Args:
        experiment: an :class:`Experiment` or its name (``"hws"``).
        method: the arm's name (``"HWS β=10"``).
        splits: the experiment's data (``experiment.data(dataset, seed, config)``); trained on ``train``, curves
            on ``test``.
        config: the run's configuration (``experiment.config(dataset, preset, overrides)``).
        seed: seeds the initialisation and the batch order.
        device: ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"`` …
        callback: ``callback(epoch, record)`` after each epoch; ``record`` holds :func:`dro_lab.fit`'s record and
            the experiment's curves (``minority_accuracy`` …).
        **setting: the arm's knobs (``lr``, ``beta`` …); those left out take the arm's grid's first value.

    Returns:
        ``(model, curves, final)``: the trained model, the per-epoch curves and the final metrics on ``test``.
    """
    if isinstance(experiment, str):
        check_choice(experiment, "experiment", tuple(EXPERIMENTS))
        experiment = EXPERIMENTS[experiment]
    if not isinstance(experiment, Experiment):
        raise TypeError(f"experiment must be an Experiment or its name, got {type(experiment).__name__}")
    arm = experiment.arm(method)
    if not isinstance(splits, Splits):
        raise TypeError(f"splits must be the experiment's Splits, got {type(splits).__name__}")
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping (experiment.config(...)), got {type(config).__name__}")
    check_int(seed, "seed", low=0)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable or None, got {type(callback).__name__}")
    unknown = set(setting) - set(arm.grid) - FIT_KNOBS - set(arm.options)
    if unknown:
        raise ValueError(f"{method!r} has no knob {sorted(unknown)}; its knobs: {sorted(set(arm.grid) | FIT_KNOBS)}")
    chosen = {**{k: v[0] for k, v in arm.grid.items()}, **setting}
    with_curves = None
    if callback is not None:

        def with_curves(epoch, record, model):  # the experiment's curves (minority accuracy …) beside fit's record
            callback(epoch, {**record, **experiment.curves(record, config)})

    model, history = _train(experiment, arm, chosen, splits, seed, config, resolve_device(device), test=True,
                            callback=with_curves)  # fmt: skip
    curves = _curves(experiment, history.records, config)
    return model, curves, _final(experiment, model, splits, config, curves)


def _final(experiment, model, splits: Splits, config, curves, earlier=None, *, tuning=False) -> dict[str, float]:
    """The final metrics on the test split — each the mean of the last epoch's and ``earlier`` epochs' values
    (metric → values, from :class:`_Tail`) — and those read off the curves (areas, dips). A tuning trial measures
    the experiment's ``tail_metrics`` only."""
    measure = experiment.tail_metrics if tuning and experiment.tail_metrics is not None else experiment.metrics
    final = dict(measure(model, splits.test, config))
    for k, values in (earlier or {}).items():
        if k in final:
            final[k] = float(np.mean([*values, final[k]]))
    if curves and experiment.summaries is not None:
        final.update(experiment.summaries(curves, config))
    return {k: float(v) for k, v in final.items()}


def _curves(experiment, records: list[dict], config) -> dict[str, list[float]]:
    per_epoch = [experiment.curves(r, config) for r in records]
    return {k: [float(p[k]) for p in per_epoch] for k in (per_epoch[0] if per_epoch else {})}


def _run_key(phase: str, arm: str, seed: int, setting: Mapping) -> str:
    """A file name for one run: readable, and unique through a hash of the exact arm name and setting (two arms
    whose names differ only in a Greek letter never share a file)."""
    exact = json.dumps([phase, arm, seed, setting], sort_keys=True, ensure_ascii=False)
    digest = hashlib.sha1(exact.encode()).hexdigest()[:10]
    return f"{phase}-{_slug(arm)}-{seed}-{_slug(json.dumps(setting, sort_keys=True))}-{digest}"


def _slug(text: str) -> str:
    return re.sub(r"[^\w.=-]+", "_", text).strip("_")[:60] or "x"


@dataclass
class _Folder:
    """The ``out`` folder of a call: its run records (``runs/``), checkpoints (``checkpoints/``), configuration and
    result, and ``restart``, how to start it over (the call's command with ``--restart``, else ``restart=True``)."""

    path: Path
    restart: str

    @property
    def fix(self) -> str:
        """What to do about a run record or checkpoint that cannot be read."""
        return f"delete it and run again to redo just that run, or start the folder over with {self.restart}"

    @classmethod
    def make(cls, out, command: str | None, restart: bool) -> _Folder | None:
        """The folder of ``out`` (made, with its subfolders; emptied first with ``restart``), or None for None."""
        if out is None:
            return None
        path = check_folder(out, "out")
        folder = cls(path, f"`{command} --restart`" if command else "restart=True")
        if restart:
            folder.discard()
        for sub in ("runs", "checkpoints"):
            (path / sub).mkdir(parents=True, exist_ok=True)
        return folder

    def discard(self) -> None:
        """Delete what an earlier call wrote here (nothing else), and say so on stderr."""
        runs = sorted((self.path / "runs").glob("*.json"))
        checkpoints = sorted((self.path / "checkpoints").glob("*.pt"))
        files = [p for p in (self.path / "result.json", self.path / "configuration.json") if p.is_file()]
        leftovers = [p for sub in ("runs", "checkpoints") for p in (self.path / sub).glob(".*.tmp")]
        for p in (*runs, *checkpoints, *files, *leftovers):
            p.unlink()
        named = "".join(f", {p.name}" for p in files)
        print(f"restart: discarded {len(runs)} run records, {len(checkpoints)} checkpoints{named} in {self.path}",
              file=sys.stderr)  # fmt: skip

    def read_run(self, path: Path, method: str, seed: int) -> dict:
        """A finished run's record, checked: every field, and the method and seed its file name promises."""
        record = read_json_record(path, what="run record", fix=self.fix, required=RUN_KEYS)
        if record["method"] != method or record["seed"] != seed or not isinstance(record["final"], dict):
            raise RecordError(path, "run record", f"does not hold the run of {method!r} at seed {seed}", self.fix)
        return record


def _command(name, dataset, seeds, preset, trials, methods, device, overrides, out) -> str:
    """The ``dro-lab experiment`` command of a call of :func:`run_experiment` (for the advice in its errors)."""
    words = ["dro-lab", "experiment", name, "--dataset", dataset, "--seeds", ",".join(map(str, seeds))]
    words += ["--preset", preset] + (["--trials", str(trials)] if trials is not None else [])
    words += ["--methods", *methods] if methods is not None and not isinstance(methods, str) else []
    words += ["--device", device] if isinstance(device, str) and device != "auto" else []
    words += [w for k, v in overrides.items() for w in ("--set", f"{k}={v!r}")]
    return shlex.join(words + (["--out", str(out)] if out is not None else []))


def _claim_folder(folder: _Folder | None, name: str, dataset: str, config: Mapping, commit: str) -> None:
    """Mark ``folder`` with what its runs were made from, and refuse to resume runs of another configuration or of
    another commit of the code (they would be reused as if they were this one's)."""
    if folder is None:
        return
    stamp = {"experiment": name, "dataset": dataset, "config": dict(config), "commit": commit}
    stamp = json.loads(json.dumps(stamp, default=str))
    path = folder.path / "configuration.json"
    if path.exists():
        fix = f"start the folder over with {folder.restart}, or give another out folder"
        before = read_json_record(path, what="configuration", fix=fix, required=("experiment", "dataset", "config"))
        if before != stamp:
            changed = sorted(
                k
                for k in {*before.get("config", {}), *stamp["config"]}
                if before["config"].get(k) != stamp["config"].get(k)
            )
            what = changed or [k for k in ("experiment", "dataset", "commit") if before.get(k) != stamp[k]]
            raise ValueError(f"{folder.path} holds runs of another configuration (differs in {what}): {fix}")
        return
    atomic_write_text(path, json.dumps(stamp, indent=1) + "\n")


def _save(result: ExperimentResult, folder: _Folder | None) -> None:
    if folder is not None:
        result.save(folder.path / "result.json")


def _meta(device: torch.device, threads: int | None = None, jobs: int = 1) -> dict:
    """How the result was made: the command, the commit, the date, the machine, the threads and the versions."""
    return {
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "commit": _git_commit(),
        "uncommitted_changes": _git_dirty(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "hardware": _hardware(device),
        "threads": threads if threads is not None else torch.get_num_threads(),
        "deterministic": threads is not None or torch.are_deterministic_algorithms_enabled(),
        "jobs": jobs,
        "dro_lab": __version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
    }


def _hardware(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{platform.machine()} CPU, {os.cpu_count()} cores"


def own_checkout(package_dir: Path | None = None) -> Path | None:
    """The root of the dro_lab repository that ``package_dir`` (default: this installed ``dro_lab``) was imported
    from, or None when it was not imported from one (a wheel in site-packages, even inside a user's own git
    repository, has none: its commit would be the user's)."""
    package_dir = Path(package_dir) if package_dir is not None else Path(__file__).resolve().parents[1]
    root = package_dir.resolve().parent
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if project.get("project", {}).get("name") != "dro-lab" or not (root / ".git").exists():
        return None
    return root


def _git(*args: str, root: Path, timeout: float) -> str | None:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=timeout, cwd=root)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def _git_commit() -> str:
    """The commit of the project's own checkout, else the package's version (``"dro-lab 0.2.0"``)."""
    root = own_checkout()
    commit = _git("rev-parse", "HEAD", root=root, timeout=5) if root is not None else None
    return commit.strip() if commit else f"dro-lab {__version__}"


def _git_dirty() -> bool | None:
    """Whether the checkout's tracked files differ from its commit (None outside the project's own checkout)."""
    root = own_checkout()
    status = _git("status", "--porcelain", "--untracked-files=no", root=root, timeout=10) if root else None
    return None if status is None else bool(status.strip())


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def _bar(total: int, progress: bool, name: str):
    if not progress:
        return _NoBar()
    from tqdm.auto import tqdm  # a widget in Jupyter, text in a terminal: chosen when the bar is made

    return tqdm(total=total, desc=f"{name}: training runs", unit="run")
