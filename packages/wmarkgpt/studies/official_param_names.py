import sys, json; sys.path.insert(0, '.')
import transformers.pytorch_utils as pu
for n in ("find_pruneable_heads_and_indices", "prune_linear_layer"):
    if not hasattr(pu, n): setattr(pu, n, lambda *a, **k: None)
import transformers.utils as tu
for n in ("add_start_docstrings", "add_start_docstrings_to_model_forward"):
    if not hasattr(tu, n): setattr(tu, n, lambda *a, **k: (lambda f: f))
if not hasattr(tu, "replace_return_docstrings"): tu.replace_return_docstrings = lambda *a, **k: (lambda f: f)
from llm.model.modeling_wmark_gpt import MPLUGOwl2LlamaModel
from llm.model.configuration_wmark_gpt import MPLUGOwl2Config
import llm.model.modeling_llama as ml
def _init_rope(self):
    self.rotary_emb = ml.LlamaRotaryEmbedding(self.head_dim, max_position_embeddings=self.max_position_embeddings, base=10000.0)
ml.LlamaAttention._init_rope = _init_rope
import torch
vc = {"visual_model": dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                           image_size=16, patch_size=8, layer_norm_eps=1e-6),
      "visual_abstractor": dict(num_learnable_queries=4, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=24, encoder_hidden_size=16, grid_size=2, layer_norm_eps=1e-6)}
cfg = MPLUGOwl2Config(visual_config=vc, vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=128)
cfg.rope_theta = 10000.0
m = MPLUGOwl2LlamaModel(cfg)
head = torch.nn.Linear(32, 50, bias=False)
names = [(("model." + k), list(v.shape)) for k, v in m.state_dict().items()] + [("lm_head.weight", list(head.weight.shape))]
json.dump({"config": {"visual_config": vc, "vocab_size": 50, "hidden_size": 32, "intermediate_size": 64,
                      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4,
                      "max_position_embeddings": 128}, "state_dict": names}, open("names.json", "w"), indent=1)
print(len(names)); print("\n".join(n for n, _ in names))
