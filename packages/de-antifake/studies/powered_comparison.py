"""The powered comparison of ``powered_protocol.md``: per-seed runs and the pooled paired tests.

    OMP_NUM_THREADS=1 nice python packages/de-antifake/studies/powered_comparison.py --sizes powered --seeds 100-107
    python packages/de-antifake/studies/powered_comparison.py --summary

``--summary`` pools the seed files that exist, writes ``summary.json`` and ``summary.md`` beside them and
replaces the block between the README's ``powered`` markers with ``summary.md``.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np

PACKAGE = Path(__file__).resolve().parents[1]
OUT = PACKAGE / "results" / "powered"
README = PACKAGE / "README.md"
MARKERS = ("<!-- powered comparison: rendered from results/powered by studies/powered_comparison.py -->",
           "<!-- end of the powered comparison -->")
PAIRS_FOR_POWER = 235
"""Paired references for 80% power against a 0.10 difference (``powered_protocol.md``)."""
GROUPS = (("shipped", "A: shipped weights (stage 1 450 steps, guided refiner 150 steps)",
           ("PhonePuRe vs stage 1 (t=3)", "PhonePuRe vs AudioPure t=5")),
          ("refiner2000", "B: guided refiner trained 2000 steps on the shipped stage 1",
           ("PhonePuRe vs PhonePuRe, shuffled alignment",)))
"""Result folders under ``results/powered`` rendered into the README (amendment 5), in this order, each
with the tests it decides (the others are reported without a verdict)."""
COMPARISONS = (("PhonePuRe", "stage 1 (t=3)"), ("PhonePuRe", "AudioPure t=5"),
               ("PhonePuRe", "PhonePuRe, shuffled alignment"))


def mcnemar_exact(a: list[bool], b: list[bool]) -> dict:
    """Exact two-sided McNemar test of paired successes ``a`` vs ``b`` (binomial on the discordant pairs)."""
    from scipy.stats import binomtest

    a_only = sum(x and not y for x, y in zip(a, b, strict=True))
    b_only = sum(y and not x for x, y in zip(a, b, strict=True))
    n = a_only + b_only
    p = 1.0 if n == 0 else float(binomtest(a_only, n, 0.5).pvalue)
    return {"a_only": a_only, "b_only": b_only, "p": p}


def paired_t(a: list[float], b: list[float]) -> dict:
    """Paired t test of ``a - b``: mean difference, 95% interval and two-sided p."""
    from scipy.stats import t, ttest_rel

    d = np.asarray(a) - np.asarray(b)
    half = t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d)) if len(d) > 1 else float("nan")
    return {"mean_difference": float(d.mean()), "ci": [float(d.mean() - half), float(d.mean() + half)],
            "p": float(ttest_rel(a, b).pvalue) if len(d) > 1 else float("nan")}


def mcnemar_power(n: int, *, discordant: float = 0.25, difference: float = 0.10, alpha: float = 0.05) -> float:
    """Exact power of the two-sided exact McNemar test to find the first row higher at ``n`` pairs.

    Pairs are discordant with probability ``discordant``; the first row's success is higher by
    ``difference``. Sums over the binomial laws of the discordant count and the split (no simulation);
    amendment 1's 4000-draw simulation gave 0.26, 0.40, 0.53, 0.86 at 60, 90, 120, 240 pairs.
    """
    from scipy.stats import binom

    if not (0 < discordant <= 1 and 0 <= difference <= discordant and n >= 1):
        raise ValueError(f"mcnemar_power needs n >= 1, 0 < discordant <= 1 and 0 <= difference <= discordant; got "
                         f"n={n}, discordant={discordant}, difference={difference}")
    first = (discordant + difference) / 2 / discordant
    power = 0.0
    for d in range(1, n + 1):
        weight = binom.pmf(d, n, discordant)
        if weight < 1e-12:
            continue
        a = np.arange(d // 2 + 1, d + 1)
        reject = a[2 * binom.sf(a - 1, d, 0.5) < alpha]  # exact two-sided p of the symmetric binomial test
        power += weight * float(binom.pmf(reject, d, first).sum())
    return float(power)


def t_interval(values: list[float]) -> list[float]:
    """95% t-interval of the mean of ``values``."""
    from scipy.stats import t

    v = np.asarray(values, dtype=float)
    half = t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)) if len(v) > 1 else float("nan")
    return [float(v.mean() - half), float(v.mean() + half)]


def wilson(k: int, n: int) -> list[float]:
    """95% Wilson interval of ``k`` successes in ``n``."""
    z = 1.959963984540054
    centre = (k + z * z / 2) / (n + z * z)
    half = z * math.sqrt(k * (n - k) / n + z * z / 4) / (n + z * z)
    return [centre - half, centre + half]


def pool(runs: list[dict]) -> dict:
    """Pool per-reference outcomes over seeds and run the protocol's tests."""
    names = list(runs[0]["rows"])
    acc = {n: [a for r in runs for a in r["rows"][n]["accepted"]] for n in names}
    sims = {n: [s for r in runs for s in r["rows"][n]["sims"]] for n in names}
    out: dict = {"seeds": [r["seed"] for r in runs], "n_pairs": len(acc[names[0]]), "rows": {}, "tests": {}}
    for n in names:
        k = sum(acc[n])
        out["rows"][n] = {"success": k / len(acc[n]), "accepted": k, "success_ci": wilson(k, len(acc[n])),
                          "sim": float(np.mean(sims[n])), "sim_ci": t_interval(sims[n])}
    for a, b in COMPARISONS:
        if a in acc and b in acc:
            test = {"mcnemar": mcnemar_exact(acc[a], acc[b]), "sim_paired_t": paired_t(sims[a], sims[b])}
            if b == "PhonePuRe, shuffled alignment":  # the negative control: decided on SIM
                sim = test["sim_paired_t"]
                test["rule"] = "right alignment higher SIM, paired t p < 0.05"
                test["holds"] = bool(sim["mean_difference"] > 0 and sim["p"] < 0.05)
            else:
                mc = test["mcnemar"]
                test["rule"] = "PhonePuRe higher SV success, McNemar p < 0.05"
                test["holds"] = bool(mc["a_only"] > mc["b_only"] and mc["p"] < 0.05)
            out["tests"][f"{a} vs {b}"] = test
    return out


def _f(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}f}"


def _p(p: float) -> str:
    return f"{p:.2g}" if p >= 0.001 else f"{p:.1e}"


def _describe_weights(label: str) -> str:
    """A run's ``weights`` label; a folder trained by :func:`train_refiner` is described by its ``training.json``."""
    folder = Path(label) if Path(label).is_absolute() else PACKAGE / label
    training = folder / "training.json"
    if not training.is_file():
        return label
    t = json.loads(training.read_text())
    return (f"the shipped stage 1 and a guided refiner trained {t['steps']} steps on its outputs of "
            f"{t['training_clips']} clips (corpus seed {t['seed']}, {t['cpu_seconds'] / 60:.1f} CPU-minutes), "
            f"[{label}]({label})")


def render(runs: list[dict], summary: dict, decides: tuple[str, ...] | None = None) -> str:
    """The README block: what ran, success and SIM per row with 95% intervals, the tests and their verdicts.

    Only the tests named in ``decides`` (all when ``None``) get a verdict; the others read "reported".
    """
    sizes = dict(runs[0].get("sizes", {}))
    if any(r.get("weights", "").startswith(("the package's", "results/", "/")) for r in runs):
        sizes.pop("diffwave_steps", None)  # loaded weights: the seed's training sizes were not used
        sizes.pop("refiner_steps", None)
    n = summary["n_pairs"]
    done = [len(next(iter(r["rows"].values()))["accepted"]) for r in runs]
    cpu = sum(r.get("cpu_seconds", 0.0) for r in runs) / 60
    per_seed = ", ".join(f"{r['seed']}: {k}" + (f" of {r['n_references']}" if r.get("n_references", k) != k else "")
                         for r, k in zip(runs, done, strict=True))
    lines = [f"Ran: seeds {', '.join(map(str, summary['seeds']))} ({len(runs)} seed{'s' if len(runs) != 1 else ''}; references per seed "
             f"{per_seed}; {n} paired references); sizes: "
             + ", ".join(f"{k} {v}" for k, v in sizes.items())
             + "".join(sorted({f"; weights: {_describe_weights(r['weights'])}" for r in runs if "weights" in r}))
             + f"; {cpu:.1f} CPU-minutes in all."]
    if n < PAIRS_FOR_POWER:
        lines += [f"Underpowered: the protocol's {PAIRS_FOR_POWER} pairs were not reached (McNemar power "
                  f"{mcnemar_power(n):.2f} for a 0.10 difference at {n} pairs), so a McNemar p >= 0.05 is no "
                  "evidence of equality."]
    lines += ["", "| reference | SV success [Wilson 95%] | SIM of clones [t 95%] |", "|---|---|---|"]
    for name, row in summary["rows"].items():
        lo, hi = row["success_ci"]
        slo, shi = row["sim_ci"]
        lines.append(f"| {name} | {_f(row['success'])} ({row['accepted']}/{n}) [{_f(lo)}, {_f(hi)}] | "
                     f"{_f(row['sim'], 4)} [{_f(slo, 4)}, {_f(shi, 4)}] |")
    def verdict(name: str, test: dict) -> str:
        if decides is not None and name not in decides:
            return "reported"
        return "holds" if test["holds"] else "does not hold"

    lines += ["", "| comparison | discordant (first only / second only) | McNemar p | SIM difference [95%] | "
              "paired t p | rule | verdict |", "|---|---|---|---|---|---|---|"]
    for name, test in summary["tests"].items():
        mc, sim = test["mcnemar"], test["sim_paired_t"]
        lines.append(f"| {name} | {mc['a_only']} / {mc['b_only']} | {_p(mc['p'])} | "
                     f"{sim['mean_difference']:+.4f} [{sim['ci'][0]:+.4f}, {sim['ci'][1]:+.4f}] | {_p(sim['p'])} | "
                     f"{test['rule']} | {verdict(name, test)} |")
    return "\n".join(lines) + "\n"


def replace_block(text: str, block: str) -> str:
    """``text`` with the part between :data:`MARKERS` replaced by ``block``."""
    start, end = MARKERS
    head, found, rest = text.partition(start)
    _, found_end, tail = rest.partition(end)
    if not found or not found_end:
        raise ValueError(f"the README has no {start!r} ... {end!r} block")
    return f"{head}{start}\n{block}{end}{tail}"


CONTROL_ROWS = ("clean reference", "stage 1 (t=3)", "PhonePuRe", "PhonePuRe, shuffled alignment")
"""The rows of the trained-refiner group (amendment 5): the trivial-regime check, stage 1 and both alignments."""

INCREMENTAL_ROWS = ("clean reference", "protected (none)", "AudioPure t=5", "stage 1 (t=3)", "PhonePuRe",
                    "PhonePuRe, shuffled alignment")
"""The rows of :func:`run_seed_incremental`: those the tests compare, the clean and protected references."""


def _weights_label(weights: Path | None) -> str:
    from de_antifake.weights import shipped_weights

    if weights is None:
        return "stage 1 and refiners trained on each seed's corpus"
    if Path(weights).resolve() == shipped_weights().resolve():
        return "the package's shipped weights (reproduce --quick, seed 0), not retrained"
    return str(weights)


def run_seed_incremental(seed: int, sizes, path: Path, *, weights: Path | None = None, stop=None,
                         rows: tuple[str, ...] = INCREMENTAL_ROWS) -> dict:
    """One seed, reference by reference: the JSON at ``path`` is rewritten after every reference.

    Corpus, SV, cloner, protection and training are those of ``run_chain(seed, sizes)``; then each
    reference is purified by every row and cloned before the next one starts, so a stopped run keeps its
    finished references (paired across rows). The evaluation noise is drawn in this order, so its numbers
    are not ``run_chain``'s. With ``weights`` (a folder of ``de_antifake.WEIGHT_FILES``), stage 1 and the
    guided refiner are loaded from it instead of being trained on the seed's corpus. ``stop`` (a callable
    without arguments) is asked after every reference; when it returns true the seed ends there, marked
    ``"stopped": true`` (a clock or CPU-budget rule, never an outcome). ``rows`` (a subset of
    :data:`INCREMENTAL_ROWS`, in that order) are the rows evaluated.
    """
    unknown = set(rows) - set(INCREMENTAL_ROWS)
    if unknown:
        raise ValueError(f"run_seed_incremental: rows must be among {INCREMENTAL_ROWS}, got {sorted(unknown)}")
    import time

    from de_antifake.clone import embed_batch
    from de_antifake.corpus import WORDS
    from de_antifake.diffusion import DiffWavePurifier
    from de_antifake.experiments import CLONE_WORDS, STAGE1_PEAK, _models, protected_references
    from de_antifake.refiner import PhonePuRe

    start, cpu = time.perf_counter(), time.process_time()
    c = protected_references(seed, sizes)
    corpus, lab, refs, wavs, enc = c.corpus, c.labels, c.refs, c.wavs, c.encoder
    if weights is None:
        dw, guided, _ = _models(corpus, c.enrol, c.r_train, sizes)
        stage1 = DiffWavePurifier(dw, t=3, peak=STAGE1_PEAK, random_state=c.r_eval)
    else:
        from de_antifake.weights import load_weights

        stage1, guided, _ = load_weights(weights, random_state=c.r_eval)
    audiopure = DiffWavePurifier(stage1.model, schedule=stage1.schedule, t=5, peak=STAGE1_PEAK, random_state=c.r_eval)
    pipeline = PhonePuRe(stage1, guided)
    words = [list(c.r_eval.choice(WORDS, CLONE_WORDS, replace=False)) for _ in refs]
    clone_seeds = np.random.SeedSequence([seed, 7]).spawn(len(refs))
    record: dict = {"seed": seed, "sizes": sizes.__dict__, "incremental": True, "n_references": len(refs),
                    "weights": _weights_label(weights),
                    "threshold": float(c.verifier.threshold_), "eer": float(c.verifier.eer_),
                    "training_cpu_seconds": time.process_time() - cpu,
                    "rows": {n: {"accepted": [], "sims": []} for n in rows}}
    for j, i in enumerate(refs):
        x = c.protected[j]
        shuffled = corpus.utterances[int(refs[(j + 1) % len(refs)])].alignment  # the next reference's
        right = corpus.utterances[int(i)].alignment

        def hear(name: str, clean=wavs[i], x=x, right=right, shuffled=shuffled):
            if name == "clean reference":
                return clean
            if name == "protected (none)":
                return x
            if name == "AudioPure t=5":
                return audiopure.purify(x, 16000)
            if name == "stage 1 (t=3)":
                return stage1.purify(x, 16000)
            return pipeline.purify(x, 16000, alignment=right if name == "PhonePuRe" else shuffled)

        for name in rows:
            w = hear(name)
            e = embed_batch(enc, w[None])[0]
            clone = c.cloner.clone_from_embedding(e, words[j], random_state=np.random.default_rng(clone_seeds[j]))
            ce = embed_batch(enc, clone[None])
            record["rows"][name]["accepted"].append(bool(c.verifier.accept(ce, lab[[i]])[0]))
            record["rows"][name]["sims"].append(float(c.verifier.scores(ce, lab[[i]])[0]))
        record.update(n_done=j + 1, complete=j + 1 == len(refs), seconds=time.perf_counter() - start,
                      cpu_seconds=time.process_time() - cpu)
        stopping = stop is not None and j + 1 < len(refs) and stop()
        if stopping:
            record["stopped"] = True
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=1) + "\n")
        tmp.replace(path)
        if stopping:
            break
    return record


def train_refiner(seed: int, steps: int, folder: Path) -> dict:
    """Train a guided refiner for ``steps`` on the shipped stage 1 and write a weights folder (amendment 5).

    The training corpus is ``make_corpus`` at ``POWERED_QUICK`` sizes (30 speakers x 6 utterances of 2 s)
    from ``seed``; its 150 non-reference utterances and their shipped-stage-1 purifications at t = 5 (after
    0.005 white noise) are the training pairs, exactly as ``experiments._models`` builds them. Stage 1 and
    the unguided refiner of the folder are the shipped files, copied.
    """
    import shutil
    import time

    from de_antifake.corpus import make_corpus
    from de_antifake.diffusion import DiffWavePurifier
    from de_antifake.experiments import POWERED_QUICK, STAGE1_PEAK, _coverage
    from de_antifake.phoneme import PhonemeSpectra
    from de_antifake.refiner import PhonemeGuidedRefiner, save_refinement_ckpt
    from de_antifake.weights import WEIGHT_FILES, load_weights, shipped_weights

    start, cpu = time.perf_counter(), time.process_time()
    sizes = POWERED_QUICK
    r_corpus, r_train = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    corpus = make_corpus(n_speakers=sizes.n_speakers, n_utterances=sizes.n_utterances, seconds=2.0,
                         random_state=int(r_corpus.integers(2**31)))
    enrol = np.array([i for i in range(len(corpus.labels)) if i % sizes.n_utterances != 0])
    w = corpus.waveforms()[enrol]
    stage1, _, _ = load_weights(shipped_weights(), random_state=r_train)
    noisy = w + 0.005 * r_train.standard_normal(w.shape).astype(np.float32)
    t5 = DiffWavePurifier(stage1.model, schedule=stage1.schedule, t=5, peak=STAGE1_PEAK, random_state=r_train)
    y = np.stack([t5.purify(x, 16000) for x in noisy])
    align = [corpus.utterances[i].alignment for i in enrol]
    spectra = PhonemeSpectra().fit([*zip(w, align, strict=True), *_coverage(corpus, enrol, r_train)])
    guided = PhonemeGuidedRefiner(use_text=True, channels=8, layers=3, N=sizes.refiner_N, random_state=r_train).fit(
        w, y, alignments=align, spectra=spectra, steps=steps)
    folder.mkdir(parents=True, exist_ok=True)
    for name in WEIGHT_FILES:
        if name != "refinement.ckpt":
            shutil.copyfile(shipped_weights() / name, folder / name)
    save_refinement_ckpt(guided, folder / "refinement.ckpt")
    record = {"seed": seed, "steps": steps, "training_clips": len(w), "seconds": time.perf_counter() - start,
              "cpu_seconds": time.process_time() - cpu}
    (folder / "training.json").write_text(json.dumps(record, indent=1) + "\n")
    return record


def _seeds(text: str) -> list[int]:
    """``"100-103"``, ``"3"`` or a comma list of either (``"100,104"``), in the order given."""
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def _stop_rule(stop_at: str | None, cpu_budget_min: float | None):
    """A callable that is true once the UTC clock passes ``stop_at`` ("HH:MM") or this process's CPU time
    passes ``cpu_budget_min`` minutes; ``None`` when neither is given. Outcomes play no part in it."""
    import datetime
    import time

    if stop_at is None and cpu_budget_min is None:
        return None
    until = None
    if stop_at is not None:
        hour, minute = map(int, stop_at.split(":"))
        now = datetime.datetime.now(datetime.timezone.utc)
        until = now.replace(hour=hour, minute=minute, second=0, microsecond=0)

    def stop() -> bool:
        late = until is not None and datetime.datetime.now(datetime.timezone.utc) >= until
        spent = cpu_budget_min is not None and time.process_time() >= 60 * cpu_budget_min
        return late or spent

    return stop


def summarise(out: Path, *, write: bool = True, readme: bool = True) -> str:
    """Pool each folder of :data:`GROUPS` that holds seeds and return the block of all of them; with
    ``write`` also store each folder's ``summary.json`` / ``summary.md``, with ``readme`` put the block in
    the README."""
    blocks = []
    for name, label, decides in GROUPS:
        runs = [json.loads(p.read_text()) for p in sorted((out / name).glob("seed*.json"))]
        if not runs:
            continue
        res = pool(runs)
        block = render(runs, res, decides)
        if write:
            (out / name / "summary.json").write_text(json.dumps(res, indent=1) + "\n")
            (out / name / "summary.md").write_text(block)
        blocks.append(f"**{label}** ([JSON](results/powered/{name}/)).\n{block}")
    if not blocks:
        raise SystemExit(f"no seed*.json under {out}/{{{','.join(g[0] for g in GROUPS)}}}: no seed has finished")
    text = "\n".join(blocks)
    if readme:
        README.write_text(replace_block(README.read_text(), text))
    return text


def main(argv: list[str] | None = None) -> int:
    """Run seeds (one JSON each) or print the pooled summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", choices=("quick", "full", "powered", "powered-quick"), default="powered")
    parser.add_argument("--seeds", default="100-107")
    parser.add_argument("--shuffled", action="store_true", help="add the shuffled-alignment control to quick/full")
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--incremental", action="store_true",
                        help="write each seed's JSON after every reference (a stopped run keeps its rows)")
    parser.add_argument("--weights", default=None,
                        help="with --incremental: a weights folder, or 'shipped', instead of training per seed")
    parser.add_argument("--train-refiner", type=int, default=None, metavar="STEPS",
                        help="first train a guided refiner for STEPS on the shipped stage 1 into --weights")
    parser.add_argument("--train-seed", type=int, default=99, help="corpus seed of --train-refiner")
    parser.add_argument("--stop-at", default=None, metavar="HH:MM", help="UTC time after which no reference starts")
    parser.add_argument("--cpu-budget", type=float, default=None, metavar="MIN",
                        help="CPU minutes of this process after which no reference starts")
    parser.add_argument("--control-rows", action="store_true",
                        help="with --incremental: only the rows of CONTROL_ROWS")
    parser.add_argument("--summary", action="store_true")
    parser.add_argument("--readme", action=argparse.BooleanOptionalAction, default=True,
                        help="with --summary: also replace the README block (default)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if args.summary:
        print(summarise(out, readme=args.readme))
        return 0
    import torch

    from de_antifake.experiments import FULL, POWERED, POWERED_QUICK, ChainSizes, run_chain

    torch.set_num_threads(1)
    sizes = {"quick": ChainSizes(), "full": FULL, "powered": POWERED, "powered-quick": POWERED_QUICK}[args.sizes]
    if args.shuffled:
        sizes = replace(sizes, shuffled_control=True)
    out.mkdir(parents=True, exist_ok=True)
    stop = _stop_rule(args.stop_at, args.cpu_budget)
    weights = None
    if args.weights is not None:
        from de_antifake.weights import shipped_weights

        weights = shipped_weights() if args.weights == "shipped" else Path(args.weights)
    if args.train_refiner is not None:
        if weights is None or args.weights == "shipped":
            raise SystemExit("--train-refiner needs --weights FOLDER (where the trained weights go)")
        if not (weights / "training.json").is_file():
            train_refiner(args.train_seed, args.train_refiner, weights)
    for seed in _seeds(args.seeds):
        if stop is not None and stop():
            break
        if args.incremental:
            record = run_seed_incremental(seed, sizes, out / f"seed{seed}.json", weights=weights, stop=stop,
                                          rows=CONTROL_ROWS if args.control_rows else INCREMENTAL_ROWS)
            if record.get("stopped"):
                break
            continue
        res = run_chain(seed, sizes)
        res["sizes"] = sizes.__dict__
        (out / f"seed{seed}.json").write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
