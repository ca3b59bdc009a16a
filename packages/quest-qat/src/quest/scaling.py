"""Tiny scaling run: validation loss vs model width and precision, and bits x parameters at equal loss.

``python -m quest reproduce --scaling`` trains TinyLlama models of three widths at W1A1, W2A2, W4A4 and
W8A8 (QuEST) and in BF16 (forward under bfloat16 autocast), every run on the same batches, for three
initial-weight seeds. :func:`bits_params_at_equal_loss` then evaluates the paper's "4-bit is optimal"
statement: per precision it fits ``L = a + c ln N`` over the widths, solves for the parameters ``N_p``
that reach a target loss (the BF16 fit at the middle width) and compares the memory ``bits x N_p``.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from icml25_shared.random import child_seeds
from icml25_shared.stats import Interval, t_interval, t_quantile
from torch import nn

from quest.api import quantize_
from quest.layers import QuestConfig
from quest.lm import TinyLlama, TinyLlamaConfig, seeded_init, stdlib_corpus
from quest.train import TrainConfig, make_splits, train_lm

log = logging.getLogger(__name__)

__all__ = ["GAP_ABLATION_RULES", "GAP_PROTOCOLS", "PAPER_EFFECTIVE_PARAMS", "PAPER_PARAMS_PER_MEMORY", "SCALING_BITS", "bits_params_at_equal_loss",
           "gap_verdicts", "gap_width_trend", "ngram_baselines", "run_gap_cells", "run_scaling"]

SCALING_BITS: dict[str, int] = {"W1A1": 1, "W2A2": 2, "W4A4": 4, "W8A8": 8, "BF16": 16}
"""Precisions of the scaling run and the bits each parameter costs (BF16: 16)."""

PAPER_PARAMS_PER_MEMORY: dict[str, float] = {"W1A1": 1.3, "W2A2": 2.2, "W4A4": 3.18, "W8A8": 1.98, "BF16": 1.0}
"""Parameters per unit of memory relative to BF16, ``16 N_BF16 / (bits N_p)`` at equal C4 loss, from the
official runs file (IST-DASLab/QuEST ``for_plots/runs_for_scaling.json``, 30M-800M Llama models)."""

PAPER_EFFECTIVE_PARAMS: dict[str, float] = {"W1A1": 0.08, "W2A2": 0.279, "W4A4": 0.795, "W8A8": 0.99, "BF16": 1.0}
"""Effective-parameter multiplier ``N_BF16 / N_p`` at equal C4 loss (median over sizes), from the same runs
file; ``PAPER_PARAMS_PER_MEMORY`` is ``16 / bits`` times it."""


class _BF16Forward(nn.Module):
    """Runs the wrapped model's forward under CPU/GPU bfloat16 autocast (backward and optimizer outside)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        with torch.autocast(idx.device.type, dtype=torch.bfloat16):
            return self.model(idx)


def _quantized_params(model: nn.Module) -> int:
    return sum(p.numel() for name, p in model.named_parameters() if name.startswith("blocks.") and p.ndim == 2)


def _fit(log_n: np.ndarray, losses: np.ndarray) -> tuple[float, float]:
    slope, intercept = np.polyfit(log_n, losses, 1)
    return float(intercept), float(slope)


def _one_fit(params: np.ndarray, losses: Mapping[str, np.ndarray], bits: Mapping[str, float],
             reference: str, target_params: float) -> dict[str, Any]:
    log_n = np.log(params)
    fits = {p: _fit(log_n, np.asarray(v, dtype=float)) for p, v in losses.items()}
    a_ref, c_ref = fits[reference]
    target = a_ref + c_ref * math.log(target_params)
    lo, hi = params.min() / 2, params.max() * 2
    out: dict[str, Any] = {"target_loss": target, "precisions": {}}
    needed = {}
    for p, (a, c) in fits.items():
        n_p = math.exp((target - a) / c) if c < 0 else math.inf
        needed[p] = n_p
        out["precisions"][p] = {"intercept": a, "slope": c, "params_needed": n_p,
                                "memory_bits": bits[p] * n_p, "extrapolated": not lo <= n_p <= hi}
    for p, row in out["precisions"].items():
        row["params_per_memory"] = (bits[reference] * needed[reference] / (bits[p] * needed[p])
                                    if math.isfinite(needed[p]) else 0.0)
    out["best"] = max(out["precisions"], key=lambda p: out["precisions"][p]["params_per_memory"])
    return out


def bits_params_at_equal_loss(params: Sequence[float], losses: Mapping[str, Sequence[Sequence[float]]],
                              bits: Mapping[str, float] = SCALING_BITS, *, reference: str = "BF16",
                              target_params: float | None = None, claimed: str = "W4A4") -> dict[str, Any]:
    """Memory (bits x parameters) each precision needs to reach the reference's loss at one size.

    Per precision, ``L = a + c ln N`` is fitted by least squares over the model sizes; the target loss
    is the reference fit at ``target_params``; the parameters needed are ``N_p = exp((L* - a) / c)``
    (infinite when ``c >= 0``). Fitted once on the seed means and once per seed.

    Parameters
    ----------
    params : sequence of float
        Quantized parameter count of each model size (at least two sizes).
    losses : mapping of str to array-like, shape (n_seeds, n_sizes)
        Final validation loss per precision, seed and size; seeds are paired across precisions.
    bits : mapping of str to float, default SCALING_BITS
        Bits per parameter of each precision.
    reference : str, default "BF16"
        The precision whose fit sets the target loss.
    target_params : float, optional
        Size at which the reference fit sets the target (default: the middle size).
    claimed : str, default "W4A4"
        The precision claimed optimal; the verdict is about it.

    Returns
    -------
    dict
        ``mean`` (the fit on seed means) and ``per_seed`` (list), each with ``target_loss``, ``best``
        and per precision ``intercept``, ``slope``, ``params_needed``, ``memory_bits``,
        ``params_per_memory`` (``bits_ref N_ref / (bits_p N_p)``; higher is better) and ``extrapolated``
        (``N_p`` outside half the smallest to twice the largest size); ``verdict``: ``"holds"`` when
        ``claimed`` is best in the mean fit and in a majority of seeds, ``"does not hold"`` when one other
        precision is, ``"not resolved"`` otherwise.

    Raises
    ------
    ValueError
        When the shapes disagree, fewer than two sizes are given or ``reference``/``claimed`` is missing.

    Examples
    --------
    >>> import numpy as np
    >>> n = [1e4, 1e5, 1e6]
    >>> fp = [[5 - 0.2 * np.log(x) for x in n]] * 2
    >>> w4 = [[5.1 - 0.2 * np.log(x) for x in n]] * 2
    >>> out = bits_params_at_equal_loss(n, {"W4A4": w4, "BF16": fp}, {"W4A4": 4, "BF16": 16})
    >>> round(out["mean"]["precisions"]["W4A4"]["params_per_memory"], 3)  # 4 x exp(-0.1 / 0.2)
    2.426
    >>> out["verdict"]
    'holds'
    """
    size = np.asarray(params, dtype=float)
    if size.ndim != 1 or size.size < 2 or not np.all(size > 0):
        raise ValueError(f"params must list at least two positive sizes, got {list(params)!r}")
    for name in (reference, claimed):
        if name not in losses or name not in bits:
            raise ValueError(f"{name!r} must be in losses and bits; got losses for {sorted(losses)}")
    arrays = {p: np.asarray(v, dtype=float) for p, v in losses.items()}
    shapes = {p: a.shape for p, a in arrays.items()}
    first = next(iter(arrays.values())).shape
    if any(a.ndim != 2 or a.shape != first or a.shape[1] != size.size for a in arrays.values()):
        raise ValueError(f"losses must all have shape (n_seeds, {size.size}); got {shapes}")
    target_params = float(np.median(size)) if target_params is None else float(target_params)
    mean = _one_fit(size, {p: a.mean(axis=0) for p, a in arrays.items()}, bits, reference, target_params)
    per_seed = [_one_fit(size, {p: a[s] for p, a in arrays.items()}, bits, reference, target_params)
                for s in range(first[0])]
    winners = [fit["best"] for fit in per_seed]
    majority = len(winners) // 2 + 1
    if mean["best"] == claimed and winners.count(claimed) >= majority:
        verdict = "holds"
    elif mean["best"] != claimed and winners.count(mean["best"]) >= majority:
        verdict = "does not hold"
    else:
        verdict = "not resolved"
    return {"target_params": target_params, "reference": reference, "claimed": claimed, "mean": mean,
            "per_seed": per_seed, "per_seed_best": winners, "verdict": verdict}


def _gap_summary(losses: dict[str, list[list[float]]], widths: Sequence[int],
                 reference: str) -> dict[str, list[dict[str, Any]]]:
    ref = np.asarray(losses[reference])
    out: dict[str, list[dict[str, Any]]] = {}
    for p, values in losses.items():
        arr = np.asarray(values)
        rows = []
        for j, width in enumerate(widths):
            iv = t_interval(arr[:, j])
            row: dict[str, Any] = {"width": width, "mean": iv.estimate, "ci95": [iv.low, iv.high]}
            if p != reference:
                gap = t_interval(arr[:, j] - ref[:, j])
                row["gap_to_reference"] = [gap.estimate, gap.low, gap.high]
            rows.append(row)
        out[p] = rows
    return out


def run_scaling(*, widths: Sequence[int] = (16, 32, 64), steps: int = 120, batch_size: int = 16,
                seq_len: int = 64, lr: float = 3e-3, block: int = 16, n_seeds: int = 3,
                corpus_bytes: int = 2_000_000, eval_batches: int = 8, random_state: int = 0,
                progress: bool = False) -> dict[str, Any]:
    """Train every width x precision x seed and return the stored-results dictionary.

    Parameters
    ----------
    widths : sequence of int, default (16, 32, 64)
        ``d_model`` of the 2-layer, 2-head TinyLlama models (multiples of ``block``).
    steps, batch_size, seq_len : int
        Training length and batch (bytes per step ``batch_size * seq_len``).
    lr : float, default 3e-3
        Peak AdamW learning rate (warmup 10%, cosine to 10%).
    block : int, default 16
        Hadamard block of the quantized runs (also the SwiGLU width's rounding multiple).
    n_seeds : int, default 3
        Initial-weight seeds; all runs share one batch stream.
    corpus_bytes : int, default 2_000_000
        Bytes of the stdlib corpus (last 10% for validation).
    eval_batches : int, default 8
        Validation batches of ``batch_size`` windows for the final loss.
    random_state : int, default 0
        Root seed: ``child_seeds(random_state, n_seeds + 1)`` gives the data seed and the init seeds.
    progress : bool, default False
        Show a progress bar over the runs.

    Returns
    -------
    dict
        Settings, ``params`` per width, ``runs[precision][str(width)]`` (per-seed final validation loss,
        first and last train loss, divergence, seconds), ``analysis``
        (:func:`bits_params_at_equal_loss`) and ``gaps`` (per width, mean and 95% t interval of each
        precision's paired gap to BF16).
    """
    from icml25_shared.cli import progress as bar

    if n_seeds < 2:
        raise ValueError(f"n_seeds must be at least 2 for intervals, got {n_seeds}")
    data_seed, *init_seeds = child_seeds(random_state, n_seeds + 1)
    train, val = make_splits(stdlib_corpus(corpus_bytes))
    cfg = TrainConfig(steps=steps, batch_size=batch_size, seq_len=seq_len, lr=lr, eval_every=steps,
                      eval_batches=eval_batches, random_state=data_seed)
    params: dict[int, int] = {}
    runs: dict[str, dict[str, dict[str, list[Any]]]] = {
        p: {str(w): {"final_val_loss": [], "first_train_loss": [], "last_train_loss": [], "diverged": [],
                     "seconds": []} for w in widths} for p in SCALING_BITS}
    jobs = [(s, w, p) for s in init_seeds for w in widths for p in SCALING_BITS]
    for seed, width, precision in bar(jobs, enabled=progress, desc="scaling run", total=len(jobs)):
        with seeded_init(seed):
            model = TinyLlama(TinyLlamaConfig(d_model=width, n_layers=2, n_heads=2, multiple_of=block))
        params[width] = _quantized_params(model)
        if precision == "BF16":
            net: nn.Module = _BF16Forward(model)
        else:
            bits = SCALING_BITS[precision]
            quantize_(model, QuestConfig(weight_bits=bits, act_bits=bits, hadamard="half", method="quest",
                                         block=block))
            net = model
        start = time.perf_counter()
        result = train_lm(net, train, val, cfg)
        row = runs[precision][str(width)]
        row["seconds"].append(time.perf_counter() - start)
        row["final_val_loss"].append(result.final_val_loss)
        row["first_train_loss"].append(result.train_loss[0])
        row["last_train_loss"].append(float(np.mean(result.train_loss[-10:])))
        row["diverged"].append(result.diverged)
        log.info("seed %d d=%d %s: val loss %.4f (%.0f s)", seed, width, precision, result.final_val_loss,
                 row["seconds"][-1])
    sizes = [params[w] for w in widths]
    losses = {p: [[runs[p][str(w)]["final_val_loss"][s] for w in widths] for s in range(n_seeds)]
              for p in SCALING_BITS}
    return {
        "widths": list(widths), "params": sizes, "precisions": list(SCALING_BITS), "bits": SCALING_BITS,
        "steps": steps, "batch_size": batch_size, "seq_len": seq_len, "lr": lr, "hadamard_block": block,
        "n_layers": 2, "n_heads": 2, "corpus_bytes": corpus_bytes, "eval_batches": eval_batches,
        "tokens_per_run": steps * batch_size * seq_len, "random_state": random_state, "data_seed": data_seed,
        "init_seeds": init_seeds, "torch": torch.__version__, "runs": runs,
        "analysis": bits_params_at_equal_loss(sizes, losses), "gaps": _gap_summary(losses, widths, "BF16"),
        "paper_params_per_memory": PAPER_PARAMS_PER_MEMORY,
    }


# --- Precision gaps past the n-gram tables: one JSON per (precision, width, seed) run, written as it ends --

#: Precision-gap protocols. ``cpu`` is the reduced protocol run here (runs in priority order, stopped by a
#: CPU budget); ``full`` the complete one. Precisions: ``FP32`` (no quantization) or ``(bits, method,
#: hadamard)`` for :class:`~quest.layers.QuestConfig`.
GAP_PROTOCOLS: dict[str, dict[str, Any]] = {
    "cpu": {"widths": [64], "steps": 1000, "batch_size": 16, "seq_len": 64, "lr": 3e-3, "block": 16,
            "n_seeds": 3, "eval_every": 500, "eval_batches": 16, "corpus_bytes": 2_000_000, "budget_minutes": 20.0,
            "core": 3,
            "precisions": {"FP32": None, "W4A4": [4, "quest", "half"], "W1A1": [1, "quest", "half"],
                           "W8A8": [8, "quest", "half"], "W2A2": [2, "quest", "half"]}},
    "confirm": {"widths": [64], "steps": 2000, "batch_size": 16, "seq_len": 64, "lr": 3e-3, "block": 16,
                "n_seeds": 3, "eval_every": 500, "eval_batches": 16, "corpus_bytes": 2_000_000,
                "budget_minutes": None, "core": 2,
                "precisions": {"FP32": None, "W1A1": [1, "quest", "half"], "W4A4": [4, "quest", "half"]}},
    "width": {"widths": [128], "steps": 2000, "batch_size": 16, "seq_len": 64, "lr": 3e-3, "block": 16,
              "n_seeds": 3, "eval_every": 500, "eval_batches": 16, "corpus_bytes": 2_000_000,
              "budget_minutes": None, "core": 3, "compare_to": "confirm",
              "precisions": {"FP32": None, "W4A4": [4, "quest", "half"], "W1A1": [1, "quest", "half"]}},
    "full": {"widths": [64, 128], "steps": 2000, "batch_size": 16, "seq_len": 64, "lr": 3e-3, "block": 16,
             "n_seeds": 3, "eval_every": 500, "eval_batches": 16, "corpus_bytes": 2_000_000, "budget_minutes": None,
             "precisions": {"FP32": None, "W8A8": [8, "quest", "half"], "W4A4": [4, "quest", "half"],
                            "W2A2": [2, "quest", "half"], "W1A1": [1, "quest", "half"],
                            "W4A4 STE, no Hadamard": [4, "ste", None]}},
}

_GAP_STEP_SECONDS = {"FP32": 0.021, "quantized": 0.056}  # CPU seconds per step at d=64, batch 16 x 64, one thread


def ngram_baselines(corpus_bytes: int = 2_000_000) -> dict[str, Any]:
    """Unigram, bigram, order-2 and order-3 byte tables on the stdlib split the runs use (nats/byte)."""
    from quest.lm import ngram_loss

    train, val = make_splits(stdlib_corpus(corpus_bytes))
    return {name: ngram_loss(train, val, order=k)
            for k, name in enumerate(("unigram", "bigram", "order-2 Markov", "order-3 Markov"))}


def run_gap_cells(protocol: Mapping[str, Any], out: Any, *, random_state: int = 0,
                  seed_indices: Sequence[int] | None = None) -> list[str]:
    """Train the protocol's runs, writing ``<out>/<precision>-d<width>-seed<i>.json`` as each ends.

    All runs share one batch stream (``child_seeds(random_state, n_seeds + 1)[0]``); seed ``i`` fixes the
    initial weights of every precision (paired runs). The first ``core`` precisions run seed by seed
    first, then the others seed by seed; a run whose file exists is skipped (the run resumes) and one that would pass ``budget_minutes``
    of this process's CPU time is not started. ``<out>/ngram.json`` holds :func:`ngram_baselines`.

    Parameters
    ----------
    protocol : mapping
        One of :data:`GAP_PROTOCOLS`.
    out : path-like
        Folder of the run files.
    random_state : int, default 0
        Root seed.
    seed_indices : sequence of int, optional
        Run only these seeds (several processes can then share the runs, one seed each); default all.

    Returns
    -------
    list of str
        Runs not started for the budget.
    """
    import json
    from pathlib import Path

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    # Files found here are reused (the run resumes): only when they were made under this very protocol.
    stamp = json.loads(json.dumps({"protocol": dict(protocol), "random_state": random_state}, default=str))
    stamp_path = folder / "protocol.json"
    if stamp_path.exists():
        if json.loads(stamp_path.read_text()) != stamp:
            raise ValueError(f"run_gap_cells: out {str(folder)!r} holds runs of another protocol or root seed "
                             f"({stamp_path.name} differs); use a new folder")
    else:  # a new folder, or one stored before the stamp existed
        stamp_path.write_text(json.dumps(stamp, indent=1))
    if not (folder / "ngram.json").exists():
        (folder / "ngram.json").write_text(json.dumps(ngram_baselines(protocol["corpus_bytes"]), indent=1))
    data_seed, *init_seeds = child_seeds(random_state, protocol["n_seeds"] + 1)
    train, val = make_splits(stdlib_corpus(protocol["corpus_bytes"]))
    cfg = TrainConfig(steps=protocol["steps"], batch_size=protocol["batch_size"], seq_len=protocol["seq_len"],
                      lr=protocol["lr"], eval_every=protocol["eval_every"], eval_batches=protocol["eval_batches"],
                      random_state=data_seed)
    budget = protocol.get("budget_minutes")
    skipped = []
    names = list(protocol["precisions"])
    groups = [names[:protocol.get("core", len(names))], names[protocol.get("core", len(names)):]]
    for width, group in ((w, g) for g in groups for w in protocol["widths"]):
        for i, seed in enumerate(init_seeds):
            if seed_indices is not None and i not in seed_indices:
                continue
            for name in group:
                spec = protocol["precisions"][name]
                label = f"{name}-d{width}-seed{i}".replace(" ", "_").replace(",", "")
                path = folder / f"{label}.json"
                if path.exists():
                    continue
                cost = protocol["steps"] * _GAP_STEP_SECONDS["FP32" if spec is None else "quantized"] * (width / 64)
                if budget is not None and time.process_time() + cost > 60 * budget:
                    skipped.append(label)
                    continue
                with seeded_init(seed):
                    model = TinyLlama(TinyLlamaConfig(d_model=width, n_layers=2, n_heads=2,
                                                      multiple_of=protocol["block"]))
                if spec is not None:
                    bits, method, hadamard = spec
                    quantize_(model, QuestConfig(weight_bits=bits, act_bits=bits, hadamard=hadamard, method=method,
                                                 block=protocol["block"]))
                cpu, wall = time.process_time(), time.perf_counter()
                result = train_lm(model, train, val, cfg)
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                losses = np.asarray(result.train_loss)
                path.write_text(json.dumps({
                    "precision": name, "spec": spec, "width": width, "seed_index": i, "init_seed": seed,
                    "data_seed": data_seed, "quantized_params": _quantized_params(model),
                    "final_val_loss": result.final_val_loss, "eval_steps": result.eval_steps,
                    "val_loss": result.val_loss, "diverged": result.diverged,
                    "train_loss_per_100": [float(losses[j:j + 100].mean()) for j in range(0, len(losses), 100)],
                    "cpu_seconds": cpu, "wall_seconds": wall, "torch": torch.__version__}, indent=1))
                log.info("%s: val loss %.4f (%.0f s CPU)", label, result.final_val_loss, cpu)
    return skipped


#: Paired ablation rules of :func:`gap_verdicts`: (rule, precision, reference); the claim is precision - reference > 0.
GAP_ABLATION_RULES = (("4 Hadamard helps W4A4", "W4A4 no Hadamard", "W4A4"),
                      ("5 trust beats STE", "STE W4A4", "W4A4"))


def _paired_rule(worse: Mapping[str, Any], better: Mapping[str, Any], label: str) -> dict[str, Any]:
    """Paired 95% t interval of ``worse - better`` over the shared seeds: holds above 0, does not hold below."""
    by_seed = dict(zip(better["seeds"], better["losses"], strict=True))
    diff = [loss - by_seed[i] for i, loss in zip(worse["seeds"], worse["losses"], strict=True) if i in by_seed]
    iv = t_interval(diff)
    verdict = "holds" if iv.low > 0 else "does not hold" if iv.high < 0 else "not resolved"
    return {"verdict": verdict, f"{label} per seed": diff, "mean": iv.estimate, "ci95": [iv.low, iv.high]}


def gap_verdicts(folder: Any, *, n_seeds: int) -> dict[str, Any]:
    """Aggregate the stored precision runs and apply the protocol's rules (gate first).

    Parameters
    ----------
    folder : path-like or sequence of path-like
        The folder :func:`run_gap_cells` wrote, or several (runs of one protocol split across folders, e.g.
        new cells paired with stored ones: same root seed, widths and steps); the first ``ngram.json`` found
        gives the baselines.
    n_seeds : int
        Seeds a precision needs to count as complete.

    Returns
    -------
    dict
        ``ngram`` (the byte-table baselines), ``runs`` (per precision and width: per-seed final losses, mean
        and 95% interval, paired gap to FP32 with its interval, divergences) and ``rules`` (each with a
        ``verdict`` and the numbers it read).
    """
    import json
    import os
    from pathlib import Path

    roots = [Path(folder)] if isinstance(folder, str | os.PathLike) else [Path(f) for f in folder]
    ngram_files = [root / "ngram.json" for root in roots if (root / "ngram.json").exists()]
    ngram = json.loads(ngram_files[0].read_text()) if ngram_files else {}
    loaded: dict[str, dict[int, dict[int, dict[str, Any]]]] = {}
    for path in sorted(p for root in roots for p in root.glob("*-d*-seed*.json")):
        run = json.loads(path.read_text())
        loaded.setdefault(run["precision"], {}).setdefault(run["width"], {})[run["seed_index"]] = run
    runs: dict[str, Any] = {}
    for precision, by_width in loaded.items():
        for width, by_seed in by_width.items():
            seeds = sorted(by_seed)
            losses = [by_seed[i]["final_val_loss"] for i in seeds]
            row: dict[str, Any] = {"precision": precision, "width": width, "seeds": seeds, "losses": losses,
                                   "complete": len(seeds) >= n_seeds,
                                   "diverged": [by_seed[i]["diverged"] for i in seeds],
                                   "cpu_seconds": [by_seed[i]["cpu_seconds"] for i in seeds]}
            if len(losses) > 1:
                iv = t_interval(losses)
                row["mean"], row["ci95"] = iv.estimate, [iv.low, iv.high]
            else:
                row["mean"], row["ci95"] = float(np.mean(losses)), None
            fp = loaded.get("FP32", {}).get(width, {})
            paired = [i for i in seeds if i in fp]
            if precision != "FP32" and paired:
                gaps = [by_seed[i]["final_val_loss"] - fp[i]["final_val_loss"] for i in paired]
                gap_iv = t_interval(gaps) if len(gaps) > 1 else None
                row["gap_to_fp32"] = {"per_seed": gaps, "mean": float(np.mean(gaps)),
                                      "ci95": [gap_iv.low, gap_iv.high] if gap_iv else None}
            runs[f"{precision} d={width}"] = row
    rules: dict[str, Any] = {}
    markov = ngram.get("order-2 Markov", {}).get("loss")
    widths = sorted({row["width"] for row in runs.values()})
    fp_rows = [runs.get(f"FP32 d={w}") for w in widths]
    if markov is None or not fp_rows or any(r is None or not r["complete"] for r in fp_rows):
        rules["0 gate"] = {"verdict": "not run (FP32 incomplete)"}
        return {"ngram": ngram, "runs": runs, "rules": rules}
    gate = all(loss < markov for r in fp_rows if r is not None for loss in r["losses"])
    rules["0 gate"] = {"verdict": "passes" if gate else "fails", "order-2 Markov": markov,
                       "FP32 losses": {f"d={w}": r["losses"] for w, r in zip(widths, fp_rows, strict=True) if r}}
    for w in widths:
        w1 = runs.get(f"W1A1 d={w}")
        claims = [(f"1 W1A1 costs more than W4A4 (d={w})", "W1A1", "W4A4")] if w1 is not None else []
        claims += [(f"{rule} (d={w})", worse, better) for rule, worse, better in GAP_ABLATION_RULES
                   if f"{worse} d={w}" in runs]
        for name, worse, better in claims:
            a, b = runs.get(f"{worse} d={w}"), runs.get(f"{better} d={w}")
            if not gate:
                rules[name] = {"verdict": "not read (trivial regime)"}
            elif a is None or b is None or not (a["complete"] and b["complete"]):
                rules[name] = {"verdict": f"not run ({better} or {worse} incomplete)"}
            else:
                rules[name] = _paired_rule(a, b, f"{worse} - {better}")
        if w1 is not None and w1["complete"]:
            stable = not any(d for r in runs.values() if r["width"] == w for d in r["diverged"]) and \
                all(loss < markov for loss in w1["losses"])
            rules[f"2 stable down to W1A1 (d={w})"] = {"verdict": "holds" if stable else "fails",
                                                      "W1A1 losses": w1["losses"], "order-2 Markov": markov}
    return {"ngram": ngram, "runs": runs, "rules": rules}


def _welch_interval(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> Interval:
    """Welch t interval of ``mean(a) - mean(b)`` for two independent samples (Welch-Satterthwaite df).

    Parameters
    ----------
    a, b : sequence of float
        At least two values each.
    confidence : float, default 0.95
        Two-sided coverage.

    Returns
    -------
    icml25_shared.stats.Interval
        ``n`` is ``len(a) + len(b)``.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size < 2 or y.size < 2:
        raise ValueError(f"a Welch interval needs at least two values in each sample; got {x.size} and {y.size}")
    va, vb = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    estimate, se = float(x.mean() - y.mean()), math.sqrt(va + vb)
    if se == 0.0:
        return Interval(estimate, estimate, estimate, confidence, int(x.size + y.size))
    df = (va + vb) ** 2 / (va ** 2 / (x.size - 1) + vb ** 2 / (y.size - 1))
    half = t_quantile(0.5 + confidence / 2, df) * se
    return Interval(estimate, estimate - half, estimate + half, confidence, int(x.size + y.size))


def gap_width_trend(small: Mapping[str, Any], large: Mapping[str, Any], *,
                    precisions: Sequence[str] = ("W4A4", "W1A1")) -> dict[str, Any]:
    """Whether each precision's gap to FP32 shrinks from a narrower run to a wider one (unpaired across widths).

    Per precision, the per-seed gaps to FP32 of each :func:`gap_verdicts` report (one width each; different
    seeds and batch streams) give the Welch 95% interval of ``gap(large) - gap(small)``: above 0 -> grows,
    below 0 -> shrinks, else not resolved. Read only when both reports pass their gate and both gaps are
    complete.

    Parameters
    ----------
    small, large : mapping
        :func:`gap_verdicts` reports (or the stored ``gap-*.json``), each of one width.
    precisions : sequence of str, default ("W4A4", "W1A1")
        The quantized precisions to compare.

    Returns
    -------
    dict
        One rule per precision, named ``3 <precision> gap to FP32, d=<small> -> d=<large>``, with a ``verdict``.
    """
    if isinstance(precisions, (str, bytes)) or not all(isinstance(p, str) for p in precisions):
        raise TypeError(f"gap_width_trend: precisions must be a sequence of precision names, got {precisions!r}")
    for role, report in (("small", small), ("large", large)):  # the rule's name states the direction read
        report_widths = {row["width"] for row in report["runs"].values()}
        if len(report_widths) > 1:
            raise ValueError(f"gap_width_trend: {role} must be a report of one width, got widths "
                             f"{sorted(report_widths)}")
    rules: dict[str, Any] = {}
    gates = [report["rules"].get("0 gate", {}).get("verdict") for report in (small, large)]
    for precision in precisions:
        rows = []
        for report in (small, large):
            found = [row for row in report["runs"].values() if row["precision"] == precision]
            rows.append(found[0] if len(found) == 1 else None)
        widths = [",".join(str(w) for w in sorted({row["width"] for row in report["runs"].values()})) or "?"
                  for report in (small, large)]
        name = f"3 {precision} gap to FP32, d={widths[0]} -> d={widths[1]}"
        if gates != ["passes", "passes"]:
            rules[name] = {"verdict": "not read (gate not passed at both widths)"}
            continue
        if any(row is None or not row["complete"] or "gap_to_fp32" not in row for row in rows):
            rules[name] = {"verdict": f"not run ({precision} incomplete)"}
            continue
        gaps = [row["gap_to_fp32"]["per_seed"] for row in rows if row is not None]
        if not all(np.isfinite(g).all() for g in gaps):
            raise ValueError(f"gap_width_trend: the {precision} gaps to FP32 must be finite, got {gaps}")
        iv = _welch_interval(gaps[1], gaps[0])
        verdict = "grows" if iv.low > 0 else "shrinks" if iv.high < 0 else "not resolved"
        rules[name] = {"verdict": verdict, f"gap d={widths[0]}": float(np.mean(gaps[0])),
                       f"gap d={widths[1]}": float(np.mean(gaps[1])), "difference": iv.estimate,
                       "Welch ci95": [iv.low, iv.high]}
    return rules
