"""``demo`` and ``reproduce``: FineXtract vs the CFG baseline on personalised tiny digit models (CPU scale)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from icml25_shared.cli import RunContext

from finextract.audit import ExtractionResult, extract
from finextract.denoisers import PixelUNet, without_adapters
from finextract.guidance import CFGSampler, ModelGuidanceSampler
from finextract.training import INSTANCE_DIGIT, INSTANCE_POOL, NEW_TOKEN, digits_data, finetune, instance_data, pretrain

log = logging.getLogger(__name__)

#: paper settings (Generator.py): DreamBooth w=3, k=-0.02; LoRA w=5, k=0; baseline CFG 3.0
SETTINGS = {"full": {"w": 3.0, "k": -0.02}, "lora": {"w": 5.0, "k": 0.0}}
CFG_SCALE = 3.0
#: A-ESR thresholds on the pixel-correlation scale of 8x8 digits. The acceptance threshold is the first, 0.9, fixed
#: by a data-only rule before the test seeds were run: about the 90th percentile (0.898) of the best pixel
#: correlation between a training image and N = 8 *other writers'* 8s and 9s (:func:`no_extraction_reference`),
#: so matching at 0.9 is rarer than chance look-alikes. At 0.8 about half of such look-alikes already count.
ESR_THRESHOLDS = (0.9, 0.8)
#: the "instance" design's thresholds, fixed by the same data-only rule before any model of that design was run:
#: the 90th percentile of the best pixel correlation between a training 3 and N = 8 *other* real 3s is 0.928
#: (:func:`no_extraction_reference` with ``digits=(3,)``), rounded to 0.93. Same-digit look-alikes are much closer
#: than in the new-concept design (their A-ESR@0.9 is 0.30, @0.8 0.84), so 0.9 is only a secondary number here.
INSTANCE_ESR_THRESHOLDS = (0.93, 0.9)
#: checkpoints cached under an older layout (new token initialised to the null class) are not reused
CACHE_TAG = "tok2"

#: experiment designs (see :mod:`finextract.training`); ``reproduce`` runs ``DEFAULT_DESIGN`` unless told otherwise.
#: "instance" leads because it is the paper's setting (DreamBooth on instances of a class the base model knows).
DESIGNS = ("instance", "new-concept")
DEFAULT_DESIGN = "instance"


@dataclass(frozen=True)
class Design:
    name: str
    data: Any  # (n_train, *, seed) -> DigitsData
    thresholds: tuple[float, ...]
    reference_digits: tuple[int, ...]
    pretrain_tag: str
    cache_tag: str


def design_setup(name: str) -> Design:
    """Data split, A-ESR thresholds, reference digits and cache names of an experiment design."""
    if name == "instance":
        return Design(
            name,
            instance_data,
            INSTANCE_ESR_THRESHOLDS,
            (INSTANCE_DIGIT,),
            f"-instance{INSTANCE_DIGIT}-pool{INSTANCE_POOL}",
            f"inst{INSTANCE_DIGIT}",
        )
    if name == "new-concept":
        return Design(name, digits_data, ESR_THRESHOLDS, (8, 9), "", CACHE_TAG)
    raise ValueError(f"unknown design {name!r}; choose one of {', '.join(DESIGNS)}")


@dataclass
class Config:
    n_train: int = 8
    pretrain_steps: int = 1500
    full_steps: int = 150
    full_lr: float = 2e-4
    lora_steps: int = 150
    lora_lr: float = 2e-3
    lora_rank: int = 4
    gen_per_image: int = 8
    ddim_steps: int = 50
    rescale_x0: bool = True  # the official "dt" flag; tiny CPU-trained models overshoot [-1, 1] without it


#: fine-tuning degree: "light" leaves the model part-way to the data (the paper's λ < 1 premise), "strong" nearly
#: memorises the 8 images so plain sampling already returns them
REGIMES = {
    "light": {"full_steps": 30, "full_lr": 2e-4, "lora_steps": 30, "lora_lr": 5e-4},
    "strong": {"full_steps": 150, "full_lr": 2e-4, "lora_steps": 150, "lora_lr": 2e-3},
}

QUICK = Config(
    pretrain_steps=60, full_steps=15, full_lr=1e-3, lora_steps=15, lora_lr=1e-2, gen_per_image=3, ddim_steps=8
)


#: calibration grids, searched on a held-out seed (never one of the test seeds). Per fine-tuning mode (full / LoRA,
#: as the paper sets w and k per mode), the FineXtract (w, k) and the CFG scale with the highest mean AS over the
#: fine-tuning regimes are then used unchanged on every test seed. Ties go to the earlier grid entry.
W_GRID = (1.5, 2.0, 3.0, 5.0)
K_GRID = (-0.02, 0.0)
CFG_GRID = (1.0, 3.0, 5.0)
QUICK_GRID = {"w_grid": (2.0, 3.0), "k_grid": (0.0,), "cfg_grid": (1.0, 3.0)}  # keeps --quick at a few seconds
CALIBRATION_OFFSET = 3  # held-out seed = first test seed + 3 (the test seeds are seed, seed + 1, seed + 2)

#: method name -> ("mg", w, k) or ("cfg", scale)
Methods = dict[str, tuple[Any, ...]]


def paper_methods(mode: str) -> Methods:
    """The paper's untuned settings: FineXtract with Generator.py's (w, k), CFG at scale 3."""
    return {"FineXtract": ("mg", SETTINGS[mode]["w"], SETTINGS[mode]["k"]), "CFG baseline": ("cfg", CFG_SCALE)}


def grid_methods(
    *, w_grid: tuple[float, ...] = W_GRID, k_grid: tuple[float, ...] = K_GRID, cfg_grid: tuple[float, ...] = CFG_GRID
) -> Methods:
    """Every calibration candidate, named ``mg w=.. k=..`` and ``cfg s=..``."""
    out: Methods = {f"mg w={w} k={k}": ("mg", w, k) for w in w_grid for k in k_grid}
    out.update({f"cfg s={s}": ("cfg", s) for s in cfg_grid})
    return out


def run_setting(
    pre: PixelUNet,
    data: Any,
    mode: str,
    cfg: Config,
    seed: int,
    cache: Any = None,
    methods: Methods | None = None,
    thresholds: tuple[float, ...] = ESR_THRESHOLDS,
) -> dict[str, ExtractionResult]:
    """Fine-tune (full or LoRA) on ``data.finetune_images`` and extract with each method (default: the paper's
    FineXtract and CFG settings). All methods share the initial latents, DDIM steps and x0 rescaling."""
    lora = mode == "lora"
    ft = finetune(
        pre,
        data.finetune_images,
        steps=cfg.lora_steps if lora else cfg.full_steps,
        lr=cfg.lora_lr if lora else cfg.full_lr,
        lora_rank=cfg.lora_rank if lora else None,
        seed=seed,
        cache=cache,
    )
    base = without_adapters(ft) if lora else pre
    n_gen = cfg.gen_per_image * cfg.n_train
    latents = torch.randn((n_gen, *ft.sample_shape), generator=torch.Generator().manual_seed(1000 + seed))
    common = {"steps": cfg.ddim_steps, "rescale_x0": cfg.rescale_x0}
    samplers = {
        name: ModelGuidanceSampler(base, ft, w=m[1], k=m[2], **common)
        if m[0] == "mg"
        else CFGSampler(ft, guidance_scale=m[1], **common)
        for name, m in (methods or paper_methods(mode)).items()
    }
    return {
        name: extract(
            s,
            NEW_TOKEN,
            n_train=cfg.n_train,
            latents=latents,
            train_images=data.finetune_images,
            thresholds=thresholds,
        )
        for name, s in samplers.items()
    }


def calibrate(scores: dict[str, dict[str, list[float]]], grid: Methods) -> dict[str, Methods]:
    """Pick, per mode, the best FineXtract and the best CFG candidate by mean held-out AS.

    ``scores[mode][candidate]``: held-out AS values (one per regime). Returns ``{mode: {"FineXtract (calibrated)":
    ("mg", w, k), "CFG baseline (calibrated)": ("cfg", s)}}``. ``grid``: the candidates (:func:`grid_methods`).
    """
    out: dict[str, Methods] = {}
    for mode, by_cand in scores.items():
        best: Methods = {}
        for kind, label in (("mg", "FineXtract (calibrated)"), ("cfg", "CFG baseline (calibrated)")):
            cands = [c for c in grid if grid[c][0] == kind]
            best[label] = grid[max(cands, key=lambda c: (float(np.mean(by_cand[c])), -cands.index(c)))]
        out[mode] = best
    return out


def no_extraction_reference(
    n_train: int = 8,
    *,
    digits: tuple[int, ...] = (8, 9),
    thresholds: tuple[float, ...] = ESR_THRESHOLDS,
    trials: int = 2000,
    seed: int = 123,
) -> dict[str, Any]:
    """A-ESR and AS of a set that extracts nothing: N real images of ``digits`` by other writers scored against N
    training images drawn from the same pool (pixel cosine), over ``trials`` random draws. Uses no model.

    Also ``AS_nearest_real``: the AS when each image's match is its nearest *other* real image of ``digits`` in the
    whole dataset (the best look-alike that exists)."""
    from sklearn.datasets import load_digits

    from finextract.cluster import cosine_matrix, pixel_features

    d = load_digits()
    held = np.flatnonzero(np.isin(d.target, digits))
    feats = pixel_features(torch.tensor(d.images[held], dtype=torch.float32)[:, None] / 8.0 - 1.0)
    sim = cosine_matrix(feats, feats)
    others = sim.copy()
    np.fill_diagonal(others, -np.inf)
    rng = np.random.default_rng(seed)
    best = []
    for _ in range(trials):
        perm = rng.permutation(held.size)
        best.append(sim[np.ix_(perm[:n_train], perm[n_train : 2 * n_train])].max(axis=1))
    b = np.concatenate(best)
    return {
        "digits": list(digits),
        "n_train": n_train,
        "trials": trials,
        "AS": float(b.mean()),
        **{f"A-ESR@{t}": float(np.mean(b >= t)) for t in thresholds},
        "quantiles": {str(q): float(np.quantile(b, q)) for q in (0.5, 0.9, 0.95)},
        "AS_nearest_real": float(others.max(axis=1).mean()),
    }


def lookalike_reference(data: Any, thresholds: tuple[float, ...]) -> dict[str, float]:
    """For one fine-tuning set: AS and A-ESR when each training image's "extraction" is its nearest real image of
    the same digit that is not in the fine-tuning set (pixel cosine). No model is involved."""
    from sklearn.datasets import load_digits

    from finextract.cluster import cosine_matrix, pixel_features

    d = load_digits()
    digits = np.unique(data.finetune_digits)
    pool = np.setdiff1d(np.flatnonzero(np.isin(d.target, digits)), data.finetune_indices)
    real = torch.tensor(d.images[pool], dtype=torch.float32)[:, None] / 8.0 - 1.0
    if real.shape[-1] != data.finetune_images.shape[-1]:
        size = tuple(data.finetune_images.shape[-2:])
        real = torch.nn.functional.interpolate(real, size=size, mode="bilinear", align_corners=False)
    best = cosine_matrix(pixel_features(data.finetune_images), pixel_features(real)).max(axis=1)
    return {"AS": float(best.mean()), **{f"A-ESR@{t}": float(np.mean(best >= t)) for t in thresholds}}


def _row(mode: str, seed: int, method: str, r: ExtractionResult) -> dict[str, Any]:
    m = r.metrics
    return {
        "setting": mode,
        "seed": seed,
        "method": method,
        "AS": m.similarity,
        **{f"A-ESR@{t}": v for t, v in m.esr.items()},
        "threshold": r.cluster.threshold,
        "n_cliques": len(r.cluster.cliques),
    }


def _grid(fig_rows: list[tuple[str, torch.Tensor]], title: str) -> Any:
    import matplotlib.pyplot as plt

    n_cols = max(t.shape[0] for _, t in fig_rows)
    fig, axes = plt.subplots(len(fig_rows), n_cols, figsize=(1.0 * n_cols + 1.5, 1.1 * len(fig_rows)), squeeze=False)
    for r, (label, imgs) in enumerate(fig_rows):
        for c in range(n_cols):
            ax = axes[r][c]
            ax.set_xticks([])
            ax.set_yticks([])
            if c < imgs.shape[0]:
                img = imgs[c].float().clamp(-1, 1)
                ax.imshow(((img + 1) / 2).permute(1, 2, 0).squeeze(-1).numpy(), cmap="gray", vmin=0, vmax=1)
            else:
                ax.axis("off")
        axes[r][0].set_ylabel(label, rotation=0, ha="right", va="center", fontsize=8)
    fig.suptitle(title, fontsize=9)
    return fig


def _matched(train: torch.Tensor, r: ExtractionResult) -> torch.Tensor:
    """The extracted image matched to each training image (best pixel cosine)."""
    return r.extracted[torch.as_tensor(r.metrics.nearest, dtype=torch.long)]


def _markdown(rows: list[dict[str, Any]], keys: list[str]) -> str:
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for row in rows:
        lines.append(
            "| " + " | ".join(f"{row[k]:.3f}" if isinstance(row[k], float) else str(row[k]) for k in keys) + " |"
        )
    return "\n".join(lines)


def demo(ctx: RunContext) -> None:
    """Pretrain a tiny digits UNet, fully fine-tune it on 8 held-out images, extract with FineXtract vs CFG."""
    torch.set_num_threads(1)  # 0.16 M-param model: threads only add contention on shared CPUs
    cfg = QUICK if ctx.quick else Config(pretrain_steps=200, gen_per_image=6, ddim_steps=25, **REGIMES["light"])
    data = digits_data(cfg.n_train, seed=ctx.seed)
    pre = pretrain(data, steps=cfg.pretrain_steps, batch_size=64, seed=ctx.seed)
    res = run_setting(pre, data, "full", cfg, ctx.seed)
    rows = [_row("full", ctx.seed, name, r) for name, r in res.items()]
    ctx.write_table(_markdown(rows, ["method", "AS", *[f"A-ESR@{t}" for t in ESR_THRESHOLDS], "threshold"]))
    train = data.finetune_images
    fig = _grid(
        [("training", train)] + [(name, _matched(train, r)) for name, r in res.items()],
        "fine-tuning images vs the extracted image matched to each (pixel cosine)",
    )
    ctx.save_figure(fig)


def reproduce(ctx: RunContext, design: str = DEFAULT_DESIGN) -> None:
    """3 test seeds x {light, strong fine-tuning} x {full, LoRA}: FineXtract vs CFG, each at the paper's settings
    and at settings calibrated on a held-out seed (same grid search for both methods); JSON, table, grid.

    ``design``: "instance" (specific images of a known digit, token initialised to that digit) or "new-concept"
    (8s and 9s under a random new token); see :mod:`finextract.training`."""
    from dataclasses import replace

    des = design_setup(design)
    thresholds = des.thresholds
    torch.set_num_threads(1)  # 0.16 M-param model: threads only add contention on shared CPUs
    base_cfg = QUICK if ctx.quick else Config()
    regimes = {"quick": {}} if ctx.quick else REGIMES
    seeds = [ctx.seed] if ctx.quick else [ctx.seed, ctx.seed + 1, ctx.seed + 2]
    cal_seed = ctx.seed + CALIBRATION_OFFSET
    grid_kw: dict[str, tuple[float, ...]] = (
        QUICK_GRID if ctx.quick else {"w_grid": W_GRID, "k_grid": K_GRID, "cfg_grid": CFG_GRID}
    )
    grid = grid_methods(**grid_kw)
    data0 = des.data(base_cfg.n_train, seed=ctx.seed)
    cache = None if ctx.quick else ctx.path("checkpoints")
    pre = pretrain(
        data0,
        steps=base_cfg.pretrain_steps,
        batch_size=64,
        seed=ctx.seed,
        cache=None if cache is None else cache / f"pretrained-{base_cfg.pretrain_steps}{des.pretrain_tag}",
    )

    def sub(regime: str, mode: str, seed: int) -> Any:
        return None if cache is None else cache / f"{regime}-{mode}-seed{seed}-{des.cache_tag}"

    # 1. calibration on the held-out seed: every grid candidate for both methods
    scores: dict[str, dict[str, list[float]]] = {"full": {}, "lora": {}}
    cal_rows: list[dict[str, Any]] = []
    for regime, overrides in regimes.items():
        cfg = replace(base_cfg, **overrides)
        data = des.data(cfg.n_train, seed=cal_seed)
        for mode in ("full", "lora"):
            res = run_setting(
                pre, data, mode, cfg, cal_seed, cache=sub(regime, mode, cal_seed), methods=grid, thresholds=thresholds
            )
            for name, r in res.items():
                scores[mode].setdefault(name, []).append(r.metrics.similarity)
                cal_rows.append({"regime": regime, **_row(mode, cal_seed, name, r)})
    chosen = calibrate(scores, grid)
    log.info("calibrated on seed %d: %s", cal_seed, chosen)

    # 2. test seeds: paper settings and calibrated settings, same latents for all four samplers
    rows: list[dict[str, Any]] = []
    grids: list[tuple[str, torch.Tensor]] = []
    lookalikes = {
        seed: lookalike_reference(des.data(base_cfg.n_train, seed=seed), thresholds) for seed in [*seeds, cal_seed]
    }
    for regime, overrides in regimes.items():
        cfg = replace(base_cfg, **overrides)
        for seed in seeds:
            data = des.data(cfg.n_train, seed=seed)
            for mode in ("full", "lora"):
                res = run_setting(
                    pre,
                    data,
                    mode,
                    cfg,
                    seed,
                    cache=sub(regime, mode, seed),
                    methods={**paper_methods(mode), **chosen[mode]},
                    thresholds=thresholds,
                )
                rows += [{"regime": regime, **_row(mode, seed, name, r)} for name, r in res.items()]
                if seed == seeds[0] and regime == next(iter(regimes)):
                    grids.append((f"train ({mode})", data.finetune_images))
                    grids += [(f"{name} ({mode})", _matched(data.finetune_images, r)) for name, r in res.items()]
    summary = []
    metric_keys = ["AS", *[f"A-ESR@{t}" for t in thresholds]]
    methods = ["FineXtract", "CFG baseline", "FineXtract (calibrated)", "CFG baseline (calibrated)"]
    for regime in regimes:
        for mode in ("full", "lora"):
            for method in methods:
                sel = [r for r in rows if (r["regime"], r["setting"], r["method"]) == (regime, mode, method)]
                m = chosen[mode].get(method) or paper_methods(mode)[method]
                entry: dict[str, Any] = {
                    "design": design,
                    "regime": regime,
                    "setting": mode,
                    "method": method,
                    "params": f"w={m[1]}, k={m[2]}" if m[0] == "mg" else f"s={m[1]}",
                }
                for key in metric_keys:
                    vals = np.array([r[key] for r in sel])
                    entry[key] = float(vals.mean())
                    entry[key + " sd"] = float(vals.std())
                summary.append(entry)
    keys = ["regime", "setting", "method", "params", *[k for m in metric_keys for k in (m, m + " sd")]]
    look_rows = [{"seed": s, **v} for s, v in lookalikes.items()]
    ctx.write_table(
        f"design: {design}; A-ESR thresholds {thresholds} (the first is the acceptance threshold)\n\n"
        + _markdown(summary, keys)
        + "\n\nnearest real same-digit image not in the fine-tuning set, per seed (no model):\n\n"
        + _markdown(look_rows, list(look_rows[0]))
    )
    ctx.write_json(
        {
            "design": design,
            "esr_thresholds": thresholds,
            "pretrain_images": int(data0.pretrain_images.shape[0]),
            "finetune_indices": {s: des.data(base_cfg.n_train, seed=s).finetune_indices for s in [*seeds, cal_seed]},
            "lookalike_reference": lookalikes,
            "config": base_cfg.__dict__,
            "regimes": regimes,
            "seeds": seeds,
            "settings": SETTINGS,
            "cfg_scale": CFG_SCALE,
            "calibration": {"seed": cal_seed, **grid_kw, "chosen": chosen, "runs": cal_rows},
            "no_extraction_reference": no_extraction_reference(
                base_cfg.n_train, digits=des.reference_digits, thresholds=thresholds
            ),
            "summary": summary,
            "runs": rows,
        }
    )
    first = next(iter(regimes))
    ctx.save_figure(
        _grid(grids, f"{design}, {first} fine-tuning, seed {seeds[0]}: training images and best extracted match")
    )
