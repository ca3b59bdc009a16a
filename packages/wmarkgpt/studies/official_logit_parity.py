import sys, json; sys.path.insert(0, '/tmp/wmoff'); sys.path.insert(0, '/work/main/packages/wmarkgpt/src')
exec(open('/tmp/wmoff/gen_names.py').read().split("m = MPLUGOwl2LlamaModel(cfg)")[0])
import torch
from llm.model.modeling_wmark_gpt import MPLUGOwl2LlamaForCausalLM
import llm.model.visual_encoder as ve
ve.MplugOwlVisualAbstractorModel.invert_attention_mask = lambda self, m: (1.0 - m[:, None, None, :].float()) * torch.finfo(torch.float32).min
ve.MplugOwlVisualAbstractorModel.get_head_mask = lambda self, h, n: [None] * n
from wmarkgpt.modeling import WMarkGPTForCausalLM, WMarkGPTConfig
torch.manual_seed(0)
off = MPLUGOwl2LlamaModel(cfg); head = torch.nn.Linear(32, 50, bias=False)
c = json.load(open('/tmp/wmoff/names.json'))['config']
ours = WMarkGPTForCausalLM(WMarkGPTConfig(**c)).eval()
sd = {"model." + k: v for k, v in off.state_dict().items()}; sd["lm_head.weight"] = head.weight
print(ours.load_state_dict(sd, strict=True))
print(list(ours.state_dict()) == [n for n, _ in json.load(open('/tmp/wmoff/names.json'))['state_dict']])
off.eval()
class W(MPLUGOwl2LlamaForCausalLM):
    def __init__(s): torch.nn.Module.__init__(s)
ids = torch.tensor([[1, 5, 7, -200, 9, 11, 3]]); img = torch.randn(1, 3, 16, 16)
# official path
import types
fake = types.SimpleNamespace()
w = MPLUGOwl2LlamaForCausalLM.__new__(MPLUGOwl2LlamaForCausalLM)
torch.nn.Module.__init__(w); w.model = off; w.lm_head = head; w.config = cfg
w.get_model = lambda: off
with torch.no_grad():
    _, mi, am, pkv, emb, _ = MPLUGOwl2LlamaForCausalLM.prepare_inputs_labels_for_multimodal(w, ids, torch.ones_like(ids), None, None, img) if False else (None,)*6
    feats_off = off.visual_abstractor(encoder_hidden_states=off.vision_model(img).last_hidden_state).last_hidden_state
    feats_ours = ours.encode_images(img)
    print("visual max diff", (feats_off - feats_ours).abs().max().item())
    e = torch.cat([off.embed_tokens(ids[0, :3]), feats_off[0], off.embed_tokens(ids[0, 4:])])[None]
    mod = torch.cat([torch.zeros(3), torch.ones(feats_off.shape[1]), torch.zeros(3)]).long()[None]
    out = off(input_ids=None, modality_indicators=mod, inputs_embeds=e, attention_mask=torch.ones(mod.shape, dtype=torch.bool))
    lo = head(out[0]); lu = ours(input_ids=ids, images=img).logits
    print("logit max diff", (lo - lu).abs().max().item(), lo.abs().max().item())
