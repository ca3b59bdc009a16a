"""``python -m quest demo``, ``python -m quest reproduce [--scaling]`` and the README's reproduction table."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
import torch
from icml25_shared.cli import RunContext, progress
from icml25_shared.random import child_seeds
from icml25_shared.stats import t_interval

from quest.api import convert_, quantize_
from quest.grids import gaussian_mse, grid_spec
from quest.hadamard import block_hadamard
from quest.layers import QuestConfig
from quest.lm import TinyLlama, TinyLlamaConfig, seeded_init, stdlib_corpus
from quest.quantizers import TrustQuantizer, grid_quantize
from quest.scaling import PAPER_EFFECTIVE_PARAMS, PAPER_PARAMS_PER_MEMORY, run_scaling
from quest.train import TrainConfig, make_splits, train_lm

log = logging.getLogger(__name__)

DEMO_BITS = (1, "ternary", 2, 3, 4, 8)

# C4 validation loss of the 30M-parameter runs at 100 tokens/parameter (IST-DASLab/QuEST,
# for_plots/runs_for_scaling.json, see the reference notes): full precision and the gaps to it.
PAPER_30M = {"bf16": 3.207, "quest_w4a4": 3.272, "trust_w4a4_no_hadamard": 3.304, "quest_w3a3": 3.372,
             "quest_w2a2": 3.574, "hadamard_clip_w1a1": 3.945}


def _llm_like_activations(rows: int, cols: int, seed: int) -> torch.Tensor:
    """Gaussian tokens with a few outlier channels (x20), the shape of LLM hidden states."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=g)
    x[:, torch.randperm(cols, generator=g)[: max(cols // 64, 1)]] *= 20.0
    return x


def _absmax_quantize(x: torch.Tensor, bits: int | str) -> torch.Tensor:
    """Per-row absmax scaling on the same uniform grid (the common PTQ/QAT default, e.g. BitNet-style)."""
    spec = grid_spec(bits)
    step = x.abs().amax(-1) * spec.step_in_sigma / spec.alpha + 1e-12
    return grid_quantize(x, step, spec)


def _rel_mse(xq: torch.Tensor, x: torch.Tensor) -> float:
    return float((xq - x).pow(2).mean() / x.pow(2).mean())


def demo(ctx: RunContext) -> None:
    """Quantization error vs bits, the trust mask at work, and a quantize_ -> convert_ round trip.

    Error vs bits compares absmax with the QuEST grid, with and without Hadamard; the round trip runs on a
    small Llama.

    Parameters
    ----------
    ctx : RunContext
        Output folder, seed and ``--quick``.
    """
    torch.set_num_threads(1)
    rows = 256 if ctx.quick else 2048
    outlier_seed, gauss_seed = child_seeds(ctx.seed, 2)  # independent streams for the two inputs
    x = _llm_like_activations(rows, 512, outlier_seed)
    gauss = torch.randn(rows, 512, generator=torch.Generator().manual_seed(gauss_seed))
    rot = block_hadamard(x, 128)
    mse_rows: list[str] = []
    curves: dict[str, list[float]] = {"absmax": [], "QuEST grid": [], "QuEST grid + Hadamard": [],
                                      "Gaussian optimum": []}
    for bits in DEMO_BITS:
        q = TrustQuantizer(bits)
        spec = grid_spec(bits)
        values = {
            "absmax": _rel_mse(_absmax_quantize(x, bits), x),
            "QuEST grid": _rel_mse(q(x), x),
            "QuEST grid + Hadamard": _rel_mse(block_hadamard(q(rot), 128), x),
            "Gaussian optimum": gaussian_mse(spec.alpha, spec.levels),
        }
        for key, value in values.items():
            curves[key].append(value)
        mse_rows.append(f"| {spec.name} | {values['absmax']:.4f} | {values['QuEST grid']:.4f} | "
                        f"{values['QuEST grid + Hadamard']:.4f} | {values['Gaussian optimum']:.4f} |")

    trusts = [0.05, 0.1, grid_spec(4).default_trust, 0.3, 1.0, math.inf]
    trust_rows = []
    for trust in trusts:
        q = TrustQuantizer(4, trust=trust)
        q(gauss)
        on_gauss = float(q.masked_fraction_)
        q(rot)
        trust_rows.append(f"| {trust:.4g}{' (default)' if trust == grid_spec(4).default_trust else ''} | "
                          f"{100 * on_gauss:.3f}% | {100 * float(q.masked_fraction_):.3f}% |")

    with seeded_init(ctx.seed):
        model = TinyLlama(TinyLlamaConfig(d_model=128, n_layers=1 if ctx.quick else 2, n_heads=2))
        idx = torch.randint(0, 256, (2, 64))
    quantize_(model, QuestConfig())
    model.eval()
    with torch.no_grad():
        fake = model(idx)
        report = convert_(model)
        real = model(idx)
    max_diff = float((real - fake).abs().max())

    table = "\n".join([
        "| grid | absmax rel. MSE | QuEST grid rel. MSE | QuEST + Hadamard rel. MSE | N(0,1) optimum |",
        "|---|---|---|---|---|",
        *mse_rows,
        "",
        f"Relative quantization MSE of {rows}x512 activations with outlier channels (x20 on 1/64 of them); "
        "rows = tokens, one scale per row.",
        "",
        "| trust radius (sigma units), 4 bits | gradient masked, N(0,1) | masked, rotated outlier data |",
        "|---|---|---|",
        *trust_rows,
        "",
        "| quantize_ -> convert_ (TinyLlama) | value |",
        "|---|---|",
        f"| converted layers | {len(report.layers)} |",
        f"| weight bytes / float32 | {report.compression:.4f} |",
        f"| max abs diff, INT4 vs fake-quant logits | {max_diff:.2e} (logit scale {float(fake.abs().max()):.2f}) |",
    ])
    ctx.write_table(table)

    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    labels = [grid_spec(b).name for b in DEMO_BITS]
    for key, curve in curves.items():
        ax1.plot(labels, curve, marker="o", label=key, linestyle="--" if key == "Gaussian optimum" else "-")
    ax1.set_yscale("log")
    ax1.set_xlabel("grid")
    ax1.set_ylabel("relative MSE")
    ax1.set_title("activations with outlier channels")
    ax1.legend(fontsize=8)
    tokens = rot[:64] / rot[:64].pow(2).mean(-1, keepdim=True).sqrt()
    spec = grid_spec(4)
    ax2.hist(tokens.flatten().numpy(), bins=80, color="0.6")
    ax2.set_yscale("log")
    for sign in (-1, 1):
        ax2.axvline(sign * spec.alpha, color="C0", label="clip s" if sign > 0 else None)
        ax2.axvline(sign * (spec.alpha + spec.default_trust), color="C3", linestyle="--",
                    label="trust bound s + step/2" if sign > 0 else None)
    ax2.set_xlabel("rotated activation / row RMS (64 tokens)")
    ax2.set_ylabel("values per bin")
    ax2.set_title("4-bit grid: gradients beyond the red lines are masked")
    ax2.legend(fontsize=8)
    ctx.save_figure(fig)


def _runs(quick: bool) -> dict[str, QuestConfig | None]:
    runs: dict[str, QuestConfig | None] = {
        "full precision": None,
        "QuEST W4A4": QuestConfig(weight_bits=4, act_bits=4, hadamard="half", method="quest"),
        "STE W4A4 (no Hadamard)": QuestConfig(weight_bits=4, act_bits=4, hadamard=None, method="ste"),
        "trust W4A4 (no Hadamard)": QuestConfig(weight_bits=4, act_bits=4, hadamard=None, method="quest"),
        "LSQ W4A4": QuestConfig(weight_bits=4, act_bits=4, hadamard=None, method="lsq"),
        "QuEST W1A1": QuestConfig(weight_bits=1, act_bits=1, hadamard="half", method="quest"),
    }
    return runs


def reproduce(ctx: RunContext) -> None:
    """Tiny-LM QAT on the Python stdlib (bytes); validation-loss table and curves.

    Full precision vs QuEST W4A4, STE and trust W4A4 without Hadamard (the paper's ablation is the
    latter), LSQ W4A4 and QuEST W1A1, from the same init and batches. With ``--scaling``: the scaling run
    of :func:`quest.scaling.run_scaling` instead.

    Parameters
    ----------
    ctx : RunContext
        Output folder, seed, ``--quick`` and ``--scaling``.
    """
    torch.set_num_threads(1)
    if ctx.options.get("gap"):
        _reproduce_gap(ctx, ctx.options["gap"])
        return
    if ctx.options.get("scaling"):
        _reproduce_scaling(ctx)
        return
    if ctx.quick:
        model_cfg = TinyLlamaConfig(d_model=128, n_layers=1, n_heads=2)
        train_cfg = TrainConfig(steps=6, batch_size=4, seq_len=32, lr=3e-3, eval_every=3, eval_batches=1,
                                random_state=ctx.seed)
        corpus_bytes = 100_000
    else:
        model_cfg = TinyLlamaConfig(d_model=128, n_layers=2, n_heads=2)
        train_cfg = TrainConfig(steps=400, batch_size=16, seq_len=64, lr=3e-3, eval_every=25, eval_batches=8,
                                random_state=ctx.seed, progress=True)
        corpus_bytes = 2_000_000
    train, val = make_splits(stdlib_corpus(corpus_bytes))
    results, timings = {}, {}
    runs = _runs(ctx.quick)
    for name, cfg in progress(runs.items(), desc="run", total=len(runs), enabled=not ctx.quick):
        with seeded_init(ctx.seed):
            model = TinyLlama(model_cfg)
        if cfg is not None:
            quantize_(model, cfg)
        start = time.perf_counter()
        results[name] = train_lm(model, train, val, train_cfg)
        timings[name] = time.perf_counter() - start
        log.info("%s: final val loss %.4f", name, results[name].final_val_loss)

    fp = results["full precision"].final_val_loss
    paper_gap = {"QuEST W4A4": PAPER_30M["quest_w4a4"] - PAPER_30M["bf16"],
                 "trust W4A4 (no Hadamard)": PAPER_30M["trust_w4a4_no_hadamard"] - PAPER_30M["bf16"],
                 "QuEST W1A1": PAPER_30M["hadamard_clip_w1a1"] - PAPER_30M["bf16"]}
    lines = ["| run | final val loss (nats/byte) | gap to full precision | paper gap, 30M Llama on C4 | "
             "first -> last train loss | finite | seconds |", "|---|---|---|---|---|---|---|"]
    for name, res in results.items():
        gap = res.final_val_loss - fp
        paper = paper_gap.get(name)
        lines.append(f"| {name} | {res.final_val_loss:.4f} | {gap:+.4f} | "
                     f"{'' if paper is None else f'{paper:+.3f}'} | {res.train_loss[0]:.3f} -> "
                     f"{res.train_loss[-1]:.3f} | {not res.diverged} | {timings[name]:.0f} |")
    q4 = results["QuEST W4A4"].final_val_loss
    ste = results["STE W4A4 (no Hadamard)"].final_val_loss
    w1 = results["QuEST W1A1"]
    summary = {
        "ordering_fp_lt_quest_lt_ste": bool(fp < q4 < ste),
        "quest_lt_trust_without_hadamard": bool(q4 < results["trust W4A4 (no Hadamard)"].final_val_loss),
        "w1a1_finite_and_falling": bool(not w1.diverged and np.isfinite(w1.train_loss).all()
                                        and w1.val_loss[-1] < w1.val_loss[0]),
        "quest_w4a4_gap": q4 - fp,
        "paper_30m_quest_w4a4_gap": paper_gap["QuEST W4A4"],
    }
    ctx.write_table("\n".join(lines + ["", f"ordering full precision < QuEST W4A4 < STE W4A4 (no Hadamard): "
                                            f"{summary['ordering_fp_lt_quest_lt_ste']}; QuEST W1A1 finite and "
                                            f"falling: {summary['w1a1_finite_and_falling']}"]))
    ctx.write_json({
        "model": asdict(model_cfg), "train": asdict(train_cfg), "corpus_bytes": corpus_bytes,
        "quick": ctx.quick, "summary": summary, "paper_30m_c4_loss": PAPER_30M,
        "runs": {name: {**asdict(res), "seconds": timings[name]} for name, res in results.items()},
    })

    ctx.save_figure(training_figure(results))


def training_figure(results: Mapping[str, Any]) -> Any:
    """The ``reproduce`` figure: validation loss at each evaluation and the smoothed training loss, per run.

    Parameters
    ----------
    results : mapping
        Run name to a :class:`quest.train.TrainResult` (anything with ``eval_steps``, ``val_loss`` and
        ``train_loss``).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    for name, res in results.items():
        ax1.plot(res.eval_steps, res.val_loss, marker=".", label=name)
        smooth = np.convolve(res.train_loss, np.ones(5) / 5, mode="valid") if len(res.train_loss) >= 5 \
            else res.train_loss
        ax2.plot(smooth, label=name)
    ax1.set_xlabel("step")
    ax1.set_ylabel("validation loss (nats/byte)")
    ax1.legend(fontsize=8)
    ax2.set_xlabel("step")
    ax2.set_ylabel("train loss, 5-step mean")
    ax2.set_yscale("log")
    return fig


def scaling_figure(result: Mapping[str, Any]) -> Any:
    """The scaling figure: final loss against quantized parameters and against memory, with the fitted lines.

    Parameters
    ----------
    result : mapping
        A :func:`quest.scaling.run_scaling` result (the stored ``scaling.json``).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    params = np.asarray(result["params"], dtype=float)
    for k, (precision, bits) in enumerate(result["bits"].items()):
        per_width = result["runs"][precision]
        mean = [float(np.mean(per_width[str(w)]["final_val_loss"])) for w in result["widths"]]
        spread = [float(np.std(per_width[str(w)]["final_val_loss"], ddof=1)) for w in result["widths"]]
        fit = result["analysis"]["mean"]["precisions"][precision]
        for ax, x in ((ax1, params), (ax2, bits * params)):
            ax.errorbar(x, mean, yerr=spread, marker="o", linestyle="none", color=f"C{k}", label=precision)
            grid = np.geomspace(x.min(), x.max(), 20)
            ax.plot(grid, fit["intercept"] + fit["slope"] * np.log(grid / (1 if ax is ax1 else bits)),
                    color=f"C{k}", linewidth=0.8)
    target = result["analysis"]["mean"]["target_loss"]
    for ax, label in ((ax1, "quantized parameters N"), (ax2, "memory, bits x N")):
        ax.axhline(target, color="0.5", linestyle=":", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_xlabel(label)
    ax1.set_ylabel("final validation loss (nats/byte)")
    ax2.set_ylabel("final validation loss (nats/byte)")
    ax1.legend(fontsize=8)
    ax2.set_title("equal loss (dotted): less memory is better", fontsize=9)
    return fig


def _reproduce_scaling(ctx: RunContext) -> None:
    if ctx.quick:
        result = run_scaling(steps=3, batch_size=4, seq_len=32, n_seeds=2, corpus_bytes=100_000, eval_batches=1,
                             random_state=ctx.seed)
    else:
        result = run_scaling(random_state=ctx.seed, progress=True)
    result["quick"] = ctx.quick
    ctx.write_json(result, name="scaling")
    ctx.write_table(scaling_table(result), name="scaling")

    ctx.save_figure(scaling_figure(result), name="scaling")


def _ci(values: Sequence[float], signed: bool = False, digits: int = 3) -> str:
    est, low, high = values
    fmt = f"{{:+.{digits}f}}" if signed else f"{{:.{digits}f}}"
    return f"{fmt.format(est)} [{fmt.format(low)}, {fmt.format(high)}]"


def _sign_verdict(diffs: Sequence[float], expected: int) -> str:
    """One-line verdict: whether paired differences have the paper's sign (``expected`` = +1 or -1)."""
    iv = t_interval(diffs)
    agree = sum(expected * d > 0 for d in diffs)
    counted = f"paper's sign on {agree} of {len(diffs)} seeds"
    if expected * iv.low > 0:
        return f"holds: {counted}, 95% interval excludes 0"
    if expected * iv.high < 0:
        return f"does not hold: {counted}, 95% interval excludes 0 on the other side"
    return f"not resolved: {counted}, 95% interval includes 0"


def scaling_table(result: Mapping[str, Any]) -> str:
    """Markdown table of a scaling run (:func:`quest.scaling.run_scaling` output).

    Parameters
    ----------
    result : mapping
        The stored ``scaling.json`` content.

    Returns
    -------
    str
        Loss per precision and width (3-seed mean and 95% t interval), the fitted slope, the parameters
        needed for the target loss and parameters per unit of memory next to the paper's.
    """
    analysis = result["analysis"]
    mean_fit = analysis["mean"]
    widths, params = result["widths"], result["params"]
    head = " | ".join(f"d={w} (N={n:,})" for w, n in zip(widths, params, strict=True))
    lines = [f"| precision | bits | {head} | slope per ln N | N for L* | N_BF16 / N (paper) | params per "
             "memory vs BF16 [per seed] | paper |", "|---|---|" + "---|" * len(widths) + "---|---|---|---|---|"]
    ref_needed = mean_fit["precisions"][analysis["reference"]]["params_needed"]
    for precision, bits in result["bits"].items():
        cells = []
        for row in result["gaps"][precision]:
            cells.append(_ci([row["mean"], *row["ci95"]]))
        fit = mean_fit["precisions"][precision]
        seeds = ", ".join(f"{s['precisions'][precision]['params_per_memory']:.2f}" for s in analysis["per_seed"])
        needed = fit["params_needed"]
        needed_text = "never" if not math.isfinite(needed) else f"{needed:.3g}"
        if fit["extrapolated"] and math.isfinite(needed):
            needed_text += " (extrapolated)"
        eff = ref_needed / needed if math.isfinite(needed) and math.isfinite(ref_needed) else 0.0
        lines.append(f"| {precision} | {bits} | {' | '.join(cells)} | {fit['slope']:+.3f} | {needed_text} | "
                     f"{eff:.2f} ({PAPER_EFFECTIVE_PARAMS[precision]:g}) | **{fit['params_per_memory']:.2f}** "
                     f"[{seeds}] | {PAPER_PARAMS_PER_MEMORY[precision]:g} |")
    best = ", ".join(analysis["per_seed_best"])
    lines += ["", f"Target loss L* = {mean_fit['target_loss']:.3f} (the BF16 fit at N = "
                  f"{analysis['target_params']:,.0f}); highest parameters per memory: {mean_fit['best']} "
                  f"(seed means), per seed {best}: {analysis['claimed']} optimal **{analysis['verdict']}**."]
    return "\n".join(lines)


def reproduction_table(reproduce: Mapping[str, Any], scaling: Mapping[str, Any],
                       rerun: Mapping[str, Any] | None = None) -> str:
    """The README's reproduction section body, rendered from the stored results.

    Parameters
    ----------
    reproduce : mapping
        ``results/reproduce.json``: the 3-seed tiny-LM ablation (full precision, QuEST W4A4, trust and STE
        W4A4 without Hadamard).
    scaling : mapping
        ``results/scaling.json``: :func:`quest.scaling.run_scaling` output.
    rerun : mapping, optional
        The same scaling run on fresh seeds (another ``random_state``); its verdict joins the 4-bit row.

    Returns
    -------
    str
        Markdown: the ablation table, the scaling table and the paper-claim table with one verdict each.
    """
    runs = reproduce["runs"]
    paper_gap = {name: PAPER_30M[key] - PAPER_30M["bf16"] for name, key in
                 (("QuEST W4A4", "quest_w4a4"), ("trust W4A4 (no Hadamard)", "trust_w4a4_no_hadamard"))}
    n_seeds = len(reproduce["seeds"])
    lines = [f"**Ablation, {n_seeds} seeds x {reproduce['steps']} steps** (`results/reproduce.json`): final "
             "validation loss in nats/byte, mean [95% t interval]; gaps paired by seed.", "",
             "| run | per seed | mean [95% CI] | gap to full precision [95% CI] | paper gap, 30M Llama on C4 |",
             "|---|---|---|---|---|"]
    for name, row in runs.items():
        per_seed = ", ".join(f"{v:.3f}" for v in row["final_val_loss"])
        gap = "" if row["gap_ci95"] is None else _ci(row["gap_ci95"], signed=True)
        paper = f"{paper_gap[name]:+.3f}" if name in paper_gap else ""
        lines.append(f"| {name} | {per_seed} | {_ci([row['mean'], *row['ci95']])} | {gap} | {paper} |")
    hadamard = [t - q for t, q in zip(runs["trust W4A4 (no Hadamard)"]["final_val_loss"],
                                      runs["QuEST W4A4"]["final_val_loss"], strict=True)]
    had = t_interval(hadamard)
    had_text = _ci([had.estimate, had.low, had.high], signed=True)

    widths, gaps = scaling["widths"], scaling["gaps"]
    n_scaling = len(scaling["init_seeds"])
    lines += ["", f"**Scaling run, {len(widths)} widths x {len(scaling['bits'])} precisions x {n_scaling} seeds**"
              f" (`results/scaling.json`): {scaling['steps']} steps of {scaling['batch_size']} x "
              f"{scaling['seq_len']} bytes, the same batches for every run ({scaling['tokens_per_run']:,} "
              f"training bytes), QuEST trust + half Hadamard (block {scaling['hadamard_block']}); BF16 = "
              "bfloat16 autocast forward. Loss: mean [95% t interval]; `L = a + c ln N` fitted per "
              "precision; parameters per memory = 16 N_BF16 / (bits N_p) at the BF16 loss of the middle width.",
              "", scaling_table(scaling)]

    largest = str(widths[-1])
    w4 = {row["width"]: row["gap_to_reference"] for row in gaps["W4A4"]}
    w4_largest = [q - b for q, b in zip(scaling["runs"]["W4A4"][largest]["final_val_loss"],
                                        scaling["runs"]["BF16"][largest]["final_val_loss"], strict=True)]
    w4_text = "; ".join(f"d={w}: {_ci(w4[w], signed=True)}" for w in widths)
    w1 = scaling["runs"]["W1A1"]
    w1_runs = [(f, last, d) for w in widths for f, last, d in zip(w1[str(w)]["first_train_loss"],
                                                                   w1[str(w)]["last_train_loss"],
                                                                   w1[str(w)]["diverged"], strict=True)]
    w1_ok = all(not d and math.isfinite(last) and last < f for f, last, d in w1_runs)
    w1_text = (f"{len(w1_runs)} runs, none diverged; train loss {min(f for f, _, _ in w1_runs):.2f}-"
               f"{max(f for f, _, _ in w1_runs):.2f} -> {min(x for _, x, _ in w1_runs):.2f}-"
               f"{max(x for _, x, _ in w1_runs):.2f}")
    analysis = scaling["analysis"]
    e = {p: analysis["mean"]["precisions"][p]["params_per_memory"] for p in scaling["bits"]}
    e_text = ", ".join(f"{p} {v:.2f}" for p, v in sorted(e.items(), key=lambda kv: -kv[1]))
    paper_e = ", ".join(f"{p} {v:g}" for p, v in sorted(PAPER_PARAMS_PER_MEMORY.items(),
                                                         key=lambda kv: -kv[1]))
    extrapolated = [p for p, r in analysis["mean"]["precisions"].items() if r["extrapolated"]]
    gap_fp_w4 = runs["QuEST W4A4"]["gap_ci95"]
    lines += ["", "| paper claim | ours | verdict |", "|---|---|---|",
              f"| Hadamard helps W4A4 at a fixed (trust) estimator: 30M gap {paper_gap['trust W4A4 (no Hadamard)']:+.3f}"
              f" without vs {paper_gap['QuEST W4A4']:+.3f} with | without minus with, paired: {had_text} "
              f"({reproduce['steps']} steps) | {_sign_verdict(hadamard, +1)} |",
              f"| QuEST W4A4 is a little worse than BF16 (30M: {paper_gap['QuEST W4A4']:+.3f}, shrinking with size) | "
              f"W4A4 minus BF16, scaling run: {w4_text}; {reproduce['steps']}-step ablation: "
              f"{_ci(gap_fp_w4, signed=True)} | d={largest}: {_sign_verdict(w4_largest, +1)} |",
              f"| W1A1 trains stably | {w1_text} | {'holds' if w1_ok else 'does not hold'} |",
              f"| 4-bit is Pareto-optimal: most parameters per unit of memory at equal loss ({paper_e}) | "
              f"{e_text}" + (f" ({', '.join(extrapolated)} extrapolated)" if extrapolated else "") +
              f"; best per seed: {', '.join(analysis['per_seed_best'])}" + _rerun_text(rerun) +
              f" | {analysis['verdict']}" + _unresolved_gaps(gaps, analysis) +
              ("" if rerun is None else f"; fresh seeds: {rerun['analysis']['verdict']}") + " |"]
    return "\n".join(lines)


def _unresolved_gaps(gaps: Mapping[str, Any], analysis: Mapping[str, Any]) -> str:
    """When no quantized precision is resolved from BF16 at any width, memory is decided by bits alone."""
    rows = [row["gap_to_reference"] for p, per_width in gaps.items() if p != analysis["reference"]
            for row in per_width]
    if analysis["verdict"] == "holds" or any(low > 0 or high < 0 for _, low, high in rows):
        return ""
    largest = max(abs(est) for est, _, _ in rows)
    return (f": no quantized loss differs from BF16 at any width (every 95% interval includes 0, mean gaps "
            f"at most {largest:.3f}), so the fewest bits win")


def _rerun_text(rerun: Mapping[str, Any] | None) -> str:
    if rerun is None:
        return ""
    analysis = rerun["analysis"]
    e = {p: r["params_per_memory"] for p, r in analysis["mean"]["precisions"].items()}
    e_text = ", ".join(f"{p} {v:.2f}" for p, v in sorted(e.items(), key=lambda kv: -kv[1]))
    return (f". Fresh seeds (`random_state={rerun['random_state']}`, new batches and inits): {e_text}; best per "
            f"seed: {', '.join(analysis['per_seed_best'])}")


def gap_table(*reports: Mapping[str, Any]) -> str:
    """Markdown tables of :func:`quest.scaling.gap_verdicts` reports: n-gram baselines and runs, then the rules.

    Several reports (e.g. one per width, on the same corpus split) share one pair of tables: the n-gram rows
    once, the runs of every report, and each report's rules, a rule without ``d=`` in its name suffixed with
    the report's widths. A row equal to one already listed (a stored run a later report pairs with, its
    gate) is listed once.

    Parameters
    ----------
    *reports : mapping
        What ``gap_verdicts`` returns (or the ``gap-*.json`` a reproduce run stores), at least one; every
        report's n-gram baselines must equal the first's.

    Returns
    -------
    str
        Two markdown tables.
    """
    if not reports:
        raise TypeError("gap_table needs at least one report")
    if any(report["ngram"] != reports[0]["ngram"] for report in reports[1:]):
        raise ValueError("gap_table: the reports' n-gram baselines differ (different corpus splits)")
    lines = ["| run | seeds | val loss, nats/byte: mean [95% CI] | per seed | gap to FP32 [paired 95% CI] |",
             "|---|---|---|---|---|"]
    for table, row in reports[0]["ngram"].items():
        lines.append(f"| {table} table (baseline, alpha {row['alpha']}) | | {row['loss']:.3f} | | |")
    for report in reports:
        for label, row in report["runs"].items():
            ci = row["ci95"]
            mean = f"{row['mean']:.3f}" + ("" if ci is None else f" [{ci[0]:.3f}, {ci[1]:.3f}]")
            gap = row.get("gap_to_fp32")
            gap_text = "" if gap is None else f"{gap['mean']:+.3f}" + (
                "" if gap["ci95"] is None else f" [{gap['ci95'][0]:+.3f}, {gap['ci95'][1]:+.3f}]")
            lines.append(f"| {label} | {len(row['seeds'])} | {mean} | "
                         f"{', '.join(f'{v:.3f}' for v in row['losses'])} | {gap_text} |")
    lines += ["", "| rule | verdict | numbers |", "|---|---|---|"]
    for report in reports:
        widths = ", ".join(f"d={w}" for w in sorted({row["width"] for row in report["runs"].values()}))
        for name, rule in report["rules"].items():
            label = name if len(reports) == 1 or "d=" in name else f"{name} ({widths})"
            numbers = "; ".join(f"{k}: {_fmt(v)}" for k, v in rule.items() if k != "verdict")
            lines.append(f"| {label} | {rule['verdict']} | {numbers} |")
    return "\n".join(line for i, line in enumerate(lines) if not line or line not in lines[:i]) + "\n"


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_fmt(v)}" for k, v in value.items()) + "}"
    return str(value)


def gap_figure(report: Mapping[str, Any], *, n_seeds: int) -> Any:
    """The gap protocol's figure: final loss per seed and mean for each run, with the n-gram tables.

    Parameters
    ----------
    report : mapping
        A :func:`quest.scaling.gap_verdicts` report (or the stored ``gap-*.json``).
    n_seeds : int
        Seeds of the protocol (for the title).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.8), layout="constrained")
    labels = list(report["runs"])
    for x, label in enumerate(labels):
        losses = report["runs"][label]["losses"]
        ax.plot([x] * len(losses), losses, "o", color="C0", alpha=0.6)
        ax.plot([x - 0.25, x + 0.25], [np.mean(losses)] * 2, color="C1")
    for table, style in (("bigram", ":"), ("order-2 Markov", "--")):
        if table in report["ngram"]:
            ax.axhline(report["ngram"][table]["loss"], color="grey", ls=style, label=f"{table} table")
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
    ax.set_xlabel("precision and width")
    ax.set_ylabel("validation loss (nats/byte)")
    ax.set_title(f"final loss per seed (dots) and mean (bar), {n_seeds} seeds", fontsize=9)
    ax.legend(fontsize=8)
    return fig


def _reproduce_gap(ctx: RunContext, name: str) -> None:
    import json

    from quest.scaling import GAP_PROTOCOLS, gap_verdicts, gap_width_trend, run_gap_cells

    protocol = dict(GAP_PROTOCOLS[name])
    if ctx.quick:  # a smoke-test size of the same protocol
        protocol.update(widths=[16], steps=2, n_seeds=2, eval_every=2, eval_batches=1, corpus_bytes=30_000,
                        budget_minutes=None, core=3,
                        precisions={k: protocol["precisions"][k] for k in ("FP32", "W4A4", "W1A1")})
    stem = f"gap-{name}"
    folder = ctx.path(stem)
    skipped = run_gap_cells(protocol, folder, random_state=ctx.seed)
    report = gap_verdicts(folder, n_seeds=protocol["n_seeds"])
    if protocol.get("compare_to"):  # the gap against width, from the stored report of the narrower run
        stored = ctx.path(f"gap-{protocol['compare_to']}.json")
        if stored.exists():
            report["rules"].update(gap_width_trend(json.loads(stored.read_text()), report))
        else:
            report["rules"]["3 gap to FP32 against width"] = {"verdict": f"not run (no {stored.name})"}
    ctx.write_json({"protocol": protocol, "seed": ctx.seed, "torch": torch.__version__,
                    "skipped_for_budget": skipped, **report}, stem)
    ctx.write_table(gap_table(report), stem)
    ctx.save_figure(gap_figure(report, n_seeds=protocol["n_seeds"]), stem)
