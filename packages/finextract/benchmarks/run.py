"""Benchmark finextract against diffusers in one process; writes JSON and prints a markdown table.

Rows: (1) our CFG baseline sampler vs diffusers' StableDiffusionPipeline on the same tiny random SD components
and latents (time + max |difference| of final latents); (2) FineXtract model guidance with a LoRA adapter
toggled on one UNet vs the same pipeline's CFG (both two UNet evaluations per step); (3) cluster_extract on
planted clusters (time, number of planted clusters recovered).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from icml25_shared.bench import BenchmarkReport, compare

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("out/finextract/benchmark.json"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n", type=int, default=8, help="images per sampler call")
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()

    from test_cluster_metrics import _planted
    from test_sd_path import _components, _pipeline

    from finextract import CFGSampler, LatentUNet, ModelGuidanceSampler, add_lora, cluster_extract, without_adapters

    report = BenchmarkReport("finextract", packages=["finextract", "diffusers", "peft", "torch", "networkx"])
    unet, vae, text, sched = _components()
    pipe = _pipeline(unet, vae, text, sched)
    g = torch.Generator().manual_seed(0)
    emb, neg = torch.randn(1, 8, 16, generator=g), torch.randn(1, 8, 16, generator=g)
    lat = torch.randn(args.n, 4, 8, 8, generator=g)

    def peer():
        return pipe(
            prompt_embeds=emb.expand(args.n, -1, -1),
            negative_prompt_embeds=neg.expand(args.n, -1, -1),
            latents=lat,
            num_inference_steps=args.steps,
            guidance_scale=3.0,
            output_type="latent",
        ).images

    den = LatentUNet(unet, vae=vae, scheduler=sched)
    cfg = CFGSampler(den, guidance_scale=3.0, steps=args.steps)

    def ours():
        return cfg.sample(emb, latents=lat, null_cond=neg).samples

    diff = float((ours() - peer()).abs().max())
    sizes = {
        "images": args.n,
        "ddim_steps": args.steps,
        "latent": "4x8x8",
        "unet_params": sum(p.numel() for p in unet.parameters()),
    }
    report.add(
        compare(
            ours,
            peer,
            label="CFG sampling, tiny SD",
            ours_name="finextract.CFGSampler",
            peer_name="diffusers.StableDiffusionPipeline",
            repeats=args.repeats,
            sizes=sizes,
            metrics={"max_abs_diff_latents": diff},
        )
    )

    ft_unet, *_ = _components()
    add_lora(ft_unet, rank=4, random_state=0)
    ft = LatentUNet(ft_unet, vae=vae, scheduler=sched)
    fx = ModelGuidanceSampler(without_adapters(ft), ft, w=5.0, k=0.0, steps=args.steps)
    report.add(
        compare(
            lambda: fx.sample(emb, latents=lat, null_cond=neg).samples,
            peer,
            label="FineXtract (LoRA toggled) vs pipeline CFG, tiny SD",
            ours_name="finextract.ModelGuidanceSampler",
            peer_name="diffusers.StableDiffusionPipeline",
            repeats=args.repeats,
            sizes=sizes,
        )
    )

    for n_noise in (40, 120):
        feats, labels = _planted(n_noise=n_noise)
        res = cluster_extract(feats, 6)
        found = len({int(labels[i]) for i in res.selected[:6]} - {-1})
        report.add(
            compare(
                lambda f=feats: cluster_extract(f, 6),
                None,
                label=f"cluster_extract, {len(feats)} gens",
                ours_name="finextract.cluster_extract",
                repeats=args.repeats,
                sizes={"generations": len(feats), "dim": feats.shape[1], "n_train": 6},
                metrics={
                    "planted_clusters_recovered": found,
                    "threshold": res.threshold,
                    "thresholds_tried": len(res.thresholds),
                },
            )
        )
    report.write_json(args.out)
    print(report.to_markdown())


if __name__ == "__main__":
    main()
