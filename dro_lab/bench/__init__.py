"""``dro-lab bench``: speed measurements behind the course's claims, runnable on any machine.

Each benchmark times dro_lab and a baseline side by side in one run and reports the ratio; the
command prints a Markdown table per section and, with ``--json``, writes every number. One module
per claim, plus the shared timing helpers and the command line:

=================  ======================================================================================
``timing``         ``machine_info``, medians after a warm-up (``time_call``), round-robin paired timings
                   (``paired_times``, ``paired_ratio``), quartiles, the table cells' formatting
``weights``        ``weights``: :func:`dro_lab.worst_case_weights` against scipy (SLSQP / HiGHS and a 1-D
                   dual solver, this benchmark's own baselines ``scipy_worst_case``, ``scipy_dual_worst_case``)
``hws``            ``hws-step`` and ``hws-draw``: the training-step and sampler cost of hardness-weighted
                   sampling against uniform batches and against the authors' approach (``official_*``)
``pergrad``        ``pergrad``: per-sample gradient norms (ghost, vmap) against a backward and a per-sample
                   loop (``loop_grad_norms``)
``importance``     ``is-run``: one importance-sampled training run against uniform (the paper's Table 1)
``also``           ``also-step``: ALSO's step against Adam's for c groups, and its parts
``done``           ``done-step``: one DONE iteration against PGD-AT
``gils``           ``gils-T``: GI-LS seconds per epoch against its ascent steps T
``cli``            the options, one runner per section, ``main``; a document's tables as Markdown (``markdown``)
=================  ======================================================================================

Times are medians over repeats after a warm-up (CUDA synchronised). Methods compared in a section run
alternately, so that a shared machine's load hits all alike; paired ratios are medians of per-round ratios.
A new benchmark is a module here with ``bench_<name>``, its table head and row formatter, a runner in
``cli.RUNNERS``, its name in ``BENCHMARKS`` and its table in ``SECTIONS``.
"""

from __future__ import annotations

from .also import ALSO_CONFIGS, ALSO_HEAD, bench_also_step, format_also_step
from .cli import BENCHMARKS, SECTIONS, build_parser, main, markdown
from .done import DONE_CONFIGS, DONE_HEAD, bench_done_step, format_done_step
from .gils import GILS_HEAD, bench_gils_epoch, format_gils_epoch
from .hws import (
    HWS_DRAW_HEAD,
    HWS_MODELS,
    HWS_STEP_HEAD,
    bench_hws_draw,
    bench_hws_step,
    format_hws_draw,
    format_hws_step,
    official_draw,
    official_probabilities,
    official_update,
)
from .importance import IS_RUN_CONFIGS, IS_RUN_HEAD, bench_is_run, format_is_run
from .pergrad import PERGRAD_HEAD, PERGRAD_MODELS, bench_pergrad, format_pergrad, loop_grad_norms
from .timing import machine_info
from .weights import CASES, TABLE_HEAD, bench_weights, format_row, format_table, scipy_dual_worst_case, scipy_worst_case

__all__ = [
    "main",
    "build_parser",
    "BENCHMARKS",
    "SECTIONS",
    "markdown",
    "machine_info",
    "bench_weights",
    "scipy_worst_case",
    "scipy_dual_worst_case",
    "CASES",
    "TABLE_HEAD",
    "format_row",
    "format_table",
    "bench_hws_step",
    "bench_hws_draw",
    "official_probabilities",
    "official_draw",
    "official_update",
    "HWS_MODELS",
    "HWS_STEP_HEAD",
    "format_hws_step",
    "HWS_DRAW_HEAD",
    "format_hws_draw",
    "bench_pergrad",
    "loop_grad_norms",
    "PERGRAD_MODELS",
    "PERGRAD_HEAD",
    "format_pergrad",
    "bench_is_run",
    "IS_RUN_CONFIGS",
    "IS_RUN_HEAD",
    "format_is_run",
    "bench_also_step",
    "ALSO_CONFIGS",
    "ALSO_HEAD",
    "format_also_step",
    "bench_done_step",
    "DONE_CONFIGS",
    "DONE_HEAD",
    "format_done_step",
    "bench_gils_epoch",
    "GILS_HEAD",
    "format_gils_epoch",
]
