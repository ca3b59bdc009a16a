"""Benchmark the one-pass visibility score against describing and parsing, on a tiny model, in one process.

Also times the recomputation of the 500 shipped WQA-Real scores (``predict_score`` + SRCC/PLCC from the
stored logits) and the tiny model scoring 500 images. Writes JSON and prints a markdown table.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from icml25_shared.bench import BenchmarkReport, compare

from wmarkgpt.analyzer import WatermarkAnalyzer, parse_visibility
from wmarkgpt.data import DESCRIBE_QUESTION, make_synthetic_dataset, read_qscore
from wmarkgpt.experiments import find_data_dir
from wmarkgpt.metrics import correlation
from wmarkgpt.modeling import WMarkGPTForCausalLM, tiny_config
from wmarkgpt.processing import (
    build_image_processor,
    build_word_tokenizer,
    mplug_owl2_prompt,
    preprocess_images,
    tokenizer_image_token,
)
from wmarkgpt.scoring import predict_score


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("out/wmarkgpt/benchmark.json"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    report = BenchmarkReport("wmarkgpt", packages=["wmarkgpt", "torch", "transformers", "nltk", "rouge"])
    items = make_synthetic_dataset(32, size=32, random_state=0)
    tok = build_word_tokenizer([x.question + " " + x.answer for x in items] + ["USER: ASSISTANT:"])
    torch.manual_seed(0)
    model = WMarkGPTForCausalLM(tiny_config(vocab_size=len(tok), hidden_size=64, image_size=32, patch_size=4,
                                            vision_hidden_size=32, num_learnable_queries=8,
                                            eos_token_id=tok.eos_token_id))
    n_new = 48  # an untrained model rarely stops early: every description is 48 tokens
    an = WatermarkAnalyzer(model, tok, build_image_processor(32), max_new_tokens=n_new)
    images = [x.image for x in items[:8]]
    report.add(compare(lambda: an.visibility_score(images, batch_size=1),
                       lambda: [parse_visibility(t) for t in an.generate(images, batch_size=1)],
                       label="8 images, one at a time", ours_name="visibility_score", peer_name="describe+parse",
                       repeats=args.repeats, sizes={"images": 8, "image_size": 32, "max_new_tokens": n_new,
                                                    "threads": args.threads}))
    processor = build_image_processor(32)
    prompt = tokenizer_image_token(mplug_owl2_prompt(DESCRIBE_QUESTION), tok)

    @torch.no_grad()
    def recompute() -> list[list[int]]:
        # greedy decoding that feeds the whole sequence, image included, at every step (no key/value cache)
        ids, px, new = torch.tensor([prompt] * len(images)), preprocess_images(images, processor), []
        for _ in range(n_new):
            nxt = model(input_ids=ids, images=px).logits[:, -1].argmax(-1)
            new.append(nxt)
            ids = torch.cat([ids, nxt[:, None]], dim=1)
        return torch.stack(new, dim=1).tolist()

    report.add(compare(lambda: an.generate(images), recompute, label="describe 8 images, one batch",
                       ours_name="generate (key/value cache)", peer_name="recompute every step", repeats=args.repeats,
                       sizes={"images": 8, "image_size": 32, "max_new_tokens": n_new, "threads": args.threads}))
    many = [x.image for x in make_synthetic_dataset(500, size=32, random_state=1)]
    t0 = time.perf_counter()
    an.visibility_score(many)
    tiny_500 = time.perf_counter() - t0
    q = read_qscore(find_data_dir() / "WQA-Real_wmarkgpt_qscore.json.gz")

    def shipped() -> float:
        pred = [predict_score(v["logits"]) for v in q.values()]
        return correlation(pred, [v["gt_score"] for v in q.values()]).srcc

    report.add(compare(shipped, None, label="500 shipped WQA-Real logits", ours_name="predict_score + SRCC/PLCC",
                       repeats=args.repeats, sizes={"items": len(q)},
                       metrics={"srcc": shipped(), "tiny model, 500 images, visibility_score s": tiny_500}))
    report.write_json(args.out)
    print(report.to_markdown())


if __name__ == "__main__":
    main()
