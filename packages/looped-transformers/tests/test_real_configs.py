"""Real configurations: grouped-query heads, biases and head_dim equal Llama and Qwen2; clear errors for bad input."""

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

from looped_transformers import LoopedConfig, LoopedForCausalLM

LLAMA_GQA = {"vocab_size": 40, "hidden_size": 48, "intermediate_size": 64, "num_hidden_layers": 2,
             "num_attention_heads": 6, "num_key_value_heads": 2, "max_position_embeddings": 64,
             "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0}}


def _unrolled_copy(looped, reference_cls, reference_config, r):
    """Load the looped model's k blocks into an unrolled reference with r * k layers; return the reference."""
    k = looped.config.n_blocks
    fields = {**reference_config.to_dict(), "num_hidden_layers": r * k}
    fields.pop("layer_types", None)  # Qwen2 lists one type per layer: rebuilt for r * k layers
    reference = reference_cls(reference_config.__class__(**fields)).eval()
    ours = looped.state_dict()
    theirs = {name: value for name, value in ours.items() if not name.startswith("model.layers.")}
    for i in range(r * k):
        for name, value in ours.items():
            prefix = f"model.layers.{i % k}."
            if name.startswith(prefix):
                theirs[f"model.layers.{i}." + name[len(prefix):]] = value
    missing, unexpected = reference.load_state_dict(theirs, strict=False)
    assert not unexpected and all("rotary" in m for m in missing), (missing, unexpected)
    return reference


def _randomise(model, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():  # biases and norm weights away from their zero / one initialisation
            if p.dim() == 1:
                p.add_(0.3 * torch.randn(p.shape, generator=g))


@pytest.mark.parametrize(("reference_cls", "config"), [
    (LlamaForCausalLM, LlamaConfig(**LLAMA_GQA)),                                    # grouped-query, rope 5e5
    (LlamaForCausalLM, LlamaConfig(**{**LLAMA_GQA, "head_dim": 16, "attention_bias": True, "mlp_bias": True})),
    (Qwen2ForCausalLM, Qwen2Config(**{k: v for k, v in LLAMA_GQA.items()})),          # biased q/k/v, unbiased o
])
@pytest.mark.parametrize("r", [1, 3])
def test_llama_block_equals_llama_and_qwen2_with_copied_layers(reference_cls, config, r):
    looped_config = LoopedConfig.from_pretrained_config(config, n_loops=r)
    torch.manual_seed(0)
    looped = LoopedForCausalLM(looped_config).eval()
    _randomise(looped)
    reference = _unrolled_copy(looped, reference_cls, config, r)
    attn = looped.model.layers[0].self_attn
    assert attn.k_proj.out_features == config.num_key_value_heads * looped_config.head_width  # really grouped
    assert (attn.q_proj.bias is not None) == (reference.model.layers[0].self_attn.q_proj.bias is not None)
    assert (attn.o_proj.bias is not None) == (reference.model.layers[0].self_attn.o_proj.bias is not None)
    ids = torch.randint(0, 40, (2, 11), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ours, theirs = looped(ids).logits, reference(ids).logits
    assert (ours - theirs).abs().max() < 1e-5
    assert ours.abs().max() > 0.01
    # the cache path too: greedy tokens with and without the looped cache equal the reference's
    with torch.no_grad():
        cached = looped.generate(ids[:1, :5], max_new_tokens=6, do_sample=False)
        expected = reference.generate(ids[:1, :5], max_new_tokens=6, do_sample=False)
    assert torch.equal(cached, expected)


def test_from_pretrained_config_copies_the_fields_and_takes_overrides():
    cfg = LoopedConfig.from_pretrained_config(LlamaConfig(**{**LLAMA_GQA, "tie_word_embeddings": True}), n_loops=4,
                                              n_blocks=1, timestep="tmlt")
    assert (cfg.block, cfg.n_loops, cfg.n_blocks, cfg.timestep) == ("llama", 4, 1, "tmlt")
    assert (cfg.num_key_value_heads, cfg.head_width, cfg.rope_theta, cfg.tie_word_embeddings) == (2, 8, 5e5, True)
    assert (cfg.attention_bias, cfg.attention_output_bias, cfg.mlp_bias) == (False, False, False)


@pytest.mark.parametrize(("config", "match"), [
    (LlamaConfig(**{**LLAMA_GQA, "rope_parameters": {"rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0,
                                                     "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                     "original_max_position_embeddings": 32}}), "rope_type='llama3'"),
    (LlamaConfig(**{**LLAMA_GQA, "hidden_act": "gelu"}), "hidden_act='gelu'"),
    (LlamaConfig(**{**LLAMA_GQA, "attention_dropout": 0.1}), "attention_dropout=0.1"),
    (Qwen2Config(**{**LLAMA_GQA, "use_sliding_window": True, "sliding_window": 8, "max_window_layers": 0}),
     "sliding-window"),
])
def test_from_pretrained_config_refuses_what_it_would_drop(config, match):
    with pytest.raises(ValueError, match=match):
        LoopedConfig.from_pretrained_config(config, n_loops=2)


def test_from_pretrained_config_refuses_other_families():
    from transformers import GPT2Config

    with pytest.raises(ValueError, match="model_type 'gpt2'"):
        LoopedConfig.from_pretrained_config(GPT2Config(), n_loops=2)
    with pytest.raises(TypeError, match="transformers configuration"):
        LoopedConfig.from_pretrained_config({"hidden_size": 8}, n_loops=2)


def _model(**kwargs):
    torch.manual_seed(0)
    return LoopedForCausalLM(LoopedConfig(vocab_size=16, hidden_size=16, num_attention_heads=2,
                                          max_position_embeddings=12, **kwargs)).eval()


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda m: m(torch.zeros(1, 4)), TypeError, "input_ids must be an integer tensor"),                # float ids
    (lambda m: m(torch.tensor([[1, 16]])), ValueError, r"token ids must lie in \[0, 16\)"),          # out of vocab
    (lambda m: m(torch.zeros(4, dtype=torch.long)), ValueError, r"input_ids must have shape \(batch, seq\)"),
    (lambda m: m(torch.zeros(1, 4, dtype=torch.long), n_loops=2.0), TypeError, "n_loops must be an int"),
    (lambda m: m(torch.zeros(1, 4, dtype=torch.long), n_loops="4"), TypeError, "n_loops must be an int"),
    (lambda m: m.generate(torch.zeros(1, 4, dtype=torch.long), max_new_tokens=20), ValueError,
     "24 positions, above max_position_embeddings=12"),
    (lambda m: m(torch.zeros(1, 4, dtype=torch.long), labels=torch.zeros(1, 5, dtype=torch.long)), ValueError,
     "labels must have the shape of input_ids"),
    (lambda m: m(torch.zeros(1, 4, dtype=torch.long), labels=torch.zeros(1, 4)), TypeError,
     "labels must be integer token ids"),
    (lambda m: m(torch.zeros(1, 4, dtype=torch.long), labels=torch.zeros(1, 4, dtype=torch.long), loss_loops=1.5),
     TypeError, "loss_loops must be an int"),
    (lambda m: m(torch.zeros(1, 4, dtype=torch.long), attention_mask=torch.ones(1, 3)), ValueError,
     r"attention_mask must have shape \(batch, cache \+ seq\)"),
    (lambda m: m(inputs_embeds=torch.zeros(1, 4, 8)), ValueError, r"inputs_embeds must have shape \(batch, seq, 16\)"),
    (lambda m: m(torch.zeros(1, 4, dtype=torch.long), position_ids=torch.zeros(1, 3, dtype=torch.long)), ValueError,
     "position_ids must have shape"),
    (lambda m: m(torch.zeros(1, 4, dtype=torch.long, device="meta")), ValueError, "is on meta but the model is on cpu"),
])
def test_bad_inputs_give_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(_model())
