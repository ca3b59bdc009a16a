"""LoopedForCausalLM: init identity, parameter counts, the Llama and diffusers identities, generation, I/O, errors."""

import math

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

from looped_transformers import LoopedConfig, LoopedForCausalLM, timestep_embedding, tmlt_extra_parameters

TINY = {"vocab_size": 24, "hidden_size": 32, "num_attention_heads": 2}


def make(seed=0, **kwargs):
    torch.manual_seed(seed)
    return LoopedForCausalLM(LoopedConfig(**{**TINY, **kwargs})).eval()


def randomise_modulation(model, seed=1, scale=0.3):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for block in model.model.layers:
            for p in block.modulation.parameters():
                p.copy_(torch.randn(p.shape, generator=g) * scale)


@pytest.mark.parametrize("block", ["gpt", "llama"])
@pytest.mark.parametrize("r", [1, 4, 16])
def test_tmlt_at_init_is_the_identity_exactly(block, r):
    model = make(timestep="tmlt", block=block)
    ids = torch.randint(0, 24, (3, 9), generator=torch.Generator().manual_seed(r))
    with torch.no_grad():
        out = model(ids, n_loops=r, output_loop_states=True)
        embedded = model.model.embed(ids)[0]
        expected = model.lm_head(model.model.norm(embedded))
    assert torch.equal(out.logits, expected)
    assert all(torch.equal(h, embedded) for h in out.loop_states)
    # with random modulation the loops do change the state
    randomise_modulation(model)
    with torch.no_grad():
        assert not torch.allclose(model(ids, n_loops=r).logits, expected, atol=1e-3)


def test_zero_initialised_layer_gets_gradients_and_the_timestep_mlp_moves_after_one_step():
    model = make(timestep="tmlt", n_loops=4).train()
    ids = torch.randint(0, 24, (4, 10), generator=torch.Generator().manual_seed(0))
    loss = model(ids, labels=ids).loss
    loss.backward()
    mod = model.model.layers[0].modulation
    assert mod.weight.grad.abs().sum() > 0 and mod.bias.grad.abs().sum() > 0
    embedder = model.model.timestep_embedder.mlp
    # gamma = 0 at init: the timestep MLP only reaches the loss through the zero layer
    assert all(p.grad is None or p.grad.abs().sum() == 0 for p in embedder.parameters())
    before = [p.detach().clone() for p in embedder.parameters()]
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    opt.step()
    opt.zero_grad()
    model(ids, labels=ids).loss.backward()
    assert sum(p.grad.abs().sum() for p in embedder.parameters()) > 0
    opt.step()
    assert any(not torch.equal(a, p) for a, p in zip(before, embedder.parameters(), strict=True))


@pytest.mark.parametrize("timestep", ["none", "tmlt", "learned"])
def test_parameter_count_does_not_depend_on_loops(timestep):
    counts = {r: sum(p.numel() for p in make(timestep=timestep, n_loops=r).parameters()) for r in (1, 4, 16)}
    assert len(set(counts.values())) == 1, counts


@pytest.mark.parametrize(("k", "shift"), [(1, False), (2, False), (2, True)])
def test_tmlt_extra_parameters_match_the_closed_form(k, shift):
    d = TINY["hidden_size"]
    none = sum(p.numel() for p in make(n_blocks=k).parameters())
    tmlt = make(n_blocks=k, timestep="tmlt", shift=shift)
    assert sum(p.numel() for p in tmlt.parameters()) - none == tmlt_extra_parameters(d, k, shift=shift)
    m = 6 if shift else 4
    assert sum(p.numel() for p in tmlt.model.timestep_embedder.parameters()) == 256 * d + d + d * d + d
    assert sum(p.numel() for b in tmlt.model.layers for p in b.modulation.parameters()) == k * (m * d * d + m * d)


def test_sinusoid_equals_diffusers():
    from diffusers.models.embeddings import get_timestep_embedding

    t = torch.tensor([0.0, 1.0, 7.0, 99.0, 350.0])
    ours = timestep_embedding(t, 256)
    theirs = get_timestep_embedding(t, 256, flip_sin_to_cos=True, downscale_freq_shift=0)
    assert torch.equal(ours, theirs)
    # the closed form: frequencies 10000 ** (-i / 128), cos half first
    assert ours[3, 0].item() == pytest.approx(math.cos(99.0)) and ours[3, 128].item() == pytest.approx(math.sin(99.0))
    assert ours[2, 127].item() == pytest.approx(math.cos(7.0 * 10000 ** (-127 / 128)), abs=1e-6)


@pytest.mark.parametrize("r", [1, 3])
def test_llama_block_without_timestep_equals_transformers_llama_with_copied_layers(r):
    model = make(block="llama", n_loops=r, n_blocks=2, intermediate_size=48)
    with torch.no_grad():  # non-trivial norm weights
        for p in model.parameters():
            if p.dim() == 1:
                p.add_(0.2 * torch.randn_like(p))
    k = 2
    ref = LlamaForCausalLM(LlamaConfig(vocab_size=24, hidden_size=32, num_attention_heads=2, num_key_value_heads=2,
                                       intermediate_size=48, num_hidden_layers=r * k, max_position_embeddings=256,
                                       rms_norm_eps=1e-6, rope_parameters={"rope_type": "default",
                                                                           "rope_theta": 10000.0})).eval()
    ours = model.state_dict()
    theirs = {"model.embed_tokens.weight": ours["model.embed_tokens.weight"], "model.norm.weight":
              ours["model.norm.weight"], "lm_head.weight": ours["lm_head.weight"]}
    for i in range(r * k):
        j = i % k
        for name in ("input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.q_proj.weight",
                     "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight",
                     "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"):
            theirs[f"model.layers.{i}.{name}"] = ours[f"model.layers.{j}.{name}"]
    missing, unexpected = ref.load_state_dict(theirs, strict=False)
    assert not unexpected and all("rotary" in m for m in missing), (missing, unexpected)
    ids = torch.randint(0, 24, (2, 13), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        a, b = model(ids).logits, ref(ids).logits
    assert (a - b).abs().max() < 1e-5
    assert a.abs().max() > 0.01  # not a trivial zero


@pytest.mark.parametrize(("block", "timestep", "injection"), [("gpt", "tmlt", False), ("llama", "tmlt", True),
                                                              ("gpt", "learned", True), ("llama", "none", False)])
def test_greedy_generation_with_cache_equals_without(block, timestep, injection):
    model = make(block=block, timestep=timestep, input_injection=injection, n_loops=3, seed=4)
    if timestep == "tmlt":
        randomise_modulation(model, scale=1.0)
    ids = torch.randint(0, 24, (2, 5), generator=torch.Generator().manual_seed(5))
    kwargs = {"max_new_tokens": 32, "do_sample": False, "n_loops": 5}
    cached = model.generate(ids, use_cache=True, **kwargs)
    uncached = model.generate(ids, use_cache=False, **kwargs)
    assert cached.shape == (2, 37)
    assert torch.equal(cached, uncached)
    assert len(set(cached[0, 5:].tolist())) > 1  # the continuation is not one repeated token


def test_incremental_forward_with_cache_matches_full_forward_logits():
    model = make(block="llama", timestep="tmlt", n_loops=4, seed=2)
    randomise_modulation(model)
    ids = torch.randint(0, 24, (2, 12), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        full = model(ids).logits
        first = model(ids[:, :7], use_cache=True)
        rest = model(ids[:, 7:], cache=first.cache, use_cache=True)
    assert len(first.cache.layers) == 4
    assert torch.allclose(torch.cat([first.logits, rest.logits], 1), full, atol=1e-5)


def test_left_padding_gives_the_same_logits_as_unpadded():
    model = make(block="llama", n_loops=2, seed=6)
    ids = torch.randint(1, 24, (1, 6), generator=torch.Generator().manual_seed(1))
    padded = torch.cat([torch.zeros(1, 3, dtype=torch.long), ids], 1)
    mask = torch.tensor([[0, 0, 0, 1, 1, 1, 1, 1, 1]])
    pos = torch.clamp(mask.cumsum(-1) - 1, min=0)
    with torch.no_grad():
        a = model(ids).logits
        b = model(padded, attention_mask=mask, position_ids=pos).logits[:, 3:]
    assert torch.allclose(a, b, atol=1e-5)


@pytest.mark.parametrize("kwargs", [{"timestep": "tmlt", "block": "llama"}, {"timestep": "learned", "shift": False},
                                    {"timestep": "tmlt", "shift": True, "input_injection": True}])
def test_save_and_from_pretrained_round_trip_is_exact(tmp_path, kwargs):
    model = make(**kwargs)
    if kwargs["timestep"] == "tmlt":
        randomise_modulation(model)
    model.save_pretrained(tmp_path)
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path, local_files_only=True).eval()
    assert type(loaded) is LoopedForCausalLM
    assert isinstance(AutoConfig.from_pretrained(tmp_path, local_files_only=True), LoopedConfig)
    for (n1, p1), (n2, p2) in zip(model.state_dict().items(), loaded.state_dict().items(), strict=True):
        assert n1 == n2 and torch.equal(p1, p2), n1
    ids = torch.randint(0, 24, (2, 8), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(model(ids, n_loops=6).logits, loaded(ids, n_loops=6).logits)



@pytest.mark.parametrize("override", [{"n_loops": 8}, {"loss_loops": 5}])
def test_from_pretrained_overrides_are_validated(tmp_path, override):
    # from_pretrained sets keyword overrides after the config is built; the model must still refuse them
    make(timestep="learned", max_loops=4, n_loops=4).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="exceeds"):
        AutoModelForCausalLM.from_pretrained(tmp_path, local_files_only=True, **override)


@pytest.mark.parametrize("block", ["gpt", "llama"])
def test_left_padded_batch_generates_what_each_row_generates_alone(block):
    model = make(block=block, timestep="tmlt", n_loops=3, seed=4)
    randomise_modulation(model)
    a, b = torch.tensor([[3, 4, 5, 6, 7]]), torch.tensor([[8, 9, 10]])
    ids = torch.tensor([[3, 4, 5, 6, 7], [0, 0, 8, 9, 10]])
    mask = torch.tensor([[1, 1, 1, 1, 1], [0, 0, 1, 1, 1]])
    kw = {"max_new_tokens": 6, "do_sample": False, "n_loops": 5, "pad_token_id": 0}
    batch = model.generate(ids, attention_mask=mask, **kw)
    assert batch[0, 5:].tolist() == model.generate(a, **kw)[0, 5:].tolist()
    assert batch[1, 5:].tolist() == model.generate(b, **kw)[0, 3:].tolist()


@pytest.mark.parametrize("block", ["gpt", "llama"])
def test_bfloat16_load_runs_in_bfloat16_and_tracks_float32(tmp_path, block):
    model = make(block=block, timestep="tmlt", seed=5)
    randomise_modulation(model)
    model.save_pretrained(tmp_path)
    low = AutoModelForCausalLM.from_pretrained(tmp_path, local_files_only=True, dtype=torch.bfloat16).eval()
    ref = make(block=block, timestep="tmlt")
    ref.load_state_dict({k: v.float() for k, v in low.state_dict().items()})
    ids = torch.randint(0, 24, (2, 8), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        z, zr = low(ids, n_loops=6).logits, ref(ids, n_loops=6).logits
    assert z.dtype == torch.bfloat16
    assert float((z.float() - zr).norm() / zr.norm()) < 0.05
    assert low.generate(ids[:1], max_new_tokens=3, do_sample=False).shape == (1, 11)



def test_num_items_in_batch_gives_the_token_sum_over_items():
    model = make(timestep="tmlt", n_loops=3, seed=2)
    ids = torch.randint(0, 24, (2, 7), generator=torch.Generator().manual_seed(3))
    labels = ids.clone()
    labels[1, 4:] = -100
    with torch.no_grad():
        mean = model(ids, labels=labels, loss_loops=2).loss
        summed = model(ids, labels=labels, loss_loops=2, num_items_in_batch=torch.tensor(20)).loss
    assert torch.allclose(summed, mean * 9 / 20, atol=1e-6)  # 6 + 3 labelled next tokens


def test_trainer_gradient_accumulation_equals_one_large_batch(tmp_path):
    from transformers import Trainer, TrainingArguments

    ids = torch.randint(1, 24, (4, 8), generator=torch.Generator().manual_seed(0))
    rows = [{"input_ids": ids[i], "labels": torch.where(torch.arange(8) < 2 + i, ids[i], -100)} for i in range(4)]
    weights = []
    for batch, accumulate in ((4, 1), (1, 4)):
        model = make(timestep="tmlt", n_loops=2, seed=7)
        args = TrainingArguments(output_dir=str(tmp_path / str(batch)), per_device_train_batch_size=batch,
                                 gradient_accumulation_steps=accumulate, max_steps=1, learning_rate=0.1,
                                 optim="sgd", lr_scheduler_type="constant", report_to=[], save_strategy="no",
                                 use_cpu=True, dataloader_drop_last=False, disable_tqdm=True)
        Trainer(model=model, args=args, train_dataset=rows).train()
        weights.append(model.model.embed_tokens.weight.detach().clone())
    assert not torch.equal(weights[0], make(timestep="tmlt", n_loops=2, seed=7).model.embed_tokens.weight)
    assert torch.allclose(weights[0], weights[1], atol=1e-6)


def _quirk_reference(model, ids, r):
    """The tmlt LoopedGPT forward written out: q, k from RMSNorm(x), v from x, MLP without pre-norm."""
    m = model.model
    blk = m.layers[0]
    att = blk.self_attn
    x = m.embed_tokens(ids) + m.embed_positions(torch.arange(ids.shape[1]))
    b, s, d = x.shape
    nh, hd = att.n_heads, att.head_dim
    causal = torch.tril(torch.ones(s, s, dtype=torch.bool))
    for _ in range(r):
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * blk.input_layernorm.weight
        q = att.q_proj(h).view(b, s, nh, hd).transpose(1, 2)
        k = att.k_proj(h).view(b, s, nh, hd).transpose(1, 2)
        v = att.v_proj(x).view(b, s, nh, hd).transpose(1, 2)
        w = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        w = w.masked_fill(~causal, float("-inf")).softmax(-1)
        x = x + att.o_proj((w @ v).transpose(1, 2).reshape(b, s, d))
        u = blk.mlp.up_proj(x)
        u = 0.5 * u * (1 + torch.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u**3)))
        x = x + blk.mlp.down_proj(u)
    return model.lm_head(m.norm(x))


def test_value_from_unnormed_matches_the_reference_forward_and_is_off_by_default():
    assert LoopedConfig().value_from_unnormed is False
    quirk = make(value_from_unnormed=True, seed=3)
    assert quirk.model.layers[0].post_attention_layernorm is None
    ids = torch.randint(0, 24, (2, 11), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ours, ref = quirk(ids, n_loops=5).logits, _quirk_reference(quirk, ids, 5)
        assert (ours - ref).abs().max() < 1e-6
        clean = make(seed=3)  # the corrected block with the same shared weights differs
        clean.load_state_dict(quirk.state_dict(), strict=False)
        assert (clean(ids, n_loops=5).logits - ref).abs().max() > 1e-3


def test_loss_over_last_loops_is_the_mean_of_per_loop_losses():
    model = make(timestep="learned", n_loops=4, seed=1)
    with torch.no_grad():
        model.model.loop_embed.weight.normal_()
    ids = torch.randint(0, 24, (2, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        out = model(ids, labels=ids, loss_loops=3, output_loop_states=True)
        per_loop = [torch.nn.functional.cross_entropy(z[:, :-1].reshape(-1, 24), ids[:, 1:].reshape(-1))
                    for z in out.loop_logits]
    assert out.loss.item() == pytest.approx(sum(per_loop[1:]).item() / 3, rel=1e-6)
    assert len({round(v.item(), 5) for v in per_loop}) == 4


def test_checkpoint_loops_gives_the_same_gradients():
    grads = []
    for ckpt in (False, True):
        model = make(timestep="tmlt", n_loops=3, seed=0, checkpoint_loops=ckpt).train()
        randomise_modulation(model)
        ids = torch.randint(0, 24, (2, 8), generator=torch.Generator().manual_seed(0))
        model(ids, labels=ids, loss_loops=2).loss.backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    assert torch.allclose(grads[0], grads[1], atol=1e-6)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"block": "bert"}, "block must be one of 'gpt', 'llama'; got str 'bert'"),
    ({"timestep": "sinusoid"}, "timestep must be one of 'learned', 'none', 'tmlt'; got str 'sinusoid'"),
    ({"n_loops": 0}, "n_loops must be an int >= 1; got 0"),
    ({"num_key_value_heads": 3, "num_attention_heads": 2}, "num_key_value_heads=3 does not divide"),
    ({"block": "llama", "head_dim": 7}, "even head_dim"),
    ({"rope_scaling": {"rope_type": "llama3"}}, "does not implement rope_scaling"),
    ({"num_hidden_layers": 4}, "does not implement num_hidden_layers"),
    ({"num_attention_heads": 3}, "does not divide"),
    ({"loss_loops": 5, "n_loops": 4}, "loss_loops=5 exceeds n_loops=4"),
    ({"value_from_unnormed": True, "timestep": "tmlt"}, "needs timestep='none'"),
    ({"shift": True}, "shift applies to timestep='tmlt'"),
])
def test_bad_configs_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LoopedConfig(**{**TINY, **kwargs})


def test_bad_calls_raise():
    model = make(max_position_embeddings=16, timestep="learned", max_loops=8)
    ids = torch.zeros(1, 4, dtype=torch.long)
    with pytest.raises(ValueError, match="n_loops must be an int >= 1; got 0"):
        model(ids, n_loops=0)
    with pytest.raises(ValueError, match="n_loops=9 exceeds max_loops=8"):
        model(ids, n_loops=9)
    with pytest.raises(ValueError, match="loss_loops=3 exceeds n_loops=2"):
        model(ids, labels=ids, n_loops=2, loss_loops=3)
    with pytest.raises(ValueError, match="17 positions .* exceeds max_position_embeddings=16"):
        model(torch.zeros(1, 17, dtype=torch.long))
    with pytest.raises(ValueError, match=r"token ids must lie in \[0, 24\)"):
        model(torch.tensor([[1, 24]]))
    out = model(ids, use_cache=True, n_loops=2)
    with pytest.raises(ValueError, match="use the same n_loops"):
        model(ids, cache=out.cache, n_loops=3)


def test_checkpoint_loops_at_32_loops_saves_at_most_a_quarter_of_the_bytes_for_backward():
    model = make(timestep="tmlt", n_loops=32, max_position_embeddings=32).train()
    ids = torch.randint(0, 24, (2, 32), generator=torch.Generator().manual_seed(0))

    def saved(ckpt):
        storages = {}

        def pack(t):
            storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = model(ids, labels=ids, checkpoint_loops=ckpt)
        out.loss.backward()
        kept = 32 * ids.numel() * 32 * 4 if ckpt else 0  # the input state each checkpointed loop keeps
        return sum(storages.values()) + kept

    plain, ckpt = saved(False), saved(True)
    assert ckpt <= plain / 4, (plain, ckpt)


def test_looped_forward_costs_at_most_1_15_times_the_unrolled_llama():
    from torch.utils.flop_counter import FlopCounterMode

    d, r = 64, 8
    looped = LoopedForCausalLM(LoopedConfig(vocab_size=64, hidden_size=d, num_attention_heads=4, n_loops=r,
                                            block="llama", max_position_embeddings=32)).eval()
    llama = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=d, num_attention_heads=4, num_key_value_heads=4,
                                         intermediate_size=4 * d, num_hidden_layers=r,
                                         max_position_embeddings=32)).eval()
    ids = torch.randint(0, 64, (2, 32), generator=torch.Generator().manual_seed(0))
    flops = {}
    for name, model in (("looped", looped), ("llama", llama)):
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            model(ids, use_cache=False)
        flops[name] = counter.get_total_flops()
    assert flops["llama"] > 0 and flops["looped"] <= 1.15 * flops["llama"], flops
    # the same count for TMLT adds only the per-loop modulation (a d x 4d matmul per loop and block)
    tmlt = LoopedForCausalLM(LoopedConfig(vocab_size=64, hidden_size=d, num_attention_heads=4, n_loops=r,
                                          block="llama", timestep="tmlt", max_position_embeddings=32)).eval()
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        tmlt(ids, use_cache=False)
    assert counter.get_total_flops() <= 1.15 * flops["llama"]
