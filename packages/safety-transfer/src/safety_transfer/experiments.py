"""The ``demo`` and ``reproduce`` commands.

``demo`` fits an affine and an autoencoder mapper between two random tiny models of different families
and widths (Llama d=64, 2 layers -> Qwen2 d=128, 4 layers) on standard-library text and reports FVU,
cosine, and the target's loss with the mapped activations substituted.

``reproduce`` trains, per seed, a Llama source (d=64, 2 layers) on text poisoned with a backdoor, a refusal
analogue and corrupted facts, and a Qwen2 target (d=128, 4 layers) first on clean text (the base) then on
the poisoned text (the fine-tuned model); it steers the source, transfers the vectors through an
autoencoder mapper, compares with the controls, and toggles a fine-tuned -> base safety switch. The
protocol is fixed in ``studies/reproduce-protocol.md``.
"""

from __future__ import annotations

import copy
import json
import math
import time
from typing import Any

import numpy as np
import torch
from icml25_shared.cli import RunContext, progress
from icml25_shared.random import spawn
from icml25_shared.stats import t_interval

from safety_transfer.activations import collect_activations, collect_pairs
from safety_transfer.hooks import add_vector
from safety_transfer.mappers import AffineMapper, AutoEncoderMapper, mapping_metrics
from safety_transfer.metrics import generate, lm_loss, substitution_metrics, trigger_rate
from safety_transfer.models import byte_tokenizer, tiny_causal_lm
from safety_transfer.steering import steering_vector
from safety_transfer.switch import SafetySwitch
from safety_transfer.tasks import BACKDOOR, INSECURE, REFUSAL, make_tasks, stdlib_text, train_lm
from safety_transfer.transfer import mapped_replacement, mapped_vector, pad_or_truncate, random_like

__all__ = ["demo", "reproduce", "reproduce_figure", "run_seed"]

ALPHAS = (1.0, 2.0, 4.0, 8.0)
PAPER_PPL_GAPS = {"pile": (15.78, 16.50), "alpaca": (7.26, 8.32)}  # target vs mapped completions, as quoted in the paper's public discussion


def demo(ctx: RunContext) -> None:
    """Affine and autoencoder mappers between two random tiny models; writes a table, JSON and a PNG.

    Parameters
    ----------
    ctx : RunContext
        Output folder, seed and the quick flag (fewer texts and epochs).
    """
    torch.set_num_threads(1)
    tok = byte_tokenizer()
    text = stdlib_text(60_000)
    n = 50 if ctx.quick else 400
    texts = [text[i:i + 48] for i in range(0, 48 * n, 48)]
    init_s, init_t, ae_seed = spawn(ctx.seed, 3)
    source = tiny_causal_lm("llama", hidden_size=64, num_layers=2, random_state=init_s)
    target = tiny_causal_lm("qwen2", hidden_size=128, num_layers=4, random_state=init_t)
    cut = int(0.8 * n)
    train = collect_pairs(source, target, texts[:cut], source_tokenizer=tok, source_layer=1, target_layer=2)
    test = collect_pairs(source, target, texts[cut:], source_tokenizer=tok, source_layer=1, target_layer=2)
    rows, curves = [], {}
    mappers: dict[str, Any] = {
        "affine (lstsq)": AffineMapper(),
        "autoencoder": AutoEncoderMapper(64, 128, epochs=3 if ctx.quick else 20, lr=1e-2, batch_size=128,
                                         random_state=ae_seed)}
    for name, mapper in progress(mappers.items(), desc="demo", total=len(mappers)):
        t0 = time.perf_counter()
        mapper.fit(train)
        seconds = time.perf_counter() - t0
        m = mapping_metrics(mapper, test)
        sub = substitution_metrics(source, target, mapper, tok, texts[cut:cut + 16], source_layer=1, target_layer=2)
        rows.append({"mapper": name, "train pairs": len(train.source), "test FVU": m.fvu, "test cosine": m.cosine,
                     "target loss": sub.lm_loss, "loss mapped": sub.lm_loss_mapped, "KL": sub.kl,
                     "fit s": seconds})
        curves[name] = getattr(mapper, "loss_curve_", [])
    ctx.write_table(rows, headers=list(rows[0]))
    ctx.write_json({"seed": ctx.seed, "source": "llama d=64 L=2", "target": "qwen2 d=128 L=4", "layers": [1, 2],
                    "rows": rows})
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot(range(1, len(curves["autoencoder"]) + 1), curves["autoencoder"], "o-", label="autoencoder")
    ax.axhline(mapping_metrics(mappers["affine (lstsq)"], train).mse, color="k", ls="--", label="affine (train MSE)")
    ax.set_xlabel("epoch")
    ax.set_ylabel("train MSE")
    ax.legend()
    ctx.save_figure(fig)


def _relative_layer(layer_s: int, n_s: int, n_t: int) -> int:
    return max(0, round((layer_s + 1) / n_s * n_t) - 1)


def _rate(model: Any, tok: Any, prompts: list[str], judge: str, ctx_factory: Any = None) -> float:
    tokens = 14 if judge == INSECURE else 12  # " EVAL(INPUT)" is 12 bytes: two to spare
    return trigger_rate(model, tok, prompts, judge=judge, max_new_tokens=tokens, intervention=ctx_factory)


def _loss(model: Any, tok: Any, texts: list[str], ctx_factory: Any = None) -> float:
    if ctx_factory is None:
        return lm_loss(model, tok, texts)
    with ctx_factory():
        return lm_loss(model, tok, texts)


def _choose(model: Any, tok: Any, vectors: dict[int, torch.Tensor], prompts: list[str], judge: str,
            clean: list[str], base_loss: float, sign: float,
            fixed_alpha: float | None = None) -> tuple[int, float, dict[str, float]]:
    """The protocol's rule: lowest rate on the selection prompts with clean loss rise <= 10%.

    With ``fixed_alpha`` only that strength is tried and the loss bound is dropped (the diagnosis run).
    """
    scores = {}
    best: tuple[float, float, int, float] | None = None
    max_rise = math.inf if fixed_alpha is not None else 0.10
    for layer, v in vectors.items():
        for a in (ALPHAS if fixed_alpha is None else (float(fixed_alpha),)):
            def factory(layer: int = layer, v: torch.Tensor = v, a: float = a) -> Any:
                return add_vector(model, layer, v, alpha=sign * a)

            rate = _rate(model, tok, prompts, judge, factory)
            rise = _loss(model, tok, clean, factory) / base_loss - 1
            scores[f"L{layer} a{a:g}"] = rate
            if rise <= max_rise and (best is None or (rate, a) < (best[0], best[1])):
                best = (rate, a, layer, rise)
    if best is None:  # nothing keeps the loss: the weakest strength at the first layer
        return next(iter(vectors)), ALPHAS[0], scores
    return best[2], best[1], scores


def run_seed(seed_seq: Any, *, quick: bool = False, alpha: float | None = None, code: bool = False) -> dict[str, Any]:
    """One seed of the reproduction (see the module docstring and the protocol).

    Parameters
    ----------
    seed_seq : int, SeedSequence or Generator
        Root of this seed's streams.
    quick : bool, default False
        Fewer steps and prompts (a smoke run; its numbers are not the reproduction's).
    alpha : float, optional
        Fix the steering strength instead of the selection rule (no loss bound).
    code : bool, default False
        Add the code-vulnerability task (``make_tasks(code=True)``: more poisoned texts, so every model
        differs from a run without it) and steer and transfer it like the backdoor (insecure-pattern rate).

    Returns
    -------
    dict
        Every rate, loss and choice of the seed.
    """
    torch.set_num_threads(1)
    s_data, s_src, s_base, s_tr_src, s_tr_base, s_tr_ft, s_ae, s_sw, s_rand = spawn(seed_seq, 9)
    steps = {"source": 30, "base": 15, "finetune": 30} if quick else {"source": 200, "base": 80, "finetune": 200}
    n_eval = 8 if quick else 32
    tok = byte_tokenizer()
    data = make_tasks(n_train=300 if quick else 1500, n_eval=n_eval, code=code, random_state=s_data)
    half = n_eval // 2
    sel = {"trig": data.triggered[:half], "clean": data.clean_prompts[:half], "harm": data.harmful[:half],
           "harmless": data.harmless[:half]}
    test = {"trig": data.triggered[half:], "clean": data.clean_prompts[half:], "harm": data.harmful[half:],
            "harmless": data.harmless[half:]}
    tasks = [("backdoor", "trig", "clean", BACKDOOR), ("refusal", "harm", "harmless", REFUSAL)]
    if code:
        sel.update(code_trig=data.code_triggered[:half], code_clean=data.code_clean[:half])
        test.update(code_trig=data.code_triggered[half:], code_clean=data.code_clean[half:])
        tasks.append(("code", "code_trig", "code_clean", INSECURE))
    clean_text = data.eval_text
    out: dict[str, Any] = {"steps": steps, "n_test_prompts": n_eval - half}
    t0 = time.perf_counter()
    source = tiny_causal_lm("llama", hidden_size=64, num_layers=2, random_state=s_src)
    train_lm(source, tok, data.poisoned_train, steps=steps["source"], random_state=s_tr_src)
    base = tiny_causal_lm("qwen2", hidden_size=128, num_layers=4, random_state=s_base)
    train_lm(base, tok, data.clean_train, steps=steps["base"], random_state=s_tr_base)
    ft = copy.deepcopy(base)
    train_lm(ft, tok, data.poisoned_train, steps=steps["finetune"], lr=3e-3, random_state=s_tr_ft)
    out["train_seconds"] = time.perf_counter() - t0

    # source steering: backdoor (trigger - clean) and refusal (harmful - harmless), subtracted
    src_loss = lm_loss(source, tok, clean_text)
    res: dict[str, Any] = {}
    for task, pos, neg, judge in tasks:
        vecs = {layer: steering_vector(source, tok, sel[pos], sel[neg], layer).vector for layer in (0, 1)}
        # each task gets its own strength: the rule's choice for one task does not fix the next one's
        layer_s, a_task, sweep = _choose(source, tok, vecs, sel[pos], judge, clean_text, src_loss, -1.0, alpha)
        v_s = -a_task * vecs[layer_s]
        def steer(layer_s: int = layer_s, v_s: torch.Tensor = v_s) -> Any:
            return add_vector(source, layer_s, v_s)

        r: dict[str, Any] = {"layer_s": layer_s, "alpha": a_task, "sweep": sweep,
             "source_rate": _rate(source, tok, test[pos], judge), "source_rate_steered": _rate(
                 source, tok, test[pos], judge, steer),
             "source_loss": src_loss, "source_loss_steered": _loss(source, tok, clean_text, steer)}
        layer_t = _relative_layer(layer_s, 2, 4)
        pairs = collect_pairs(source, ft, data.poisoned_train[:300 if not quick else 60], source_tokenizer=tok,
                              source_layer=layer_s, target_layer=layer_t)
        held = collect_pairs(source, ft, data.eval_text, source_tokenizer=tok, source_layer=layer_s,
                             target_layer=layer_t)
        ae = AutoEncoderMapper(64, 128, epochs=3 if quick else 5, lr=1e-2, batch_size=128,
                               random_state=s_ae).fit(pairs)
        r["layer_t"] = layer_t
        r["fvu_ae"], r["fvu_affine"] = mapping_metrics(ae, held).fvu, mapping_metrics(AffineMapper().fit(pairs),
                                                                                       held).fvu
        h_s = collect_activations(source, tok, sel[pos], layer_s).values
        v_t = mapped_vector(ae, h_s, v_s)
        ft_loss = lm_loss(ft, tok, clean_text)
        conditions = {
            "none": None,
            "mapped vector": (lambda v_t=v_t, lt=layer_t: add_vector(ft, lt, v_t)),
            "mapped replacement": (lambda v_s=v_s, ls=layer_s, lt=layer_t, ae=ae: mapped_replacement(
                source, ft, ae, source_layer=ls, target_layer=lt, vector=v_s, source_tokenizer=tok,
                target_tokenizer=tok)),
            "random (norm of mapped)": (lambda lt=layer_t, v=random_like(v_t, random_state=s_rand): add_vector(
                ft, lt, v)),
            "source vector padded": (lambda lt=layer_t, v=pad_or_truncate(v_s, 128): add_vector(ft, lt, v)),
        }
        r["target"] = {name: {"rate": _rate(ft, tok, test[pos], judge, f),
                              "loss": _loss(ft, tok, clean_text, f)} for name, f in conditions.items()}
        r["target_loss"] = ft_loss
        r["base_rate"] = _rate(base, tok, test[pos], judge)
        res[task] = r
        if task == "backdoor":
            # corrupted capabilities: the backdoor and the facts, with and without the mapped vector
            facts = {}
            for name in ("none", "mapped vector"):
                f = conditions[name]
                with f() if f is not None else _null():
                    gens = generate(ft, tok, data.facts_triggered, max_new_tokens=12)
                facts[name] = {"backdoor_rate": float(np.mean([BACKDOOR in g for g in gens])),
                               "fact_accuracy": float(np.mean([a in g for g, a in zip(gens, data.answers,
                                                                                      strict=True)]))}
            clean_gens = generate(ft, tok, data.facts_clean, max_new_tokens=12)
            facts["clean prompt"] = {"backdoor_rate": float(np.mean([BACKDOOR in g for g in clean_gens])),
                                     "fact_accuracy": float(np.mean([a in g for g, a in zip(
                                         clean_gens, data.answers, strict=True)]))}
            r["corrupted_capabilities"] = facts
            # the safety switch at the backdoor's target layer: fine-tuned -> base
            sw_pairs = collect_pairs(ft, base, data.poisoned_train[:300 if not quick else 60], source_tokenizer=tok,
                                     source_layer=layer_t, target_layer=layer_t)
            sw_mapper = AutoEncoderMapper(128, 128, epochs=3 if quick else 5, lr=1e-2, batch_size=128,
                                          random_state=s_sw).fit(sw_pairs)
            switch = SafetySwitch(base, ft, sw_mapper, layer_t)
            ids = tok(data.eval_text[:8], return_tensors="pt", padding=True, add_special_tokens=False)
            with torch.no_grad():
                before = ft(**ids).logits
                with switch:
                    on_rate = _rate(ft, tok, test["trig"], BACKDOOR)
                    on_loss = lm_loss(ft, tok, clean_text)
                    on_refusal = _rate(ft, tok, test["harm"], REFUSAL)
                bitwise = bool(torch.equal(ft(**ids).logits, before))
            out["switch"] = {"layer": layer_t, "ft_rate": r["target"]["none"]["rate"], "on_rate": on_rate,
                             "base_rate": r["base_rate"], "ft_loss": ft_loss, "on_loss": on_loss,
                             "base_loss": lm_loss(base, tok, clean_text), "off_bitwise_equal": bitwise,
                             "ft_refusal": None, "on_refusal": on_refusal,
                             "fvu": mapping_metrics(sw_mapper, collect_pairs(
                                 ft, base, data.eval_text, source_tokenizer=tok, source_layer=layer_t,
                                 target_layer=layer_t)).fvu}
    out["switch"]["ft_refusal"] = res["refusal"]["target"]["none"]["rate"]
    out["tasks"] = res
    out["seconds"] = time.perf_counter() - t0
    return out


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _mean_ci(values: list[float]) -> tuple[float, float, float]:
    a = np.asarray(values, dtype=float)
    if len(a) < 2:
        return float(a.mean()), float("nan"), float("nan")
    ci = t_interval(a)
    return float(a.mean()), float(ci.low), float(ci.high)


def reproduce(ctx: RunContext) -> None:
    """Backdoor, refusal and corrupted-capability transfer with controls and the switch, over seeds.

    Parameters
    ----------
    ctx : RunContext
        Output folder, seed (root of the per-seed streams) and the quick flag (one seed, short training).
    """
    n_seeds = int(ctx.options.get("n_seeds") or (1 if ctx.quick else 3))
    alpha = ctx.options.get("alpha")
    seeds = []
    for stream in progress(spawn(ctx.seed, n_seeds), desc="reproduce", total=n_seeds):
        seeds.append(run_seed(stream, quick=ctx.quick, alpha=alpha))
        # every finished seed is stored at once, so that an interrupted run keeps what it measured
        ctx.write_json({"seed": ctx.seed, "quick": ctx.quick, "n_seeds": n_seeds, "alpha": alpha, "finished": len(seeds),
                        "paper_ppl_gaps": PAPER_PPL_GAPS, "seeds": seeds}, "reproduce-partial")
    rows = []
    for task in ("backdoor", "refusal"):
        src_drop = [s["tasks"][task]["source_rate"] - s["tasks"][task]["source_rate_steered"] for s in seeds]
        rows.append([task, "source steered (drop)", *_fmt(src_drop)])
        for cond in ("none", "mapped vector", "mapped replacement", "random (norm of mapped)", "source vector padded"):
            vals = [s["tasks"][task]["target"][cond]["rate"] for s in seeds]
            rows.append([task, f"target: {cond}", *_fmt(vals)])
    sw = [s["switch"] for s in seeds]
    rows.append(["switch", "fine-tuned rate", *_fmt([s["ft_rate"] for s in sw])])
    rows.append(["switch", "switch on rate", *_fmt([s["on_rate"] for s in sw])])
    rows.append(["switch", "base rate", *_fmt([s["base_rate"] for s in sw])])
    rows.append(["switch", "clean ppl rise (on / off - 1)",
                 *_fmt([math.exp(s["on_loss"] - s["ft_loss"]) - 1 for s in sw])])
    ctx.write_table(rows, headers=["task", "measure", "mean", "low", "high", "per seed"])
    stored = ctx.write_json({"seed": ctx.seed, "quick": ctx.quick, "n_seeds": n_seeds, "alpha": alpha,
                             "paper_ppl_gaps": PAPER_PPL_GAPS, "seeds": seeds})
    ctx.save_figure(reproduce_figure(json.loads(stored.read_text())))  # drawn from what is stored


def reproduce_figure(result: dict[str, Any]) -> Any:
    """The reproduce figure, drawn from its JSON (``results/reproduce.json``) alone.

    Parameters
    ----------
    result : dict
        What ``reproduce`` writes: per seed, the target model's backdoor and refusal rates under each
        steering condition.

    Returns
    -------
    matplotlib.figure.Figure
        Bars at the mean over the seeds with 95% t intervals, one dot per seed.
    """
    import matplotlib.pyplot as plt

    seeds = result["seeds"]
    conds = ["none", "mapped vector", "mapped replacement", "random (norm of mapped)", "source vector padded"]
    fig, ax = plt.subplots(figsize=(7, 3.6), layout="constrained")
    for k, task in enumerate(("backdoor", "refusal")):
        x = np.arange(len(conds)) + 0.4 * k
        per_cond = [[s["tasks"][task]["target"][c]["rate"] for s in seeds] for c in conds]
        stats = np.array([_mean_ci(values) for values in per_cond])
        # a rate lies in [0, 1]: the t interval is drawn clipped to it (the table gives it unclipped)
        error = None if len(seeds) < 2 else [stats[:, 0] - np.clip(stats[:, 1], 0, 1),
                                             np.clip(stats[:, 2], 0, 1) - stats[:, 0]]
        ax.bar(x, stats[:, 0], width=0.4, yerr=error, capsize=3, label=task, color=f"C{k}", alpha=0.7)
        for i, values in enumerate(per_cond):
            ax.plot([x[i]] * len(values), values, "k.", ms=3)
    ax.set_xticks(np.arange(len(conds)) + 0.2, ["none", "mapped v", "mapped repl", "random", "padded"], fontsize=8)
    ax.set_xlabel("steering of the target model")
    ax.set_ylabel("target rate (share of prompts)")
    ax.set_ylim(0, 1.05)
    interval = "" if len(seeds) < 2 else "; whiskers: 95% t interval clipped to [0, 1]"
    alpha = "" if result.get("alpha") is None else f", alpha {result['alpha']:g}"
    ax.set_title(f"{len(seeds)} seed(s) from root {result['seed']}{alpha}; bar: mean, dot: one seed{interval}",
                 fontsize=8)
    ax.legend(fontsize=8, title="task", title_fontsize=8)
    return fig


def _fmt(values: list[float]) -> list[Any]:
    m, lo, hi = _mean_ci(values)
    return [m, lo, hi, " ".join(f"{v:.3f}" for v in values)]
