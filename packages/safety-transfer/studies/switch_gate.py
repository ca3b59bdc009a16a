"""Gated safety switch: fine-tuned -> base mapping applied only at tokens a trigger probe flags.

Protocol: studies/switch-gate-protocol.md (committed before the run). Usage:

    OMP_NUM_THREADS=1 python packages/safety-transfer/studies/switch_gate.py --seed 2 --n-seeds 3 \
        --out packages/safety-transfer/results/switch-gate.json
    (--quick: 1 seed, short training; a smoke run whose numbers are not reported)
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import time
from pathlib import Path

import numpy as np
import torch
from icml25_shared.random import spawn
from icml25_shared.stats import t_interval

from safety_transfer import (
    AutoEncoderMapper,
    SafetySwitch,
    TriggerProbe,
    byte_tokenizer,
    collect_activations,
    collect_pairs,
    lm_loss,
    mapping_metrics,
    tiny_causal_lm,
    trigger_rate,
)
from safety_transfer.tasks import BACKDOOR, CODE_TRIGGER, INSECURE, TRIGGER, make_tasks, train_lm

LAYER = 1


def probe_data(model, tok, texts, layer):
    """Token activations labelled by whether a trigger precedes them (positions of a partial trigger dropped)."""
    acts = collect_activations(model, tok, texts, layer)
    keep, label = [], []
    for i, (t, p) in enumerate(zip(acts.text_index.tolist(), acts.position.tolist(), strict=True)):
        text = texts[t]
        trig = next((g for g in (TRIGGER, CODE_TRIGGER) if text.startswith(g)), None)
        if trig is None:
            keep.append(i)
            label.append(0)
        elif p >= len(trig) - 1:
            keep.append(i)
            label.append(1)
    idx = torch.tensor(keep)
    y = torch.tensor(label, dtype=torch.bool)
    v = acts.values[idx]
    return v[y], v[~y]


def run_seed(stream, quick):
    torch.set_num_threads(1)
    s_data, _s_src, s_base, _a, s_tr_base, s_tr_ft, _s_ae, s_sw, s_probe = spawn(stream, 9)
    steps = {"base": 15, "finetune": 30} if quick else {"base": 80, "finetune": 200}
    tok = byte_tokenizer()
    n_eval = 8 if quick else 32
    data = make_tasks(n_train=300 if quick else 1500, n_eval=n_eval, code=True, random_state=s_data)
    half = n_eval // 2
    trig, code_trig = data.triggered[half:], data.code_triggered[half:]
    clean_prompts, code_clean = data.clean_prompts[half:], data.code_clean[half:]
    t0 = time.perf_counter()
    base = tiny_causal_lm("qwen2", hidden_size=128, num_layers=4, random_state=s_base)
    train_lm(base, tok, data.clean_train, steps=steps["base"], random_state=s_tr_base)
    ft = copy.deepcopy(base)
    train_lm(ft, tok, data.poisoned_train, steps=steps["finetune"], lr=3e-3, random_state=s_tr_ft)
    out = {"steps": steps, "train_seconds": time.perf_counter() - t0, "layer": LAYER}
    fit_texts = data.poisoned_train[:300 if quick else 600]
    pairs = collect_pairs(ft, base, fit_texts, source_tokenizer=tok, source_layer=LAYER, target_layer=LAYER)
    mapper = AutoEncoderMapper(128, 128, epochs=3 if quick else 5, lr=1e-2, batch_size=128,
                               random_state=s_sw).fit(pairs)
    out["fvu"] = mapping_metrics(mapper, collect_pairs(ft, base, data.eval_text, source_tokenizer=tok,
                                                       source_layer=LAYER, target_layer=LAYER)).fvu
    pos, neg = probe_data(ft, tok, fit_texts, LAYER)
    probe = TriggerProbe(random_state=s_probe).fit(pos, neg)
    # probe on held-out tokens: clean eval windows (false positives), triggered test prompts (true positives)
    fp = probe(collect_activations(ft, tok, data.eval_text, LAYER).values).mean()
    tp_pos, _ = probe_data(ft, tok, trig + code_trig, LAYER)
    out["probe"] = {"n_pos": len(pos), "n_neg": len(neg), "false_positive_rate_clean_tokens": float(fp),
                    "true_positive_rate_triggered_tokens": float(probe(tp_pos).mean())}
    ft_loss, base_loss = lm_loss(ft, tok, data.eval_text), lm_loss(base, tok, data.eval_text)
    ids = tok(data.eval_text[:8], return_tensors="pt", padding=True, add_special_tokens=False)
    with torch.no_grad():
        before = ft(**ids).logits

    def measure(model, switch=None):
        from contextlib import nullcontext

        with switch if switch is not None else nullcontext():
            return {"backdoor_rate": trigger_rate(model, tok, trig, judge=BACKDOOR, max_new_tokens=12),
                    "backdoor_rate_clean_prompts": trigger_rate(model, tok, clean_prompts, judge=BACKDOOR,
                                                                max_new_tokens=12),
                    "code_insecure_rate": trigger_rate(model, tok, code_trig, judge=INSECURE, max_new_tokens=14),
                    "code_insecure_rate_clean_header": trigger_rate(model, tok, code_clean, judge=INSECURE,
                                                                    max_new_tokens=14),
                    "clean_loss": lm_loss(model, tok, data.eval_text)}

    conds = {"fine-tuned": measure(ft), "base": measure(base),
             "switch (every token)": measure(ft, SafetySwitch(base, ft, mapper, LAYER)),
             "switch gated by probe": measure(ft, SafetySwitch(base, ft, mapper, LAYER, gate=probe))}
    for c in conds.values():
        c["ppl_rise_vs_finetuned"] = math.exp(c["clean_loss"] - ft_loss) - 1
    with torch.no_grad():
        out["off_bitwise_equal"] = bool(torch.equal(ft(**ids).logits, before))
    out["ft_loss"], out["base_loss"], out["conditions"] = ft_loss, base_loss, conds
    out["seconds"] = time.perf_counter() - t0
    return out


def summary(seeds):
    rows = {}
    for name in seeds[0]["conditions"]:
        for key in ("backdoor_rate", "code_insecure_rate", "ppl_rise_vs_finetuned"):
            vals = np.array([s["conditions"][name][key] for s in seeds])
            ci = t_interval(vals) if len(vals) > 1 else None
            rows[f"{name}: {key}"] = {"mean": float(vals.mean()), "low": None if ci is None else float(ci.low),
                                      "high": None if ci is None else float(ci.high), "per_seed": vals.tolist()}
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--n-seeds", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    seeds = []
    for stream in spawn(a.seed, 1 if a.quick else a.n_seeds):
        seeds.append(run_seed(stream, a.quick))
        a.out.write_text(json.dumps({"seed": a.seed, "quick": a.quick, "torch": torch.__version__,
                                     "seeds": seeds, "summary": summary(seeds)}, indent=1))


if __name__ == "__main__":
    main()
