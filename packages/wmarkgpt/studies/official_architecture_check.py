"""Check wmarkgpt's model against the official WMarkGPT code (Apache-2.0), which is run, not vendored.

Usage (from the repository root)::

    git --git-dir=<mirror of TanSongBai/WMarkGPT> archive 2d812b4 llm | tar x -C /tmp/wmoff
    python packages/wmarkgpt/studies/official_architecture_check.py /tmp/wmoff [--write-golden]

It instantiates the official ``MPLUGOwl2LlamaModel`` on a tiny configuration (patching the few names that
transformers 5 removed), writes its ``state_dict`` names and shapes (``--write-golden``: to
``tests/data/official_state_dict_tiny.json``), loads the same weights into ``WMarkGPTForCausalLM`` and
prints the largest logit difference on a prompt with one image.
"""

from __future__ import annotations

import argparse
import json
import sys
import types
from pathlib import Path

import torch

TINY = {"visual_config": {
    "visual_model": {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
                     "image_size": 16, "patch_size": 8, "layer_norm_eps": 1e-6},
    "visual_abstractor": {"num_learnable_queries": 4, "hidden_size": 16, "num_hidden_layers": 2,
                          "num_attention_heads": 2, "intermediate_size": 24, "encoder_hidden_size": 16,
                          "grid_size": 2, "layer_norm_eps": 1e-6}},
    "vocab_size": 50, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 4, "max_position_embeddings": 128}


def _official(root: Path):
    sys.path.insert(0, str(root))
    sys.modules.setdefault("icecream", types.SimpleNamespace(ic=print))
    import transformers.pytorch_utils as pu
    import transformers.utils as tu

    for name in ("find_pruneable_heads_and_indices", "prune_linear_layer"):
        if not hasattr(pu, name):
            setattr(pu, name, lambda *a, **k: None)
    for name in ("add_start_docstrings", "add_start_docstrings_to_model_forward", "replace_return_docstrings"):
        if not hasattr(tu, name):
            setattr(tu, name, lambda *a, **k: (lambda f: f))
    import llm.model.modeling_llama as ml
    import llm.model.visual_encoder as ve
    from llm.model.configuration_wmark_gpt import MPLUGOwl2Config
    from llm.model.modeling_wmark_gpt import MPLUGOwl2LlamaModel

    def init_rope(self):
        self.rotary_emb = ml.LlamaRotaryEmbedding(self.head_dim, max_position_embeddings=self.max_position_embeddings,
                                                  base=10000.0)

    ml.LlamaAttention._init_rope = init_rope
    ve.MplugOwlVisualAbstractorModel.invert_attention_mask = (
        lambda self, m: (1.0 - m[:, None, None, :].float()) * torch.finfo(torch.float32).min)
    ve.MplugOwlVisualAbstractorModel.get_head_mask = lambda self, h, n: [None] * n
    cfg = MPLUGOwl2Config(**TINY)
    cfg.rope_theta = 10000.0
    return MPLUGOwl2LlamaModel(cfg).eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("official_root", type=Path)
    parser.add_argument("--write-golden", action="store_true")
    args = parser.parse_args()
    from wmarkgpt.modeling import WMarkGPTConfig, WMarkGPTForCausalLM

    torch.manual_seed(0)
    off = _official(args.official_root)
    head = torch.nn.Linear(TINY["hidden_size"], TINY["vocab_size"], bias=False)
    names = [("model." + k, list(v.shape)) for k, v in off.state_dict().items()]
    names.append(("lm_head.weight", list(head.weight.shape)))
    if args.write_golden:
        out = Path(__file__).resolve().parents[1] / "tests" / "data" / "official_state_dict_tiny.json"
        out.write_text(json.dumps({"config": TINY, "state_dict": names}, indent=1))
    ours = WMarkGPTForCausalLM(WMarkGPTConfig(**TINY)).eval()
    state = {"model." + k: v for k, v in off.state_dict().items()}
    state["lm_head.weight"] = head.weight
    ours.load_state_dict(state, strict=True)
    same_names = [(k, list(v.shape)) for k, v in ours.state_dict().items()] == names
    ids = torch.tensor([[1, 5, 7, -200, 9, 11, 3]])
    img = torch.randn(1, 3, 16, 16)
    with torch.no_grad():
        feats = off.visual_abstractor(encoder_hidden_states=off.vision_model(img).last_hidden_state).last_hidden_state
        embeds = torch.cat([off.embed_tokens(ids[0, :3]), feats[0], off.embed_tokens(ids[0, 4:])])[None]
        modality = torch.cat([torch.zeros(3), torch.ones(feats.shape[1]), torch.zeros(3)]).long()[None]
        hidden = off(input_ids=None, modality_indicators=modality, inputs_embeds=embeds,
                     attention_mask=torch.ones(modality.shape, dtype=torch.bool))[0]
        diff = (head(hidden) - ours(input_ids=ids, images=img).logits).abs().max().item()
    print(json.dumps({"names_and_shapes_equal": same_names, "n_tensors": len(names), "max_logit_diff": diff}))


if __name__ == "__main__":
    main()
