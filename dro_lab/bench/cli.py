"""The ``dro-lab bench`` command line: a parser builder, one runner per benchmark, the dispatcher :func:`main`.

Each runner prints its section's heading and table and stores its results in the JSON document
``out``; :func:`main` parses and checks the options, applies ``--quick``, runs the selected
sections in the order of :data:`BENCHMARKS` and times each. :func:`markdown` writes a whole
document's tables (the course website's benchmark page) with the heads and row formatters of
:data:`SECTIONS`, which the runners print with.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from .._files import atomic_write_text
from ..samplers.hardness import AUTO_TREE_MIN_N
from ..utils import resolve_device
from .also import ALSO_HEAD, bench_also_step, format_also_step
from .done import DONE_HEAD, bench_done_step, format_done_step
from .gils import GILS_HEAD, bench_gils_epoch, format_gils_epoch
from .hws import (
    HWS_DRAW_HEAD,
    HWS_MODELS,
    HWS_STEP_HEAD,
    bench_hws_draw,
    bench_hws_step,
    format_hws_draw,
    format_hws_step,
)
from .importance import IS_RUN_HEAD, bench_is_run, format_is_run, is_run_summary
from .pergrad import PERGRAD_HEAD, PERGRAD_MODELS, bench_pergrad, format_pergrad
from .timing import machine_info
from .weights import CHI2_BALL_HEAD, TABLE_HEAD, bench_chi2_ball, bench_weights, format_chi2_ball, format_row

#: The benchmark sections, in the order ``dro-lab bench`` runs them.
BENCHMARKS = ("weights", "chi2-ball", "hws-step", "hws-draw", "pergrad", "is-run", "also-step", "done-step", "gils-T")

DESCRIPTION = "``dro-lab bench``: speed measurements behind the course's claims, runnable on any machine."

#: Section -> (its entry in the JSON document, its table's head, its rows: the entry -> Markdown rows).
SECTIONS = {
    "weights": ("results", TABLE_HEAD, lambda v: map(format_row, v)),
    "chi2-ball": ("chi2_ball", CHI2_BALL_HEAD, lambda v: map(format_chi2_ball, v)),
    "hws-step": ("hws_step", HWS_STEP_HEAD, lambda v: [format_hws_step(v)]),
    "hws-draw": ("hws_draw", HWS_DRAW_HEAD, lambda v: map(format_hws_draw, v)),
    "pergrad": ("pergrad", PERGRAD_HEAD, lambda v: map(format_pergrad, v)),
    "is-run": ("is_run", IS_RUN_HEAD, format_is_run),
    "also-step": ("also_step", ALSO_HEAD, lambda v: map(format_also_step, v)),
    "done-step": ("done_step", DONE_HEAD, lambda v: [format_done_step(v)]),
    "gils-T": ("gils_T", GILS_HEAD, lambda v: [format_gils_epoch(v)]),
}


def _sizes(text: str) -> list[int]:
    return [int(float(s)) for s in text.split(",") if s.strip()]


def _names(text: str) -> list[str]:
    return [s.strip() for s in text.split(",") if s.strip()]


# --------------------------------------------------------------------------- the parser


def _add_general_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("what", nargs="*", help=f"benchmarks to run: {', '.join(BENCHMARKS)} (default: all)")
    ap.add_argument(
        "--only",
        metavar="LIST",
        help="comma-separated benchmarks to run, e.g. weights,hws-step (the same as naming them positionally)",
    )
    ap.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N")
    ap.add_argument("--threads", type=int, help="torch CPU threads (torch.set_num_threads; default: torch's own)")


def _add_weights_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--sizes", default="1e2,1e3,1e4,1e5,1e6,1e7", help="weights: comma-separated n values")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--scipy-max-n", type=int, default=200, help="largest n given to the SLSQP baseline (O(n³))")
    ap.add_argument("--lp-max-n", type=int, default=10_000, help="largest n given to the CVaR LP baseline")
    ap.add_argument("--dual-max-n", type=int, default=10_000_000, help="largest n given to the 1-D dual baseline")
    ap.add_argument("--budget", type=float, default=20.0, help="seconds per timing before repeats stop early")
    ap.add_argument("--chi2-sizes", default="1e3,1e4,1e5,1e6", help="chi2-ball: comma-separated n values")
    ap.add_argument(
        "--chi2-rhos", default="0.05,1", help="chi2-ball: fast-dro's ball sizes ρ (our radius 2ρ), comma-separated"
    )


def _add_hws_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--hws-n", type=int, default=60_000, help="hws-step: training-set size")
    ap.add_argument(
        "--hws-model",
        default="digits_cnn",
        choices=sorted(HWS_MODELS),
        help="hws-step: the model (1×28×28 inputs, 10 classes)",
    )
    ap.add_argument("--hws-steps", type=int, default=100, help="hws-step: timed steps per mode (after the warm-up)")
    ap.add_argument("--hws-warmup", type=int, default=10, help="hws-step: warm-up steps per mode")
    ap.add_argument("--hws-batch", type=int, default=128, help="hws-step and hws-draw: batch size b")
    ap.add_argument("--hws-beta", type=float, default=10.0, help="hws-step and hws-draw: KL β")
    ap.add_argument("--hws-sizes", default="1e3,1e4,1e5,1e6,1e7", help="hws-draw: comma-separated n values")
    ap.add_argument(
        "--baseline-max-s",
        type=float,
        default=1.0,
        help="hws-draw: skip the official-approach baseline where one step would exceed this",
    )


def _add_importance_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--pergrad-batches", default="5,32,128,512", help="pergrad: comma-separated batch sizes")
    ap.add_argument(
        "--pergrad-models",
        default="small_cnn,digits_cnn",
        help=f"pergrad: comma-separated models ({', '.join(PERGRAD_MODELS)})",
    )
    ap.add_argument("--loop-max-b", type=int, default=128, help="pergrad: largest batch given to the per-sample loop")
    ap.add_argument(
        "--loop-max-s",
        type=float,
        default=2.0,
        help="pergrad: skip the loop where one call is predicted to exceed this (seconds)",
    )
    ap.add_argument("--is-steps", type=int, default=300, help="is-run: SGD steps per training run")
    ap.add_argument("--is-n", type=int, default=100, help="is-run: training-set size")
    ap.add_argument("--is-runs", type=int, default=3, help="is-run: runs per strategy (median)")


def _add_method_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--also-groups", default="10,1e4,1e6", help="also-step: comma-separated group counts c")
    ap.add_argument("--also-model", default="digits_cnn", choices=sorted(HWS_MODELS), help="also-step: the model")
    ap.add_argument("--also-steps", type=int, default=50, help="also-step: timed rounds per group count")
    ap.add_argument("--done-steps", type=int, default=5, help="done-step: PGD steps per iteration")
    ap.add_argument("--done-rounds", type=int, default=50, help="done-step: timed rounds")
    ap.add_argument("--gils-T", default="0,1,5,10,15", help="gils-T: comma-separated numbers of ascent steps")


def build_parser() -> argparse.ArgumentParser:
    """The ``dro-lab bench`` options (their order is the ``--help`` order)."""
    ap = argparse.ArgumentParser(prog="dro-lab bench", description=DESCRIPTION)
    _add_general_options(ap)
    _add_weights_options(ap)
    _add_hws_options(ap)
    _add_importance_options(ap)
    _add_method_options(ap)
    ap.add_argument("--json", metavar="PATH", help="also write machine-readable results here")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="a smoke check: n up to 1e5 (weights, chi2-ball, hws-draw) and 2 repeats; "
        "hws-step at n ≤ 4096 with 20 steps; pergrad at b ≤ 32; is-run with 20 steps and 1 run; "
        "also-step and done-step with 5 rounds",
    )
    return ap


def _selected(ap: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The sections named positionally and by ``--only``, in :data:`BENCHMARKS` order (none named: all)."""
    wanted = list(args.what) + (_names(args.only) if args.only else [])
    unknown = set(wanted) - set(BENCHMARKS)
    if unknown:
        ap.error(f"unknown benchmark(s) {sorted(unknown)}; available: {', '.join(BENCHMARKS)}")
    return [b for b in BENCHMARKS if b in wanted] or list(BENCHMARKS)


def _check(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Usage errors (exit status 2) for option values no section could run with."""
    if args.hws_steps < 1 or args.hws_warmup < 0 or args.hws_batch < 1 or args.hws_n < args.hws_batch:
        ap.error("need --hws-steps ≥ 1, --hws-warmup ≥ 0, --hws-batch ≥ 1 and --hws-n ≥ --hws-batch")
    if args.is_steps < 1 or args.is_n < 1 or args.is_runs < 1:
        ap.error("need --is-steps ≥ 1, --is-n ≥ 1 and --is-runs ≥ 1")
    unknown = set(_names(args.pergrad_models)) - set(PERGRAD_MODELS)
    if unknown:
        ap.error(f"unknown --pergrad-models {sorted(unknown)}")
    try:
        rhos = [float(x) for x in _names(args.chi2_rhos)]
    except ValueError:
        rhos = [0.0]
    if not rhos or not all(0 < r < float("inf") for r in rhos):
        ap.error(f"--chi2-rhos must be positive finite numbers, got {args.chi2_rhos!r}")
    if args.threads is not None and args.threads < 1:
        ap.error(f"--threads must be ≥ 1, got {args.threads}")
    if args.json is not None:  # before the measurements, not after minutes of them
        where = Path(args.json)
        if where.is_dir():
            ap.exit(2, f"{ap.prog}: error: --json {args.json}: is a folder; give a file path\n")
        if not where.parent.is_dir():
            ap.exit(2, f"{ap.prog}: error: --json {args.json}: the folder {str(where.parent)!r} does not exist\n")


def _settings(args: argparse.Namespace) -> argparse.Namespace:
    """The options as the runners use them: the lists parsed, and ``--quick``'s smaller sizes applied."""
    s = argparse.Namespace(**vars(args))
    s.sizes, s.hws_sizes, s.pergrad_batches = _sizes(args.sizes), _sizes(args.hws_sizes), _sizes(args.pergrad_batches)
    s.chi2_sizes, s.chi2_rhos = _sizes(args.chi2_sizes), [float(x) for x in _names(args.chi2_rhos)]
    s.pergrad_models, s.gils_epochs = _names(args.pergrad_models), 3
    if args.quick:
        s.sizes, s.repeats = [n for n in s.sizes if n <= 100_000] or [1000], 2
        s.hws_sizes = [n for n in s.hws_sizes if n <= 100_000] or [1000]
        s.chi2_sizes = [n for n in s.chi2_sizes if n <= 100_000] or [1000]
        s.hws_n, s.hws_steps = max(min(args.hws_n, 4096), args.hws_batch), min(args.hws_steps, 20)
        s.hws_warmup = min(args.hws_warmup, 3)
        s.pergrad_batches = [b for b in s.pergrad_batches if b <= 32] or [5]
        s.is_steps, s.is_runs = min(args.is_steps, 20), 1
        s.also_steps, s.done_rounds, s.gils_epochs = min(args.also_steps, 5), min(args.done_rounds, 5), 1
    return s


# --------------------------------------------------------------------------- one runner per section


def _run_weights(s: argparse.Namespace, device: torch.device, out: dict) -> None:
    print("\n## weights: worst_case_weights vs scipy\n")
    print(TABLE_HEAD, flush=True)  # rows print as they finish: the n = 10⁷ ones take a while
    out["results"] = bench_weights(
        s.sizes,
        device=device,
        repeats=s.repeats,
        scipy_max_n=s.scipy_max_n,
        lp_max_n=s.lp_max_n,
        dual_max_n=s.dual_max_n,
        budget_s=s.budget,
        on_row=lambda r: print(format_row(r), flush=True),
    )


def _run_chi2_ball(s: argparse.Namespace, device: torch.device, out: dict) -> None:
    print(
        "\n## chi2-ball: the χ² ball's worst-case weights vs fast-dro's RobustLoss (CPU, float64, "
        f"{torch.get_num_threads()} torch threads; fast-dro's ball ½·mean((nq − 1)²) ≤ ρ is our radius 2ρ; "
        "fast-dro's bisection tolerance is the loosest whose value ⟨q, ℓ⟩ matches ours to 1e-9 relative)\n"
    )
    print(CHI2_BALL_HEAD, flush=True)
    out["chi2_ball"] = bench_chi2_ball(
        s.chi2_sizes,
        s.chi2_rhos,
        repeats=s.repeats,
        budget_s=s.budget,
        on_row=lambda r: print(format_chi2_ball(r), flush=True),
    )


def _run_hws_step(s: argparse.Namespace, device: torch.device, out: dict) -> None:
    print(
        f"\n## hws-step: training step, uniform vs hardness-weighted sampling (KL, β={s.hws_beta:g}, "
        f"SGD, median of {s.hws_steps} steps)\n",
        flush=True,
    )
    r = bench_hws_step(
        n=s.hws_n,
        batch_size=s.hws_batch,
        beta=s.hws_beta,
        steps=s.hws_steps,
        warmup=s.hws_warmup,
        model=s.hws_model,
        device=device,
        repeats=s.repeats,
        budget_s=s.budget,
    )
    print(section_table("hws-step", r), flush=True)
    if r["spread"] > 0.25:
        print(
            f"\nwarning: step times vary widely (interquartile range {100 * r['spread']:.0f} % of the median): "
            "the machine is busy with something else; trust the paired ratio more, or run again"
        )
    out["hws_step"] = r


def _run_hws_draw(s: argparse.Namespace, device: torch.device, out: dict) -> None:
    print(
        f"\n## hws-draw: one sampler step (draw b={s.hws_batch}, update; KL, β={s.hws_beta:g}) "
        "vs the official approach\n"
    )
    print(HWS_DRAW_HEAD, flush=True)
    out["hws_draw"] = bench_hws_draw(
        s.hws_sizes,
        batch_size=s.hws_batch,
        beta=s.hws_beta,
        device=device,
        repeats=s.repeats,
        budget_s=s.budget,
        baseline_max_s=s.baseline_max_s,
        on_row=lambda r: print(format_hws_draw(r), flush=True),
    )
    at_1e6 = [r for r in out["hws_draw"] if r["n"] == 1_000_000 and r["tree_speedup"]]
    if at_1e6:
        r = at_1e6[0]
        print(
            f"\nissue 9's target, draw='tree' ≥ 20× the official approach at n = 1e6: {r['tree_speedup']:.3g}× "
            f"({'met' if r['tree_speedup'] >= 20 else 'not met'}); the default draw='auto' (took "
            f"{r['auto_took']}): {r['auto_speedup']:.3g}×"
        )
    print(
        f"draw='auto' takes the tree from n = {AUTO_TREE_MIN_N:,} on (KL, CPU), multinomial below "
        "(dro_lab.samplers.hardness.AUTO_TREE_MIN_N)"
    )


def _run_pergrad(s: argparse.Namespace, device: torch.device, out: dict) -> None:
    print(
        "\n## pergrad: per-sample gradient norms vs a backward and a per-sample loop "
        "(paired ratios, methods alternating)\n"
    )
    print(PERGRAD_HEAD, flush=True)
    out["pergrad"] = bench_pergrad(
        s.pergrad_batches,
        models=s.pergrad_models,
        device=device,
        repeats=s.repeats,
        budget_s=s.budget,
        loop_max_b=s.loop_max_b,
        loop_max_s=s.loop_max_s,
        on_row=lambda r: print(format_pergrad(r), flush=True),
    )
    at128 = [r for r in out["pergrad"] if r["batch_size"] == 128]
    if at128:
        print(
            "\nissue 9's target, ghost ≤ 3× a backward at b = 128: "
            + "; ".join(
                f"{r['model']} {r['ghost_over_backward']:.2f}× ({'met' if r['target_ok'] else 'not met'})"
                for r in at128
            )
        )


def _run_is_run(s: argparse.Namespace, device: torch.device, out: dict) -> None:
    print(
        f"\n## is-run: one training run, importance sampling vs plain SGD and vs a uniform run that scores "
        f"(paper's Table 1: 2.0–2.4×; {s.is_n} synthetic images, SmallCNN, b=5, {s.is_steps} steps, SGD lr 0.01 "
        f"m 0.5, median of {s.is_runs} runs, strategies alternating, {torch.get_num_threads()} torch threads)\n",
        flush=True,
    )
    r = bench_is_run(n=s.is_n, steps=s.is_steps, runs=s.is_runs, device=device)
    print(section_table("is-run", r), flush=True)
    summary = is_run_summary(r)
    if summary:
        print(f"\n{summary}", flush=True)
    out["is_run"] = r


def _run_also_step(s: argparse.Namespace, device: torch.device, out: dict) -> None:
    print(
        f"\n## also-step: ALSO vs Adam, one training step ({HWS_MODELS[s.also_model]}, b={s.hws_batch}, "
        f"median of up to {s.also_steps} rounds, methods alternating)\n"
    )
    print(ALSO_HEAD, flush=True)
    out["also_step"] = bench_also_step(
        _sizes(s.also_groups),
        batch_size=s.hws_batch,
        model=s.also_model,
        steps=s.also_steps,
        device=device,
        budget_s=s.budget,
    )
    print("\n".join(format_also_step(r) for r in out["also_step"]), flush=True)


def _run_done_step(s: argparse.Namespace, device: torch.device, out: dict) -> None:
    print(
        f"\n## done-step: one adversarial-training iteration, DONE vs PGD-AT (DigitsCNN 1×8×8, b=64, "
        f"PGD-{s.done_steps}, median of up to {s.done_rounds} rounds, methods alternating)\n"
    )
    out["done_step"] = bench_done_step(steps=s.done_steps, rounds=s.done_rounds, device=device, budget_s=s.budget)
    print(section_table("done-step", out["done_step"]), flush=True)


def _run_gils(s: argparse.Namespace, device: torch.device, out: dict) -> None:
    print("\n## gils-T: GI-LS seconds per epoch against the ascent steps T (DigitsCNN, 208 images, b=32)\n")
    out["gils_T"] = bench_gils_epoch(_sizes(s.gils_T), epochs=s.gils_epochs, device=device)
    print(section_table("gils-T", out["gils_T"]), flush=True)


#: section name -> runner; a runner prints its section and fills its entry of the JSON document.
RUNNERS = {
    "weights": _run_weights,
    "chi2-ball": _run_chi2_ball,
    "hws-step": _run_hws_step,
    "hws-draw": _run_hws_draw,
    "pergrad": _run_pergrad,
    "is-run": _run_is_run,
    "also-step": _run_also_step,
    "done-step": _run_done_step,
    "gils-T": _run_gils,
}


# --------------------------------------------------------------------------- the document as Markdown


def section_table(name: str, value) -> str:
    """A section's Markdown table (head and rows) from its entry of the JSON document."""
    _, head, rows = SECTIONS[name]
    return "\n".join([head, *(line for row in rows(value) for line in row.splitlines())])


def markdown(document: dict, *, level: int = 2) -> str:
    """A ``dro-lab bench --json`` document as Markdown: the machine it ran on, then each section's table.

    A section without rows, or with rows of an earlier ``dro-lab bench`` that its table cannot show, says so.

    Args:
        document: what ``dro-lab bench --json`` writes (its ``json.load``).
        level: the level of the sections' headings (``level=2``: ``## `weights` (12 s)``).
    """
    info, seconds = document.get("machine", {}), document.get("seconds", {})
    where = info.get("gpu") or info.get("cpu_model") or info.get("cpu", "?")
    device, threads, version, python = (info.get(k, "?") for k in ("device", "threads", "torch", "python"))
    lines = [f"Measured on {device} ({where}), {threads} torch threads, torch {version}, Python {python}.", ""]
    for name in (n for n in document.get("sections", []) if n in SECTIONS):
        took = f" ({seconds[name]:.0f} s)" if isinstance(seconds.get(name), (int, float)) else ""
        value = document.get(SECTIONS[name][0])
        try:
            table = section_table(name, value) if value else "*No rows recorded.*"
        except (KeyError, TypeError):  # a document from an earlier dro-lab bench, whose rows had other fields
            table = (
                "*Recorded by an earlier `dro-lab bench`, in a form today's table cannot show: run "
                f"`dro-lab bench --only {name}` again to refresh it.*"
            )
        lines += [f"{'#' * level} `{name}`{took}", "", table, ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- the dispatcher


def _document(info: dict, selected: list[str]) -> dict:
    """The JSON document before any section has run: every section's entry empty, whether it runs or not."""
    return {
        "machine": info,
        "sections": selected,
        "results": [],
        "chi2_ball": [],
        "hws_step": None,
        "hws_draw": [],
        "pergrad": [],
        "is_run": None,
        "also_step": [],
        "done_step": None,
        "gils_T": None,
        "seconds": {},
    }


def main(argv=None) -> int:
    """Run ``dro-lab bench`` with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    ap = build_parser()
    args = ap.parse_args(argv)
    selected = _selected(ap, args)
    _check(ap, args)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    try:
        device = resolve_device(args.device)
    except (TypeError, ValueError) as exc:  # an accelerator that is not here: a usage error, not a traceback
        ap.exit(2, f"{ap.prog}: error: --device: {exc}\n")
    s = _settings(args)
    info = machine_info(device)
    print(
        f"dro-lab bench on {info['device']} ({info.get('gpu', info['cpu_model'] or info['cpu'])}, "
        f"{info['threads']} threads, torch {info['torch']})"
    )
    out = _document(info, selected)
    t_all = time.perf_counter()
    for name in selected:
        t0 = time.perf_counter()
        RUNNERS[name](s, device, out)
        out["seconds"][name] = time.perf_counter() - t0
    out["seconds"]["total"] = time.perf_counter() - t_all
    print(f"\n{out['seconds']['total']:.0f} s in all")
    if args.json:
        try:
            atomic_write_text(args.json, json.dumps(out, indent=2))
        except OSError as exc:  # the folder went away or is read-only: the measurements above are still printed
            print(f"dro-lab bench: error: cannot write {args.json}: {exc.strerror}", file=sys.stderr)
            return 2
        print(f"wrote {args.json}")
    return 0
