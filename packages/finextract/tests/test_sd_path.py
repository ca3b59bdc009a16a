"""The Stable-Diffusion path on tiny random components saved in diffusers layout and reloaded from disk."""

import pytest
import torch

from finextract import CFGSampler, LatentUNet, ModelGuidanceSampler, PixelUNet, add_lora, save_lora, without_adapters
from finextract.loading import load_checkpoint


def _components(cross_dim=16, seed=0):
    from diffusers import AutoencoderKL, DDIMScheduler, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    torch.manual_seed(seed)
    unet = UNet2DConditionModel(
        sample_size=8,
        in_channels=4,
        out_channels=4,
        block_out_channels=(16, 32),
        layers_per_block=1,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=cross_dim,
        attention_head_dim=4,
        norm_num_groups=8,
    )
    vae = AutoencoderKL(
        in_channels=3,
        out_channels=3,
        block_out_channels=(8, 16),
        latent_channels=4,
        norm_num_groups=8,
        sample_size=16,
        layers_per_block=1,
        down_block_types=("DownEncoderBlock2D",) * 2,
        up_block_types=("UpDecoderBlock2D",) * 2,
    )
    text = CLIPTextModel(
        CLIPTextConfig(
            hidden_size=cross_dim,
            intermediate_size=32,
            num_attention_heads=2,
            num_hidden_layers=1,
            vocab_size=100,
            max_position_embeddings=8,
            bos_token_id=0,
            eos_token_id=1,
            pad_token_id=1,
        )
    )
    sched = DDIMScheduler(
        beta_schedule="scaled_linear",
        beta_start=0.00085,
        beta_end=0.012,
        clip_sample=False,
        set_alpha_to_one=False,
        steps_offset=1,
    )
    return unet, vae, text, sched


@pytest.fixture(scope="module")
def sd_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-sd")
    unet, vae, text, sched = _components()
    unet.save_pretrained(root / "unet")
    vae.save_pretrained(root / "vae")
    text.save_pretrained(root / "text_encoder")
    sched.save_pretrained(root / "scheduler")
    return root


def _save_char_tokenizer(folder):
    """A character-level CLIP BPE tokenizer (no merges) written from scratch: no download needed."""
    import json

    from transformers import CLIPTokenizer

    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for c in letters:
        vocab[c] = len(vocab)
        vocab[c + "</w>"] = len(vocab)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    tok = CLIPTokenizer(
        str(folder / "vocab.json"), str(folder / "merges.txt"), model_max_length=8, pad_token="<|endoftext|>"
    )
    tok.save_pretrained(str(folder))


def _embeds():
    g = torch.Generator().manual_seed(1)
    return torch.randn(1, 8, 16, generator=g), torch.randn(1, 8, 16, generator=g), torch.randn(2, 4, 8, 8, generator=g)


def _pipeline(unet, vae, text, sched):
    """diffusers' StableDiffusionPipeline over the tiny components, driven by prompt embeddings (no tokenizer)."""
    from diffusers import StableDiffusionPipeline

    pipe = StableDiffusionPipeline(
        vae=vae,
        text_encoder=text,
        tokenizer=None,
        unet=unet,
        scheduler=sched,
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    pipe.set_progress_bar_config(disable=True)
    return pipe


def test_cfg_baseline_matches_stable_diffusion_pipeline():
    unet, vae, text, sched = _components()
    pipe = _pipeline(unet, vae, text, sched)
    emb, neg, lat = _embeds()
    ref = pipe(
        prompt_embeds=emb.expand(2, -1, -1),
        negative_prompt_embeds=neg.expand(2, -1, -1),
        latents=lat,
        num_inference_steps=5,
        guidance_scale=3.0,
        output_type="latent",
    ).images
    ours = CFGSampler(LatentUNet(unet, vae=vae, scheduler=sched), guidance_scale=3.0, steps=5)
    out = ours.sample(emb, latents=lat, null_cond=neg)
    assert torch.allclose(out.samples, ref, atol=1e-4)
    assert out.images.shape == (2, 3, 16, 16) and out.images.abs().max() <= 1


@pytest.mark.parametrize("layout", ["peft", "diffusers"])
def test_lora_checkpoint_round_trip_and_guidance(sd_folder, tmp_path, layout):
    from peft import get_peft_model_state_dict

    base = load_checkpoint(sd_folder)
    assert isinstance(base, LatentUNet) and base.text_encoder is not None and base.vae is not None
    assert base.scheduler.config.steps_offset == 1
    emb, neg, lat = _embeds()
    plain = CFGSampler(base, guidance_scale=3.0, steps=4).sample(emb, latents=lat, null_cond=neg).images
    add_lora(base.unet, rank=2, random_state=0)
    with torch.no_grad():
        for name, p in base.unet.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.2, generator=torch.Generator().manual_seed(len(name)))
    if layout == "peft":
        save_lora(base.unet, tmp_path / "lora")
    else:
        from diffusers import StableDiffusionPipeline

        StableDiffusionPipeline.save_lora_weights(
            tmp_path / "lora", unet_lora_layers=get_peft_model_state_dict(base.unet)
        )
    ft = load_checkpoint(sd_folder, lora=tmp_path / "lora")
    # the adapter-off view is exactly the base model
    off = CFGSampler(without_adapters(ft), guidance_scale=3.0, steps=4).sample(emb, latents=lat, null_cond=neg)
    assert torch.allclose(off.images, plain, atol=1e-6)
    # the reloaded adapter reproduces the in-memory one, and FineXtract runs end to end through the VAE
    ours = ModelGuidanceSampler(without_adapters(ft), ft, w=5.0, k=0.0, steps=4).sample(emb, latents=lat, null_cond=neg)
    ref = ModelGuidanceSampler(without_adapters(base), base, w=5.0, k=0.0, steps=4).sample(
        emb, latents=lat, null_cond=neg
    )
    assert torch.allclose(ours.images, ref.images, atol=1e-6)
    assert ours.images.shape == (2, 3, 16, 16)
    assert (ours.images - off.images).abs().max() > 1e-3  # the adapter matters
    if layout == "diffusers":  # a text-encoder LoRA in the same file is not silently dropped
        from safetensors.torch import load_file, save_file

        weights = tmp_path / "lora" / "pytorch_lora_weights.safetensors"
        tensors = load_file(str(weights))
        save_file({**tensors, "text_encoder.layers.0.q_proj.lora_A.weight": torch.zeros(2, 16)}, str(weights))
        with pytest.warns(UserWarning, match="outside the UNet"):
            load_checkpoint(sd_folder, lora=tmp_path / "lora")


def test_full_finetune_folder_pair(sd_folder, tmp_path):
    unet, vae, text, sched = _components(seed=3)  # "fine-tuned" = different weights, same layout
    unet.save_pretrained(tmp_path / "unet")
    pre, ft = load_checkpoint(sd_folder), load_checkpoint(tmp_path)
    emb, neg, lat = _embeds()
    assert ft.vae is None and ft.scheduler is None  # the fine-tuned folder holds only the UNet
    out = ModelGuidanceSampler(pre, ft, w=3.0, k=-0.02, steps=3).sample(emb, latents=lat, null_cond=neg)
    assert torch.isfinite(out.samples).all()
    # decoded with the pretrained VAE, on the pretrained checkpoint's schedule (not diffusers' default)
    assert out.images.shape == (2, 3, 16, 16)
    with torch.no_grad():
        assert torch.allclose(out.images, pre.decode(out.samples), atol=1e-6)
    explicit = ModelGuidanceSampler(pre, ft, w=3.0, k=-0.02, steps=3, scheduler=pre.scheduler)
    assert torch.equal(explicit.sample(emb, latents=lat, null_cond=neg).samples, out.samples)


def test_errors_name_the_problem(sd_folder, tmp_path):
    with pytest.raises(FileNotFoundError, match="checkpoint folder not found"):
        load_checkpoint(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="LoRA folder not found"):
        load_checkpoint(sd_folder, lora=tmp_path / "nope")
    pre = load_checkpoint(sd_folder)
    other_dim, *_ = _components(cross_dim=24)
    emb, neg, lat = _embeds()
    with pytest.raises(ValueError, match="different conditioning"):
        ModelGuidanceSampler(pre, other_dim, w=3.0).sample(emb, latents=lat)
    from finextract.training import tiny_unet

    pixel = PixelUNet(tiny_unet(size=8), null_class=9)
    with pytest.raises(ValueError, match="sample different shapes"):
        ModelGuidanceSampler(pre, pixel, w=3.0).sample(emb, latents=lat)
    with pytest.raises(ValueError, match="null_cond"):
        ModelGuidanceSampler(pre, pre, w=3.0, k=0.0).sample(emb, latents=lat)
    with pytest.raises(ValueError, match="cross_attention_dim"):
        ModelGuidanceSampler(pre, pre, w=3.0).sample(torch.zeros(1, 8, 24), latents=lat)
    with pytest.raises(ValueError, match="per-sample shape"):
        ModelGuidanceSampler(pre, pre, w=3.0).sample(emb, latents=torch.zeros(2, 4, 16, 16))
    with pytest.raises(ValueError, match="no adapter|has none"):
        without_adapters(pre)
    with pytest.raises(TypeError, match="noise predictor"):
        ModelGuidanceSampler(pre, object(), w=3.0).sample(emb, latents=lat)


def test_prompt_path_with_tokenizer_and_audit_cli(sd_folder, tmp_path):
    import json
    import shutil

    from finextract.__main__ import main

    root = tmp_path / "sd"
    shutil.copytree(sd_folder, root)
    _save_char_tokenizer(root / "tokenizer")
    den = load_checkpoint(root)
    emb = den.encode_prompt("art style")
    assert emb.shape == (1, 8, 16)
    assert den.null_embeds is not None and den.null_embeds.shape == (1, 8, 16)
    assert not torch.allclose(emb, den.null_embeds)
    add_lora(den.unet, rank=2, random_state=0)
    save_lora(den.unet, tmp_path / "lora")
    out = tmp_path / "audit"
    assert (
        main(
            [
                "audit",
                "--pretrained",
                str(root),
                "--lora",
                str(tmp_path / "lora"),
                "--n-train",
                "2",
                "--n-generations",
                "4",
                "--steps",
                "2",
                "--prompt",
                "art style",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    report = json.loads((out / "audit.json").read_text())
    assert report["lora"] and len(report["selected_generation_indices"]) == 2
