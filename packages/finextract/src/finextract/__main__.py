"""Command line: ``python -m finextract demo | reproduce [--design instance|new-concept] | audit``.

``reproduce --design instance`` (the default, the paper's DreamBooth setting): specific images of digit 3, held out
of pretraining, under a new token initialised to the digit's embedding. ``--design new-concept``: 8s and 9s, never
seen in pretraining, under a new token with a random embedding.

``reproduce --seeds 4,5 --calibration out/finextract-instance/reproduce.json --out out/finextract-instance``: more
test seeds with an earlier run's calibrated settings frozen (no new search) and its cached pretrained model; writes
``reproduce-seeds4-5.{md,json,png}`` next to the earlier files.

``audit`` loads a pretrained and a fine-tuned checkpoint from local diffusers folders, runs FineXtract and
writes ``audit.png`` (the most likely extracted training images, largest clique first), ``audit.md`` and
``audit.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from icml25_shared.cli import ExtraCommand, RunContext, run_cli, save_figure, seed_everything
from icml25_shared.tables import markdown_table

from finextract._options import DEFAULT_DESIGN, DESIGNS, parse_seeds

if TYPE_CHECKING:
    from finextract.cluster import ClusterResult


def _audit_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m finextract audit",
        description="extract likely fine-tuning images from a fine-tuned diffusion model",
    )
    p.add_argument("--pretrained", type=Path, required=True, help="local diffusers folder of the base model")
    p.add_argument(
        "--finetuned",
        type=Path,
        default=None,
        help="local diffusers folder of the fine-tuned model (omit when --lora is given)",
    )
    p.add_argument("--lora", type=Path, default=None, help="LoRA adapter folder applied on top of --pretrained")
    p.add_argument("--n-train", type=int, required=True, help="number of fine-tuning images N")
    p.add_argument("--n-generations", type=int, default=None, help="images to generate (default 50 N)")
    p.add_argument("--w", type=float, default=None, help="guidance scale (default 3.0 full, 5.0 LoRA)")
    p.add_argument(
        "--k",
        type=_k_argument,
        default=None,
        help="correction term (default -0.02 full, 0.0 LoRA); 'none' uses the pretrained conditional prediction "
        "as the base, without the correction",
    )
    p.add_argument("--steps", type=int, default=50, help="DDIM steps (default 50)")
    p.add_argument(
        "--rescale-x0",
        action="store_true",
        help="the official code's 'dt' flag: rescale a predicted x0 that leaves [-1, 1] (small models overshoot; "
        "the digits experiments use it)",
    )
    cond = p.add_mutually_exclusive_group(required=True)
    cond.add_argument("--class-label", type=int, help="class id of the personalised concept (pixel UNet2DModel)")
    cond.add_argument("--prompt", type=str, help="prompt (needs tokenizer/ and text_encoder/ in the folders)")
    cond.add_argument("--prompt-embeds", type=Path, help="torch file with prompt embeddings (1, L, D)")
    p.add_argument("--null-embeds", type=Path, default=None, help="torch file with empty-prompt embeddings")
    p.add_argument("--sscd", type=Path, default=None, help="local SSCD TorchScript file (default: pixel cosine)")
    p.add_argument(
        "--training-images",
        type=Path,
        default=None,
        help="the fine-tuning images (a folder of PNG/JPEG files, or an (n, C, H, W) .pt/.npy array in [-1, 1]): "
        "scores the extraction against them (AS, A-ESR, each image's best match)",
    )
    p.add_argument(
        "--thresholds",
        type=_thresholds_argument,
        default=None,
        help="A-ESR similarity thresholds, comma-separated (default: the paper's 0.7,0.6 with --sscd; 0.93,0.9 "
        "with pixel cosine, calibrated on 8x8 digits, see README)",
    )
    p.add_argument(
        "--stop",
        choices=("robust", "paper"),
        default="robust",
        help="clique stopping rule: 'robust' (default) counts only cliques of --min-clique-size or more and keeps "
        "the best-separated threshold; 'paper' stops at the first threshold with N cliques, singletons included",
    )
    p.add_argument(
        "--min-clique-size",
        type=_positive_int,
        default=2,
        help="members a clique needs to count toward N with --stop robust (default 2)",
    )
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--out", type=Path, default=Path("out/finextract"))
    p.add_argument("--seed", type=int, default=0)
    return p


SSCD_THRESHOLDS = (0.7, 0.6)  # the paper's, for SSCD copy-detection features
PIXEL_THRESHOLDS = (0.93, 0.9)  # pixel cosine: other writers' digits reach 0.9 (README, "instance" design)
_CONDITIONAL_BASE = "none"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _k_argument(text: str) -> float | str:
    if text.strip().lower() == _CONDITIONAL_BASE:
        return _CONDITIONAL_BASE
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'none', got {text!r}") from None


def _thresholds_argument(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not all(0 < v <= 1 for v in values):
        raise argparse.ArgumentTypeError(f"thresholds are cosine similarities in (0, 1], got {text!r}")
    return values


PAPER = (
    "Wu, Zhang, Wu (ICML 2025). Leveraging Model Guidance to Extract Training Data from Personalized Diffusion Models."
)


def audit(argv: list[str]) -> int:
    """Run ``python -m finextract audit``: FineXtract on local checkpoints, clustered and optionally scored.

    Parameters
    ----------
    argv : list of str
        The arguments after ``audit`` (see ``python -m finextract audit --help``).

    Returns
    -------
    int
        0 on success.
    """
    import torch

    from finextract.audit import extract
    from finextract.denoisers import without_adapters
    from finextract.experiments import _grid
    from finextract.guidance import ModelGuidanceSampler
    from finextract.images import load_images
    from finextract.loading import load_checkpoint
    from finextract.metrics import extraction_metrics

    args = _audit_parser().parse_args(argv)
    logging.basicConfig(level=os.environ.get("LOGLEVEL", "WARNING"))
    if (args.finetuned is None) == (args.lora is None):
        raise SystemExit("give exactly one of --finetuned (full fine-tune) or --lora (adapter on --pretrained)")
    # Read the owner's images before sampling, so a bad path fails in seconds, not after the generations.
    training = load_images(args.training_images) if args.training_images is not None else None
    seed_everything(args.seed)
    lora = args.lora is not None
    if lora:  # one UNet: the base model is the adapter switched off
        ft = load_checkpoint(args.pretrained, lora=args.lora)
        pre = without_adapters(ft)
    else:
        pre, ft = load_checkpoint(args.pretrained), load_checkpoint(args.finetuned)
    w = args.w if args.w is not None else (5.0 if lora else 3.0)
    k = (0.0 if lora else -0.02) if args.k is None else (None if args.k == _CONDITIONAL_BASE else args.k)
    thresholds = args.thresholds or (SSCD_THRESHOLDS if args.sscd else PIXEL_THRESHOLDS)
    kw = {}
    if args.class_label is not None:
        cond = args.class_label
    elif args.prompt is not None:
        text_ft: Any = ft  # a LatentUNet (prompts need a text encoder)
        base: Any = pre
        text_pre: Any = base.inner if lora else base  # without_adapters wraps the LatentUNet as .inner
        cond = text_ft.encode_prompt(args.prompt)
        kw["pretrained_cond"] = text_pre.encode_prompt(args.prompt)
    else:
        cond = torch.load(args.prompt_embeds, map_location="cpu")
    if args.null_embeds is not None:
        kw["null_cond"] = torch.load(args.null_embeds, map_location="cpu")
    n_gen = args.n_generations or 50 * args.n_train
    sampler = ModelGuidanceSampler(
        pre, ft, w=w, k=k, steps=args.steps, rescale_x0=args.rescale_x0, batch_size=args.batch_size, progress=True
    )
    res = extract(
        sampler,
        cond,
        n_train=args.n_train,
        n_generations=n_gen,
        generator=torch.Generator().manual_seed(args.seed),
        extractor=args.sscd,
        stop=args.stop,
        min_clique_size=args.min_clique_size,
        **kw,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    sizes = [len(c) for c in res.cluster.cliques[: args.n_train]]
    rows = [("extracted", res.extracted)]
    scores = None
    if training is not None:
        channels, height, width = (int(v) for v in res.extracted.shape[1:])
        train_images = training.fit((channels, height, width))
        scores = extraction_metrics(res.extracted, train_images, thresholds=thresholds, extractor=args.sscd)
        rows += [("training", train_images), ("its best match", res.extracted[torch.as_tensor(scores.nearest)])]
    save_figure(
        _grid(rows, "most likely training images (clique size: " + ", ".join(map(str, sizes)) + ")"),
        args.out / "audit.png",
    )
    report = {
        "pretrained": str(args.pretrained),
        "finetuned": str(args.finetuned or args.lora),
        "lora": lora,
        "w": w,
        "k": k,
        "steps": args.steps,
        "rescale_x0": args.rescale_x0,
        "n_generations": n_gen,
        "n_train": args.n_train,
        "features": str(args.sscd or "pixel cosine"),
        "stop": res.cluster.stop,
        "min_clique_size": res.cluster.min_clique_size,
        "stop_reason": res.cluster.stop_reason,
        "threshold": res.cluster.threshold,
        "thresholds_tried": res.cluster.thresholds,
        "threshold_trace": [step.as_dict() for step in res.cluster.trace],
        "qualifying_cliques": res.cluster.n_qualifying,
        "separation": res.cluster.separation,
        "clique_sizes": sizes,
        "selected_generation_indices": res.cluster.selected[: args.n_train].tolist(),
    }
    if scores is not None and training is not None:
        report.update(
            training_images=str(args.training_images),
            average_similarity=scores.similarity,
            a_esr_thresholds=list(thresholds),
            a_esr={str(t): v for t, v in scores.esr.items()},
            per_training_image=[
                {"name": name, "best_similarity": float(sim), "best_match_rank": int(rank) + 1}
                for name, sim, rank in zip(training.names, scores.best_similarity, scores.nearest, strict=True)
            ],
        )
    (args.out / "audit.json").write_text(json.dumps(report, indent=2))
    table = markdown_table(
        [(i + 1, g, s) for i, (g, s) in enumerate(zip(report["selected_generation_indices"], sizes, strict=True))],
        headers=["rank", "generation", "clique size"],
    )
    text = (
        f"FineXtract audit: w={w}, k={k}, {n_gen} generations, N={args.n_train}; stopping similarity threshold "
        f"{res.cluster.threshold:.2f}. Large cliques = many generations converging on one image, the signature "
        "of a memorised training image (see audit.png).\n\n"
        + table
        + "\n\n"
        + _trace_section(res.cluster, args.n_train)
    )
    if scores is not None:
        text += _training_section(report, thresholds)
    (args.out / "audit.md").write_text(text)
    print(f"finextract audit wrote {args.out / 'audit.png'}, audit.md, audit.json")  # the CLI's own report
    return 0


RULES = {
    "robust": "robust rule (cliques of {m}+ members count toward N; the threshold whose N largest cliques are best "
    "separated from the other generations is kept; separation = smallest similarity inside a clique minus the "
    "largest similarity from a member to a generation outside it, averaged over the N largest cliques)",
    "paper": "paper rule (the first threshold with at least N cliques, singletons included; the official code's "
    "selection)",
}


def _trace_section(cluster: ClusterResult, n_train: int) -> str:
    """The stopping rule in words and the per-threshold trace as a markdown table."""
    rows: list[list[Any]] = []
    for st in cluster.trace:
        if st.n_cliques is None:
            rows.append([f"{st.threshold:.2f}", "budget exceeded", "", "", ""])
            continue
        shown = ", ".join(map(str, st.sizes[:12])) + (", ..." if len(st.sizes) > 12 else "")
        sep = "" if st.separation is None else f"{st.separation:.3f}"
        mark = " (kept)" if st.threshold == cluster.threshold else ""
        rows.append([f"{st.threshold:.2f}{mark}", st.n_cliques, st.n_qualifying, shown, sep])
    headers = [
        "threshold",
        "cliques",
        f"cliques of {cluster.min_clique_size}+",
        "their sizes",
        f"separation of the {n_train} largest",
    ]
    return (
        f"Stopping rule: {RULES[cluster.stop].format(m=cluster.min_clique_size)}. Kept threshold "
        f"{cluster.threshold:.2f}: {cluster.stop_reason}. Thresholds tried:\n\n"
        + markdown_table(rows, headers=headers)
        + "\n"
    )


def _training_section(report: dict, thresholds: tuple[float, ...]) -> str:
    esr = ", ".join(f"A-ESR@{t:g} {report['a_esr'][str(t)]:.3f}" for t in thresholds)
    rows: list[list[Any]] = []
    for row in report["per_training_image"]:
        shown = math.floor(row["best_similarity"] * 1000) / 1000  # rounded down, so 0.8995 never reads as 0.900
        marks = ["yes" if row["best_similarity"] >= t else "no" for t in thresholds]
        rows.append([row["name"], f"{shown:.3f}", row["best_match_rank"], *marks])
    headers = ["training image", "best similarity", "best match (rank)", *[f"≥ {t:g}" for t in thresholds]]
    lines = [
        "",
        f"Against the {len(report['per_training_image'])} training images in {report['training_images']} "
        f"({report['features']}): AS {report['average_similarity']:.3f}, {esr}. A training image counts as "
        "extracted at a threshold when its best match among the extracted images reaches it (audit.png, "
        "bottom rows)."
        + (
            ""
            if report["features"] != "pixel cosine"
            else " Pixel cosine: images of the same concept that were never trained on can score above these "
            "thresholds (on 8x8 digits another writer's 3 scores 0.92-0.95), so read A-ESR as an upper bound; "
            "recalibrate by scoring such images, or pass --sscd."
        ),
        "",
        markdown_table(rows, headers=headers),
    ]
    return "\n".join(lines) + "\n"


def _seeds_argument(text: str) -> list[int]:
    try:
        return parse_seeds(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _reproduce_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--design",
        choices=DESIGNS,
        default=DEFAULT_DESIGN,
        help=f"experiment design (default {DEFAULT_DESIGN}; see the module docstring)",
    )
    parser.add_argument(
        "--seeds",
        type=_seeds_argument,
        default=None,
        help="comma-separated new test seeds, e.g. 4,5; needs --calibration",
    )
    parser.add_argument(
        "--calibration",
        type=Path,
        default=None,
        help="an earlier run's reproduce.json whose calibrated settings (and cached models) are reused",
    )


def _reproduce(ctx: RunContext) -> None:
    seeds, calibration = ctx.options["seeds"], ctx.options["calibration"]
    frozen = {}
    if seeds is not None or calibration is not None:
        if seeds is None or calibration is None:
            raise SystemExit("--seeds and --calibration go together: new test seeds reuse an earlier run's settings")
        if ctx.quick:
            raise SystemExit("--seeds/--calibration reuse a full run's settings; --quick changes the models")
        if not calibration.is_file():
            raise SystemExit(f"--calibration: {calibration} is not a file (give an earlier run's reproduce.json)")
        frozen = {"seeds": seeds, "calibration": calibration}
    from finextract.experiments import reproduce

    reproduce(ctx, design=ctx.options["design"], **frozen)


def _demo(ctx: RunContext) -> None:
    from finextract.experiments import demo

    demo(ctx)


AUDIT = ExtraCommand("extract the likely fine-tuning images of a fine-tuned model from local diffusers folders", audit)


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m finextract``: ``demo``, ``reproduce`` or ``audit``.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code.
    """
    return run_cli(
        "finextract",
        demo=_demo,
        reproduce=_reproduce,
        argv=argv,
        description=__doc__,
        reproduce_options=_reproduce_options,
        extra_commands={"audit": AUDIT},
        paper=PAPER,
    )


if __name__ == "__main__":
    raise SystemExit(main())
