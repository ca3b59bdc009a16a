"""The ``demo`` and ``reproduce`` commands.

``demo`` re-scores the official WQA-Real answers of WMarkGPT-7B and Qwen2-VL-7B shipped with the
repository checkout (``packages/wmarkgpt/tests/data``, or the folder in ``WMARKGPT_DATA``) with this
package's metrics, recomputes the visibility correlation from the stored logits, and draws a grid of
generated watermarks. ``reproduce`` runs the three-stage curriculum on a tiny model: the S1/S2/S3
ablation on the stage-3 test set, a stage-3-only baseline, the visibility-score correlation on the
synthetic test set and full-reference PSNR/SSIM baselines.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from icml25_shared.cli import RunContext

__all__ = ["TOWER", "CurriculumSettings", "demo", "find_data_dir", "reproduce", "run_curriculum", "shipped_evaluation"]

PAPER_REAL = {"WMarkGPT-7B": {"BLEU-1": 0.424, "ROUGE-L": 0.418, "LLM x25": 71.95, "ACC": 0.550},
              "Qwen2-VL-7B": {"BLEU-1": 0.328, "ROUGE-L": 0.289, "LLM x25": 24.45, "ACC": 0.156}}
"""The official tables' numbers (recomputed from the shipped per-item files)."""

from wmarkgpt.data import _FILES, find_data_dir  # noqa: E402  (re-exported: the shipped official files)


def shipped_evaluation(folder: Path | None = None) -> dict[str, Any]:
    """Re-score the shipped WQA-Real answers and recompute the visibility correlations.

    Parameters
    ----------
    folder : pathlib.Path, optional
        Data folder (default :func:`find_data_dir`).

    Returns
    -------
    dict
        Per model: means, the stored means, the largest per-item difference from the stored BLEU-1 and
        ROUGE-L; per split: SRCC, PLCC and the largest recomputation error of ``predict_score``.
    """
    from wmarkgpt.data import read_qscore, read_results, read_wqa
    from wmarkgpt.metrics import correlation, evaluate_answers
    from wmarkgpt.scoring import predict_score

    folder = folder or find_data_dir()
    labels = read_wqa(folder / _FILES["labels"])
    out: dict[str, Any] = {"models": {}, "visibility": {}}
    for model in ("WMarkGPT-7B", "Qwen2-VL-7B"):
        answers_file, result_file = _FILES[model]
        ev = evaluate_answers(labels, read_wqa(folder / answers_file))
        stored = read_results(folder / result_file)
        llm = float(np.mean([stored[k]["LLM_SCORE"] for k in stored])) * 25
        out["models"][model] = {
            "BLEU-1": ev.bleu_1, "ROUGE-L": ev.rouge_l, "LLM x25 (stored)": llm,
            "judge fallbacks (stored 2.5)": int(sum(stored[k]["LLM_SCORE"] == 2.5 for k in stored)),
            "ACC substring": ev.acc_substring, "ACC exact": ev.acc_exact, "n": ev.n,
            "max |BLEU-1 - stored|": max(abs(ev.items[k].bleu_1 - stored[k]["BLEU_1"]) for k in stored),
            "max |ROUGE-L - stored|": max(abs(ev.items[k].rouge_l - stored[k]["ROUGE_L"]) for k in stored)}
    for split in ("real", "synthetic"):
        path = folder / _FILES[f"qscore-{split}"]
        if not path.is_file():
            continue
        q = read_qscore(path)
        pred = [float(predict_score(v["logits"])) for v in q.values()]
        c = correlation(pred, [v["gt_score"] for v in q.values()])
        out["visibility"][split] = {"SRCC": c.srcc, "PLCC": c.plcc, "n": c.n,
                                    "max |score - stored|": max(abs(p - v["predict_score"])
                                                                for p, v in zip(pred, q.values(), strict=True))}
    return out


def _grid_png(ctx: RunContext, seed: int) -> None:
    import matplotlib.pyplot as plt

    from wmarkgpt.data import embed_watermark, make_logo, make_scene

    rng = np.random.default_rng(seed)
    scene = make_scene(size=64, n_objects=3, random_state=rng)
    logo, mask = make_logo("star", 24, color=(255, 255, 255))
    weights = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25)
    fig, axes = plt.subplots(1, len(weights), figsize=(2 * len(weights), 2.3))
    for ax, w in zip(axes, weights, strict=True):
        wm = embed_watermark(scene.image, logo, mask, weight=w, position=(30, 8))
        ax.imshow(wm.image)
        ax.set_title(f"w={w:.2f}\n{wm.visibility} ({wm.gt_score})", fontsize=8)
        ax.axis("off")
    ctx.save_figure(fig)


def demo(ctx: RunContext) -> None:
    """Re-score the shipped official answers (table + JSON) and draw generated watermarks (PNG).

    Parameters
    ----------
    ctx : RunContext
        Output folder and seed.
    """
    res = shipped_evaluation()
    rows = []
    for model, m in res["models"].items():
        paper = PAPER_REAL[model]
        rows.append([model, m["BLEU-1"], paper["BLEU-1"], m["ROUGE-L"], paper["ROUGE-L"], m["LLM x25 (stored)"],
                     m["ACC substring"], m["ACC exact"], paper["ACC"]])
    ctx.write_table(rows, headers=["model", "BLEU-1", "official", "ROUGE-L", "official", "LLM x25 (stored)",
                                   "ACC substring", "ACC exact", "official ACC"])
    ctx.write_json(res)
    _grid_png(ctx, ctx.seed)


@dataclass(frozen=True)
class CurriculumSettings:
    """Sizes of the tiny curriculum run.

    Attributes
    ----------
    image_size : int
        Image side.
    n_position, n_synthetic, n_real : int
        Training items of stages 1, 2 and 3.
    n_test : int
        Test items per test set.
    epochs : tuple of 3 int
        Epochs of stages 1, 2 and 3 (the stage-3-only run uses the third).
    batch_size : int
        Items per step.
    lr : float
        AdamW learning rate.
    short_answer_rate : float
        Share of visibility-only questions in the stage-2 and stage-3 training items.
    hidden_size, vision_hidden_size, num_learnable_queries, patch_size : int
        Tiny model sizes.
    conv_stem : tuple of int or None
        Widths of the convolutional stem of the vision tower (None: the linear patch embedding).
    n_stage0, stage0_epochs : int
        Stage 0: synthetic items and epochs of the tower's supervised pre-training (0 items: none).
    aux_weight : float
        Weight of the auxiliary visual loss kept in stages 1-3 (0: none).
    """

    image_size: int = 32
    n_position: int = 1200
    n_synthetic: int = 1600
    n_real: int = 300
    n_test: int = 150
    epochs: tuple[int, int, int] = (3, 4, 6)
    batch_size: int = 16
    lr: float = 2e-3
    short_answer_rate: float = 0.5
    hidden_size: int = 64
    vision_hidden_size: int = 32
    num_learnable_queries: int = 8
    patch_size: int = 4
    conv_stem: tuple[int, ...] | None = None
    n_stage0: int = 0
    stage0_epochs: int = 6
    aux_weight: float = 0.0


TOWER = CurriculumSettings(conv_stem=(32, 64, 64, 96), n_stage0=3000, stage0_epochs=10, aux_weight=1.0)
"""The second protocol (``studies/tower_protocol.md``): the convolutional tower, stage 0 and the auxiliary
head kept in stages 1-3; everything else as the defaults (the first protocol)."""


def _normalise(text: str, tokenizer: Any) -> str:
    return tokenizer.decode(tokenizer(text, add_special_tokens=False).input_ids, skip_special_tokens=True).strip()


def run_curriculum(settings: CurriculumSettings, *, seed: int, checkpoint_dir: str | Path | None = None,
                   ) -> dict[str, Any]:
    """Train the full curriculum and a stage-3-only model from one seed and evaluate both.

    Parameters
    ----------
    settings : CurriculumSettings
        Sizes.
    seed : int
        Root seed: data, initialisation and shuffling streams are spawned from it.
    checkpoint_dir : str or path, optional
        Where the per-stage checkpoints go.

    Returns
    -------
    dict
        Position exact match, stage-3 test BLEU-1 / ROUGE-L / ACC after S1, S2, S3 and for the stage-3-only
        model, visibility-score SRCC/PLCC on the synthetic and real-style test sets, PSNR/SSIM baselines,
        wall times.
    """
    import torch

    from wmarkgpt.analyzer import WatermarkAnalyzer, parse_visibility
    from wmarkgpt.data import DESCRIBE_QUESTION, make_position_dataset, make_real_style_dataset, make_synthetic_dataset
    from wmarkgpt.metrics import bleu1, correlation, rouge_l, visibility_accuracy
    from wmarkgpt.modeling import WMarkGPTForCausalLM, tiny_config
    from wmarkgpt.processing import build_image_processor, build_word_tokenizer, preprocess_images
    from wmarkgpt.training import pretrain_vision, train_stage

    s = settings
    streams = np.random.SeedSequence(seed).spawn(14)
    rngs = [np.random.default_rng(x) for x in streams]
    t0 = time.perf_counter()
    size = s.image_size
    pos_train = make_position_dataset(s.n_position, size=size, random_state=rngs[0])
    syn_train = make_synthetic_dataset(s.n_synthetic, size=size, short_answer_rate=s.short_answer_rate,
                                       random_state=rngs[1])
    real_train = make_real_style_dataset(s.n_real, size=size, short_answer_rate=s.short_answer_rate,
                                         random_state=rngs[2])
    pos_test = make_position_dataset(s.n_test, size=size, random_state=rngs[3])
    syn_test = make_synthetic_dataset(s.n_test, size=size, short_answer_rate=0.0, random_state=rngs[4])
    real_test = make_real_style_dataset(s.n_test, size=size, short_answer_rate=0.0, random_state=rngs[5])
    corpus = [x.question + " " + x.answer for x in pos_train + syn_train + real_train]
    tok = build_word_tokenizer(corpus, extra_words=["USER: ASSISTANT:", "invisible faint moderate visible obvious"])
    proc = build_image_processor(size)
    aux = s.n_stage0 > 0 or s.aux_weight > 0
    cfg = tiny_config(vocab_size=len(tok), hidden_size=s.hidden_size, image_size=size, patch_size=s.patch_size,
                      vision_hidden_size=s.vision_hidden_size, num_learnable_queries=s.num_learnable_queries,
                      conv_stem=s.conv_stem, aux_head=aux, pad_token_id=tok.pad_token_id,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    tower: dict[str, Any] | None = None
    out: dict[str, Any] = {"seed": seed, "settings": asdict(s), "vocab": len(tok)}
    if s.n_stage0 > 0:
        # stage 0: the vision tower and auxiliary head learn visibility and the box on fresh synthetic items;
        # the curriculum and the stage-3-only model both start from this tower
        pre = _initialised(cfg, rngs[12])
        stage0_items = make_synthetic_dataset(s.n_stage0, size=size, random_state=rngs[12])
        r_pre = pretrain_vision(pre, stage0_items, image_processor=proc, epochs=s.stage0_epochs,
                                random_state=rngs[13])
        tower = {k: v.clone() for k, v in pre.state_dict().items()
                 if k.startswith(("model.vision_model.", "visual_aux_head."))}
        with torch.no_grad():
            aux_score = pre.visual_aux(preprocess_images([x.image for x in syn_test], proc))[:, 0].double().numpy()
        c0 = correlation(aux_score, np.array([x.gt_score for x in syn_test], dtype=float))
        out["stage0"] = {"seconds": r_pre.seconds, "losses": r_pre.losses, "aux_head_synthetic_SRCC": c0.srcc,
                         "aux_head_synthetic_PLCC": c0.plcc}

    def fresh(stream: np.random.Generator) -> WMarkGPTForCausalLM:
        model = _initialised(cfg, stream)
        if tower is not None:
            model.load_state_dict(tower, strict=False)
        return model

    def text_eval(model: WMarkGPTForCausalLM) -> dict[str, float]:
        an = WatermarkAnalyzer(model, tok, proc, max_new_tokens=80)
        preds = an.generate([x.image for x in real_test], DESCRIBE_QUESTION)
        refs = [_normalise(x.answer, tok) for x in real_test]
        vis = [parse_visibility(p) or "" for p in preds]
        labels = [str(x.visibility) for x in real_test]
        return {"BLEU-1": float(np.mean([bleu1(p, r) for p, r in zip(preds, refs, strict=True)])),
                "ROUGE-L": float(np.mean([rouge_l(p, r) if p.strip() else 0.0 for p, r in zip(preds, refs, strict=True)])),
                "ACC exact": visibility_accuracy(labels, vis, mode="exact"),
                "ACC substring": visibility_accuracy(labels, vis, mode="substring")}

    syn_test_gt = np.array([x.gt_score for x in syn_test], dtype=float)
    syn_test_pixels = preprocess_images([x.image for x in syn_test], proc)

    def aux_srcc(model: WMarkGPTForCausalLM) -> float | None:
        """SRCC of the auxiliary head's visibility output on the synthetic test set (what the tower sees)."""
        if model.visual_aux_head is None:
            return None
        with torch.no_grad():
            return correlation(model.visual_aux(syn_test_pixels)[:, 0].double().numpy(), syn_test_gt).srcc

    stage2_curve: list[dict[str, Any]] = []

    def track_stage2(epoch: int, model: torch.nn.Module) -> None:
        # evaluation only (no draw from any stream): the stage trains as without it
        an = WatermarkAnalyzer(model, tok, proc, max_new_tokens=1)  # type: ignore[arg-type]
        c = correlation(an.visibility_score([x.image for x in syn_test]), syn_test_gt)
        stage2_curve.append({"epoch": epoch, "SRCC": c.srcc, "PLCC": c.plcc,
                             "aux_head_SRCC": aux_srcc(model)})  # type: ignore[arg-type]

    def score_eval(model: WMarkGPTForCausalLM, items: list) -> dict[str, float]:
        an = WatermarkAnalyzer(model, tok, proc, max_new_tokens=80)
        sc = an.visibility_score([x.image for x in items])
        c = correlation(sc, [x.gt_score for x in items])
        syn_vis = [parse_visibility(t) or "" for t in an.generate([x.image for x in items], DESCRIBE_QUESTION)]
        return {"SRCC": c.srcc, "PLCC": c.plcc,
                "ACC exact": visibility_accuracy([str(x.visibility) for x in items], syn_vis, mode="exact")}

    model = fresh(rngs[6])
    stage_args = {"tokenizer": tok, "image_processor": proc, "batch_size": s.batch_size, "lr": s.lr,
                  "checkpoint_dir": checkpoint_dir, "aux_weight": s.aux_weight}
    r1 = train_stage(model, pos_train, stage=1, epochs=s.epochs[0], random_state=rngs[7], **stage_args)
    an = WatermarkAnalyzer(model, tok, proc, max_new_tokens=6)
    hits = [an.generate([x.image], x.question)[0] == _normalise(x.answer, tok) for x in pos_test]
    out["position_exact_match"] = float(np.mean(hits))
    out["S1"] = text_eval(model)
    r2 = train_stage(model, syn_train, stage=2, epochs=s.epochs[1], random_state=rngs[8], on_epoch_end=track_stage2,
                     **stage_args)
    out["S2"] = text_eval(model)
    out["S2_synthetic_visibility"] = score_eval(model, syn_test)
    out["S2_per_epoch"] = stage2_curve
    out["S2_aux_head_synthetic_SRCC"] = aux_srcc(model)
    r3 = train_stage(model, real_train, stage=3, epochs=s.epochs[2], random_state=rngs[9], **stage_args)
    out["S3"] = text_eval(model)
    out["S3_synthetic_visibility"] = score_eval(model, syn_test)
    out["S3_real_visibility"] = score_eval(model, real_test)
    out["S3_aux_head_synthetic_SRCC"] = aux_srcc(model)
    only = fresh(rngs[10])
    r0 = train_stage(only, real_train, stage=3, epochs=s.epochs[2], random_state=rngs[11],
                     **{**stage_args, "checkpoint_dir": None})
    out["stage3_only"] = text_eval(only)
    out["train_seconds"] = {"S1": r1.seconds, "S2": r2.seconds, "S3": r3.seconds, "stage3_only": r0.seconds}
    out["final_losses"] = {"S1": r1.losses[-1], "S2": r2.losses[-1], "S3": r3.losses[-1], "stage3_only": r0.losses[-1]}
    out["full_reference_baselines"] = _full_reference(syn_test_seed=streams[4], n=s.n_test, size=size)
    out["seconds"] = time.perf_counter() - t0
    return out


def _initialised(cfg: Any, stream: np.random.Generator) -> Any:
    """A fresh tiny model whose initial weights come from ``stream``; the caller's global torch RNG is untouched."""
    import torch

    from wmarkgpt.modeling import WMarkGPTForCausalLM

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(stream.integers(2**31)))
        return WMarkGPTForCausalLM(cfg)


def _full_reference(*, syn_test_seed: np.random.SeedSequence, n: int, size: int) -> dict[str, float]:
    """PSNR and SSIM of the watermarked synthetic test images against their covers, correlated with gt_score."""
    from wmarkgpt.data import embed_watermark, make_logo, make_scene
    from wmarkgpt.metrics import correlation

    rng = np.random.default_rng(syn_test_seed.spawn(1)[0])
    psnr, ssim, gt = [], [], []
    for _ in range(n):
        scene = make_scene(size=size, n_objects=2, random_state=rng)
        logo, mask = make_logo(str(rng.choice(["star", "ring", "cross", "diamond"])),
                               int(rng.integers(size // 3, size // 2 + 1)))
        wm = embed_watermark(scene.image, logo, mask, weight=float(np.round(rng.uniform(0.0, 0.25), 2)),
                             random_state=rng)
        psnr.append(_psnr(scene.image, wm.image))
        ssim.append(_ssim(scene.image, wm.image))
        gt.append(wm.gt_score)
    c_psnr = correlation(np.minimum(psnr, 100.0), gt)
    c_ssim = correlation(ssim, gt)
    return {"PSNR SRCC": c_psnr.srcc, "SSIM SRCC": c_ssim.srcc, "PSNR PLCC": c_psnr.plcc, "SSIM PLCC": c_ssim.plcc}


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


def _ssim(a: np.ndarray, b: np.ndarray) -> float:
    """Global-statistics SSIM on the grey image (constants of Wang et al. 2004)."""
    x = a.astype(np.float64).mean(-1)
    y = b.astype(np.float64).mean(-1)
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    mx, my = x.mean(), y.mean()
    vx, vy, cov = x.var(), y.var(), ((x - mx) * (y - my)).mean()
    return float((2 * mx * my + c1) * (2 * cov + c2) / ((mx**2 + my**2 + c1) * (vx + vy + c2)))


def reproduce(ctx: RunContext) -> None:
    """The tiny three-stage curriculum: writes JSON, a table beside the paper's claims, and a PNG.

    Parameters
    ----------
    ctx : RunContext
        Output folder, seed and the quick flag (quick: the default sizes; full: twice the training items).
    """
    import torch

    torch.set_num_threads(1)
    settings = CurriculumSettings() if ctx.quick else CurriculumSettings(n_position=2400, n_synthetic=3200,
                                                                          n_real=300, n_test=300)
    res = run_curriculum(settings, seed=ctx.seed)
    ctx.write_json(res)
    rows = [["position exact match (S1)", res["position_exact_match"], ">= 0.8 (target)"],
            ["stage-3 BLEU-1 after S1", res["S1"]["BLEU-1"], "S1 < S2 < S3 (ablation)"],
            ["stage-3 BLEU-1 after S2", res["S2"]["BLEU-1"], ""],
            ["stage-3 BLEU-1 after S3", res["S3"]["BLEU-1"], ""],
            ["stage-3 BLEU-1, stage-3 only", res["stage3_only"]["BLEU-1"], "< full curriculum"],
            ["stage-3 ACC exact after S3", res["S3"]["ACC exact"], ">= 0.6 (target)"],
            ["stage-3 ACC exact, stage-3 only", res["stage3_only"]["ACC exact"], "< full curriculum"],
            ["synthetic SRCC of visibility_score (S2)", res["S2_synthetic_visibility"]["SRCC"], "0.941 (7B, official)"],
            ["synthetic PLCC of visibility_score (S2)", res["S2_synthetic_visibility"]["PLCC"], "0.938 (7B, official)"],
            ["synthetic SRCC, PSNR vs gt_score (needs the cover)", res["full_reference_baselines"]["PSNR SRCC"], ""],
            ["synthetic SRCC, SSIM vs gt_score (needs the cover)", res["full_reference_baselines"]["SSIM SRCC"], ""]]
    ctx.write_table(rows, headers=["quantity", "measured", "paper / target"])
    ctx.save_figure(reproduce_figure(res))


def reproduce_figure(res: dict[str, Any]) -> Any:
    """Stage-3 test BLEU-1 after each curriculum stage and of the stage-3-only model (a ``run_curriculum`` result)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3))
    names = ["S1", "S2", "S3", "stage3_only"]
    ax.bar(["after S1", "after S2", "after S3", "stage 3 only"], [res[n]["BLEU-1"] for n in names])
    ax.set_xlabel("model")
    ax.set_ylabel("stage-3 test BLEU-1")
    fig.tight_layout()
    return fig
