"""``demo`` and ``reproduce``: FineXtract vs the CFG baseline on personalised tiny digit models (CPU scale).

Experiment seeds are labels: in the instance design seed ``s`` names pool block ``s mod 6`` (test seeds 0, 1, 2,
calibration seed 3), and each label roots its own independent streams (:func:`seed_streams`) for pretraining,
fine-tuning and the initial latents.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from icml25_shared.cli import RunContext, progress
from icml25_shared.random import child_seeds
from icml25_shared.stats import mean_sd
from icml25_shared.tables import markdown_table

from finextract._options import DEFAULT_DESIGN, DESIGNS
from finextract.audit import ExtractionResult, extract
from finextract.denoisers import PixelUNet, without_adapters
from finextract.guidance import CFGSampler, ModelGuidanceSampler
from finextract.metrics import ExtractionMetrics
from finextract.training import INSTANCE_DIGIT, INSTANCE_POOL, NEW_TOKEN, digits_data, finetune, instance_data, pretrain

log = logging.getLogger(__name__)

#: paper settings (Generator.py): DreamBooth w=3, k=-0.02; LoRA w=5, k=0; baseline CFG 3.0
SETTINGS = {"full": {"w": 3.0, "k": -0.02}, "lora": {"w": 5.0, "k": 0.0}}
CFG_SCALE = 3.0
#: A-ESR thresholds on the pixel-correlation scale of 8x8 digits. The primary threshold is the first, 0.9, fixed
#: by a data-only rule before the test seeds were run: about the 90th percentile (0.898) of the best pixel
#: correlation between a training image and N = 8 *other writers'* 8s and 9s (:func:`no_extraction_reference`),
#: so matching at 0.9 is rarer than chance look-alikes. At 0.8 about half of such look-alikes already count.
ESR_THRESHOLDS = (0.9, 0.8)
#: the "instance" design's thresholds, fixed by the same data-only rule before any model of that design was run:
#: the 90th percentile of the best pixel correlation between a training 3 and N = 8 *other* real 3s is 0.928
#: (:func:`no_extraction_reference` with ``digits=(3,)``), rounded to 0.93. Same-digit look-alikes are much closer
#: than in the new-concept design (their A-ESR@0.9 is 0.30, @0.8 0.84), so 0.9 is only a secondary number here.
INSTANCE_ESR_THRESHOLDS = (0.93, 0.9)
#: checkpoints cached under an older layout (new token initialised to the null class, or seeds as plain offsets
#: before the per-seed SeedSequence streams) are not reused
CACHE_TAG = "tok2-ss"
#: the roles of an experiment seed's independent streams (:func:`seed_streams`)
STREAMS = ("pretrain", "finetune", "latents")


def seed_streams(seed: int) -> dict[str, int]:
    """Return the independent torch seeds that experiment seed ``seed`` roots.

    Parameters
    ----------
    seed : int
        An experiment seed (a label such as a test or calibration seed).

    Returns
    -------
    dict of str to int
        One seed per role in :data:`STREAMS`, from :func:`icml25_shared.random.child_seeds`.

    Examples
    --------
    >>> a, b = seed_streams(0), seed_streams(1)
    >>> sorted(a) == sorted(STREAMS) and len(set(a.values()) | set(b.values())) == 6
    True
    """
    return dict(zip(STREAMS, child_seeds(seed, len(STREAMS)), strict=True))




@dataclass(frozen=True)
class Design:
    """One experiment design: data split, A-ESR thresholds, look-alike reference digits and cache names."""

    name: str
    data: Any  # (n_train, *, seed) -> DigitsData
    thresholds: tuple[float, ...]
    reference_digits: tuple[int, ...]
    pretrain_tag: str
    cache_tag: str


def design_setup(name: str) -> Design:
    """Return the data split, A-ESR thresholds, reference digits and cache names of an experiment design.

    Parameters
    ----------
    name : {"instance", "new-concept"}
        The design.

    Returns
    -------
    Design
        Its settings.
    """
    if name == "instance":
        return Design(
            name,
            instance_data,
            INSTANCE_ESR_THRESHOLDS,
            (INSTANCE_DIGIT,),
            f"-instance{INSTANCE_DIGIT}-pool{INSTANCE_POOL}-ss",
            f"inst{INSTANCE_DIGIT}-ss",
        )
    if name == "new-concept":
        return Design(name, digits_data, ESR_THRESHOLDS, (8, 9), "-ss", CACHE_TAG)
    raise ValueError(f"unknown design {name!r}; choose one of {', '.join(DESIGNS)}")


@dataclass
class Config:
    """Sizes of one run: N, pretraining and fine-tuning steps and rates, LoRA rank, generations, DDIM steps."""

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
REGIMES: dict[str, dict[str, Any]] = {
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
#: test seeds are the labels ``--seed`` + 0, 1, 2 and the held-out calibration seed is ``--seed`` + 3 (pool blocks)
TEST_OFFSETS = (0, 1, 2)
CALIBRATION_OFFSET = 3

#: method name -> ("mg", w, k) or ("cfg", scale)
Methods = dict[str, tuple[Any, ...]]


def paper_methods(mode: str) -> Methods:
    """Return the paper's untuned settings: FineXtract with Generator.py's (w, k), CFG at scale 3.

    Parameters
    ----------
    mode : {"full", "lora"}
        Fine-tuning mode.

    Returns
    -------
    dict
        Method name -> ``("mg", w, k)`` or ``("cfg", scale)``.
    """
    return {"FineXtract": ("mg", SETTINGS[mode]["w"], SETTINGS[mode]["k"]), "CFG baseline": ("cfg", CFG_SCALE)}


def grid_methods(
    *, w_grid: tuple[float, ...] = W_GRID, k_grid: tuple[float, ...] = K_GRID, cfg_grid: tuple[float, ...] = CFG_GRID
) -> Methods:
    """Return every calibration candidate, named ``mg w=.. k=..`` and ``cfg s=..``.

    Parameters
    ----------
    w_grid, k_grid, cfg_grid : tuple of float
        FineXtract's w and k values and the CFG scales.

    Returns
    -------
    dict
        Candidate name -> ``("mg", w, k)`` or ``("cfg", scale)``.
    """
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
    """Fine-tune (full or LoRA) on ``data.finetune_images`` and extract with each method.

    All methods share the initial latents, DDIM steps and x0 rescaling.

    Parameters
    ----------
    pre : PixelUNet
        The pretrained model.
    data : DigitsData
        The fine-tuning set.
    mode : {"full", "lora"}
        Fine-tuning mode.
    cfg : Config
        Sizes.
    seed : int
        Experiment seed; its :func:`seed_streams` drive the fine-tuning and the initial latents.
    cache : path, optional
        Folder for the fine-tuned checkpoint.
    methods : dict, optional
        Method name -> settings (default: :func:`paper_methods`).
    thresholds : tuple of float
        A-ESR thresholds.

    Returns
    -------
    dict of str to ExtractionResult
        One result per method.
    """
    streams = seed_streams(seed)
    lora = mode == "lora"
    ft = finetune(
        pre,
        data.finetune_images,
        steps=cfg.lora_steps if lora else cfg.full_steps,
        lr=cfg.lora_lr if lora else cfg.full_lr,
        lora_rank=cfg.lora_rank if lora else None,
        random_state=streams["finetune"],
        cache=cache,
    )
    base = without_adapters(ft) if lora else pre
    n_gen = cfg.gen_per_image * cfg.n_train
    latents = torch.randn((n_gen, *ft.sample_shape), generator=torch.Generator().manual_seed(streams["latents"]))
    common: dict[str, Any] = {"steps": cfg.ddim_steps, "rescale_x0": cfg.rescale_x0}
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
            stop="paper",  # the stored runs use the paper's selection
        )
        for name, s in samplers.items()
    }


def calibrate(scores: dict[str, dict[str, list[float]]], grid: Methods) -> dict[str, Methods]:
    """Pick, per mode, the best FineXtract and the best CFG candidate by mean held-out AS.

    Parameters
    ----------
    scores : dict
        ``scores[mode][candidate]``: held-out AS values (one per regime).
    grid : dict
        The candidates (:func:`grid_methods`); ties go to the earlier one.

    Returns
    -------
    dict
        ``{mode: {"FineXtract (calibrated)": ("mg", w, k), "CFG baseline (calibrated)": ("cfg", s)}}``.
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
    random_state: Any = 123,
) -> dict[str, Any]:
    """Score a set that extracts nothing: real images by other writers, without any model.

    N real images of ``digits`` are scored against N training images drawn from the same pool (pixel cosine),
    over ``trials`` random draws.

    Parameters
    ----------
    n_train : int, default 8
        N.
    digits : tuple of int, default (8, 9)
        The digits of the pool.
    thresholds : tuple of float
        A-ESR thresholds.
    trials : int, default 2000
        Random draws.
    random_state : None, int or numpy Generator, default 123
        Draws the splits.

    Returns
    -------
    dict
        ``AS``, ``A-ESR@t``, quantiles of the best match and of one set's AS, and ``AS_nearest_real``: the AS when
        each image's match is its nearest *other* real image of ``digits`` in the whole dataset (the best
        look-alike that exists).
    """
    from icml25_shared.random import check_random_state
    from sklearn.datasets import load_digits

    from finextract.cluster import cosine_matrix, pixel_features

    d = load_digits()
    held = np.flatnonzero(np.isin(d.target, digits))
    feats = pixel_features(torch.tensor(d.images[held], dtype=torch.float32)[:, None] / 8.0 - 1.0)
    sim = cosine_matrix(feats, feats)
    others = sim.copy()
    np.fill_diagonal(others, -np.inf)
    rng = check_random_state(random_state)
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
        # spread of one set's AS (mean over its N images), the unit a single seed's AS is compared at
        "AS_per_set_quantiles": {
            str(q): float(np.quantile(b.reshape(trials, n_train).mean(1), q)) for q in (0.5, 0.9, 0.95)
        },
    }


def lookalike_reference(data: Any, thresholds: tuple[float, ...]) -> dict[str, float]:
    """Score each training image's nearest real look-alike, without any model.

    Parameters
    ----------
    data : DigitsData
        One fine-tuning set.
    thresholds : tuple of float
        A-ESR thresholds.

    Returns
    -------
    dict
        AS and A-ESR when each training image's "extraction" is its nearest real image of the same digit that is
        not in the fine-tuning set (pixel cosine).
    """
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


def _scored(r: ExtractionResult) -> ExtractionMetrics:
    """The metrics of a run that was given the training images (every run here is)."""
    if r.metrics is None:
        raise ValueError("the extraction was run without training images, so it has no metrics")
    return r.metrics


def _row(mode: str, seed: int, method: str, r: ExtractionResult) -> dict[str, Any]:
    m = _scored(r)
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
    return r.extracted[torch.as_tensor(_scored(r).nearest, dtype=torch.long)]


def _markdown(rows: list[dict[str, Any]], keys: list[str]) -> str:
    return markdown_table(rows, headers=keys, digits=3)


def demo(ctx: RunContext) -> None:
    """Pretrain a tiny digits UNet, fully fine-tune it on 8 held-out images, extract with FineXtract vs CFG.

    Parameters
    ----------
    ctx : icml25_shared.cli.RunContext
        Output folder, seed and quick flag; writes ``demo.md`` and ``demo.png``.
    """
    torch.set_num_threads(1)  # 0.16 M-param model: threads only add contention on shared CPUs
    cfg = QUICK if ctx.quick else Config(pretrain_steps=200, gen_per_image=6, ddim_steps=25, **REGIMES["light"])
    data = digits_data(cfg.n_train, random_state=ctx.seed)
    pre = pretrain(
        data,
        steps=cfg.pretrain_steps,
        batch_size=64,
        random_state=seed_streams(ctx.seed)["pretrain"],
        progress=not ctx.quick,
    )
    res = run_setting(pre, data, "full", cfg, ctx.seed)
    rows = [_row("full", ctx.seed, name, r) for name, r in res.items()]
    ctx.write_table(_markdown(rows, ["method", "AS", *[f"A-ESR@{t}" for t in ESR_THRESHOLDS], "threshold"]))
    train = data.finetune_images
    fig = _grid(
        [("training", train)] + [(name, _matched(train, r)) for name, r in res.items()],
        "fine-tuning images vs the extracted image matched to each (pixel cosine)",
    )
    ctx.save_figure(fig)


@dataclass(frozen=True)
class FrozenCalibration:
    """Settings chosen by an earlier ``reproduce`` run, reused unchanged (no new search) on more test seeds."""

    source: str
    seed: int  # the held-out seed they were chosen on
    chosen: dict[str, Methods]  # {mode: {"FineXtract (calibrated)": ("mg", w, k), "CFG baseline (calibrated)": ...}}


def load_calibration(
    path: str | Path, *, design: Design, config: Config, test_seeds: list[int], pretrain_seed: int
) -> FrozenCalibration:
    """Read the calibrated settings of an earlier ``reproduce`` JSON and check that they may be reused.

    Reuse needs the same design, model/fine-tuning configuration, regimes and pretraining seed, and no test seed's
    fine-tuning image in the calibration seed's set (a held-out seed must stay held out).

    Parameters
    ----------
    path : path
        An earlier run's ``reproduce.json``.
    design : Design
        This run's design.
    config : Config
        This run's sizes.
    test_seeds : list of int
        The new test seeds.
    pretrain_seed : int
        This run's ``--seed``.

    Returns
    -------
    FrozenCalibration
        The settings to reuse.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"calibration file {path} does not exist (a reproduce.json from an earlier run)")
    rec = json.loads(path.read_text())
    cal = rec.get("calibration") or {}
    if "chosen" not in cal or "seed" not in cal:
        raise ValueError(f"{path} has no calibration.chosen / calibration.seed; is it a reproduce.json?")
    if rec.get("design") != design.name:
        raise ValueError(f"{path} is from design {rec.get('design')!r}, this run is {design.name!r}")
    if rec.get("config") != config.__dict__:
        raise ValueError(f"{path} was run with config {rec.get('config')}, this run has {config.__dict__}")
    if rec.get("regimes") != REGIMES:
        raise ValueError(f"{path} was run with regimes {rec.get('regimes')}, this run has {REGIMES}")
    rec_pre = rec.get("pretrain_seed", (rec.get("seeds") or [None])[0])  # older files: pretrained with seeds[0]
    if rec_pre != pretrain_seed:
        raise ValueError(
            f"{path} used the model pretrained with seed {rec_pre}; this run pretrains with {pretrain_seed}"
        )
    cal_seed = int(cal["seed"])
    held = set(design.data(config.n_train, random_state=cal_seed).finetune_indices.tolist())
    for s in test_seeds:
        if s == cal_seed or held & set(design.data(config.n_train, random_state=s).finetune_indices.tolist()):
            raise ValueError(f"test seed {s} shares fine-tuning images with calibration seed {cal_seed}")
    chosen = {
        mode: {label: tuple(m) for label, m in cal["chosen"][mode].items()}
        for mode in ("full", "lora")
        if mode in cal["chosen"]
    }
    labels = {"FineXtract (calibrated)", "CFG baseline (calibrated)"}
    if set(chosen) != {"full", "lora"} or any(set(v) != labels for v in chosen.values()):
        raise ValueError(f"{path}: calibration.chosen needs {sorted(labels)} for both full and lora")
    return FrozenCalibration(str(path), cal_seed, chosen)


def reproduce(
    ctx: RunContext,
    design: str = DEFAULT_DESIGN,
    seeds: list[int] | None = None,
    calibration: str | Path | None = None,
) -> None:
    """Run FineXtract vs CFG over 3 test seeds x {light, strong fine-tuning} x {full, LoRA}.

    Each method runs at the paper's settings and at settings calibrated on a held-out seed (the same grid search
    for both methods); writes JSON, a table and a grid of images.

    Parameters
    ----------
    ctx : icml25_shared.cli.RunContext
        Output folder, seed (the pretraining seed and the first test seed) and quick flag.
    design : {"instance", "new-concept"}
        "instance": specific images of a known digit, token initialised to that digit; "new-concept": 8s and 9s
        under a random new token (see :mod:`finextract.training`).
    seeds : list of int, optional
        With ``calibration``: run these test seeds with that run's calibrated settings frozen (no search) and the
        same pretrained model; the files are named ``reproduce-seeds<a>-<b>.*`` so the earlier run's are kept.
    calibration : path, optional
        An earlier run's ``reproduce.json``.
    """
    from dataclasses import replace

    des = design_setup(design)
    thresholds = des.thresholds
    torch.set_num_threads(1)  # 0.16 M-param model: threads only add contention on shared CPUs
    base_cfg = QUICK if ctx.quick else Config()
    regimes: dict[str, dict[str, Any]] = {"quick": {}} if ctx.quick else REGIMES
    if (seeds is None) != (calibration is None):
        raise ValueError("seeds and calibration go together: more test seeds reuse an earlier run's settings")
    frozen = None
    if seeds is not None and calibration is not None:
        frozen = load_calibration(calibration, design=des, config=base_cfg, test_seeds=seeds, pretrain_seed=ctx.seed)
    else:
        seeds = [ctx.seed] if ctx.quick else [ctx.seed + offset for offset in TEST_OFFSETS]
    cal_seed = frozen.seed if frozen else ctx.seed + CALIBRATION_OFFSET
    name = f"reproduce-seeds{'-'.join(map(str, seeds))}" if frozen else None
    grid_kw: dict[str, tuple[float, ...]] = (
        QUICK_GRID if ctx.quick else {"w_grid": W_GRID, "k_grid": K_GRID, "cfg_grid": CFG_GRID}
    )
    grid = grid_methods(**grid_kw)
    data0 = des.data(base_cfg.n_train, random_state=ctx.seed)
    cache = None if ctx.quick else ctx.path("checkpoints")
    pre = pretrain(
        data0,
        steps=base_cfg.pretrain_steps,
        batch_size=64,
        random_state=seed_streams(ctx.seed)["pretrain"],
        cache=None if cache is None else cache / f"pretrained-{base_cfg.pretrain_steps}{des.pretrain_tag}",
    )

    def sub(regime: str, mode: str, seed: int) -> Any:
        return None if cache is None else cache / f"{regime}-{mode}-seed{seed}-{des.cache_tag}"

    # 1. calibration on the held-out seed: every grid candidate for both methods (or the frozen earlier choice)
    scores: dict[str, dict[str, list[float]]] = {"full": {}, "lora": {}}
    cal_rows: list[dict[str, Any]] = []
    cal_cells = [] if frozen else [(regime, mode) for regime in regimes for mode in ("full", "lora")]
    for regime, mode in progress(cal_cells, enabled=not ctx.quick, desc="calibration"):
        cfg = replace(base_cfg, **regimes[regime])
        data = des.data(cfg.n_train, random_state=cal_seed)
        res = run_setting(
            pre, data, mode, cfg, cal_seed, cache=sub(regime, mode, cal_seed), methods=grid, thresholds=thresholds
        )
        for cand, r in res.items():
            scores[mode].setdefault(cand, []).append(_scored(r).similarity)
            cal_rows.append({"regime": regime, **_row(mode, cal_seed, cand, r)})
    chosen = frozen.chosen if frozen else calibrate(scores, grid)
    log.info("calibrated on seed %d: %s", cal_seed, chosen)
    calibration_record: dict[str, Any] = (
        {"seed": cal_seed, "frozen_from": frozen.source, "chosen": chosen}
        if frozen
        else {"seed": cal_seed, **grid_kw, "chosen": chosen, "runs": cal_rows}
    )

    # 2. test seeds: paper settings and calibrated settings, same latents for all four samplers
    rows: list[dict[str, Any]] = []
    grids: list[tuple[str, torch.Tensor]] = []
    lookalikes = {
        seed: lookalike_reference(des.data(base_cfg.n_train, random_state=seed), thresholds)
        for seed in [*seeds, cal_seed]
    }
    test_cells = [(regime, seed, mode) for regime in regimes for seed in seeds for mode in ("full", "lora")]
    for regime, seed, mode in progress(test_cells, enabled=not ctx.quick, desc="test seeds"):
        cfg = replace(base_cfg, **regimes[regime])
        data = des.data(cfg.n_train, random_state=seed)
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
        rows += [{"regime": regime, **_row(mode, seed, m, r)} for m, r in res.items()]
        if seed == seeds[0] and regime == next(iter(regimes)):
            grids.append((f"train ({mode})", data.finetune_images))
            grids += [(f"{m} ({mode})", _matched(data.finetune_images, r)) for m, r in res.items()]
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
                    stat = mean_sd([r[key] for r in sel])
                    entry[key] = stat.mean
                    entry[key + " sd"] = stat.sd
                summary.append(entry)
    keys = ["regime", "setting", "method", "params", *[k for m in metric_keys for k in (m, m + " sd")]]
    look_rows = [{"seed": s, **v} for s, v in lookalikes.items()]
    ctx.write_table(
        f"design: {design}; test seeds {seeds}; A-ESR thresholds {thresholds} (the first is the primary "
        "threshold)\n\n"
        + _markdown(summary, keys)
        + "\n\nnearest real same-digit image not in the fine-tuning set, per seed (no model):\n\n"
        + _markdown(look_rows, list(look_rows[0])),
        name=name,
    )
    ctx.write_json(
        {
            "design": design,
            "pretrain_seed": ctx.seed,
            "esr_thresholds": thresholds,
            "pretrain_images": int(data0.pretrain_images.shape[0]),
            "finetune_indices": {
                s: des.data(base_cfg.n_train, random_state=s).finetune_indices for s in [*seeds, cal_seed]
            },
            "lookalike_reference": lookalikes,
            "config": base_cfg.__dict__,
            "regimes": regimes,
            "seeds": seeds,
            "settings": SETTINGS,
            "cfg_scale": CFG_SCALE,
            "calibration": calibration_record,
            "no_extraction_reference": no_extraction_reference(
                base_cfg.n_train, digits=des.reference_digits, thresholds=thresholds
            ),
            "summary": summary,
            "runs": rows,
        },
        name=name,
    )
    first = next(iter(regimes))
    ctx.save_figure(
        _grid(grids, f"{design}, {first} fine-tuning, seed {seeds[0]}: training images and best extracted match"),
        name=name,
    )


#: the pair that the pooled head-to-head compares (calibrated settings, frozen from the calibration seed)
METHOD = "FineXtract (calibrated)"
BASELINE = "CFG baseline (calibrated)"


def counted_regimes(calibration: dict[str, Any], reference_as: float) -> dict[str, dict[str, Any]]:
    """The data rule for which fine-tuning regimes are informative about extraction, on the calibration seed only.

    A regime counts if the calibrated CFG baseline's AS on the calibration seed, averaged over full and LoRA, is
    above ``reference_as`` (the AS of 8 random other real images of the digit, :func:`no_extraction_reference`):
    only then does fine-tuning make the instances more extractable than look-alikes. ``calibration``: the
    ``calibration`` record of a searching ``reproduce`` run (it holds every candidate's calibration-seed AS).
    """
    out: dict[str, dict[str, Any]] = {}
    for regime in dict.fromkeys(r["regime"] for r in calibration["runs"]):
        vals = []
        for mode, methods in calibration["chosen"].items():
            cand = f"cfg s={methods[BASELINE][1]}"
            vals += [
                r["AS"] for r in calibration["runs"] if (r["regime"], r["setting"], r["method"]) == (regime, mode, cand)
            ]
        if len(vals) != len(calibration["chosen"]):
            raise ValueError(f"calibration runs lack the chosen CFG scale for regime {regime!r}")
        out[regime] = {
            "cfg_AS": float(np.mean(vals)),
            "reference_AS": reference_as,
            "counts": np.mean(vals) > reference_as,
        }
    return out


def head_to_head(runs: list[dict[str, Any]], esr_key: str) -> list[dict[str, Any]]:
    """Compare :data:`METHOD` with :data:`BASELINE` per (regime, setting), pooled over seeds.

    Parameters
    ----------
    runs : list of dict
        Rows of ``reproduce.json["runs"]``; each seed must have both methods.
    esr_key : str
        The A-ESR column, e.g. ``"A-ESR@0.93"``.

    Returns
    -------
    list of dict
        Per cell: the seeds, each method's mean AS and ``esr_key``, and ``wins`` (strictly higher mean on both).
    """
    out = []
    cells = dict.fromkeys((r["regime"], r["setting"]) for r in runs if r["method"] in (METHOD, BASELINE))
    for regime, mode in cells:
        by: dict[str, dict[int, dict[str, Any]]] = {}
        for m in (METHOD, BASELINE):
            sel = [r for r in runs if (r["regime"], r["setting"], r["method"]) == (regime, mode, m)]
            by[m] = {r["seed"]: r for r in sel}
            if len(by[m]) != len(sel):
                raise ValueError(f"{regime} {mode} {m}: more than one run for a seed")
        seeds = sorted(by[METHOD])
        if seeds != sorted(by[BASELINE]):
            raise ValueError(f"{regime} {mode}: the two methods were run on different seeds")
        entry: dict[str, Any] = {"regime": regime, "setting": mode, "seeds": seeds}
        for m, tag in ((METHOD, "FX"), (BASELINE, "CFG")):
            entry[f"{tag} AS"] = float(np.mean([by[m][s]["AS"] for s in seeds]))
            entry[f"{tag} {esr_key}"] = float(np.mean([by[m][s][esr_key] for s in seeds]))
        entry["wins"] = bool(entry["FX AS"] > entry["CFG AS"] and entry[f"FX {esr_key}"] > entry[f"CFG {esr_key}"])
        out.append(entry)
    return out
