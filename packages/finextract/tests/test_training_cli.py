"""Digits data, tiny training with LoRA via peft, caching, and the audit command on pixel checkpoints."""

import json

import pytest
import torch

from finextract import CFGSampler, ModelGuidanceSampler, PixelUNet, add_lora, load_lora, save_lora, without_adapters
from finextract.__main__ import main
from finextract.training import NEW_TOKEN, NULL_CLASS, digits_data, finetune, init_new_token, pretrain, tiny_unet


def test_digits_split():
    d = digits_data(6, seed=0)
    assert d.pretrain_images.shape[1:] == (1, 8, 8) and int(d.pretrain_labels.max()) == 7
    assert d.finetune_images.shape == (6, 1, 8, 8) and set(d.finetune_digits) <= {8, 9}
    assert float(d.pretrain_images.min()) == -1.0 and float(d.pretrain_images.max()) == 1.0
    assert digits_data(4, size=16).finetune_images.shape == (4, 1, 16, 16)
    with pytest.raises(ValueError, match="held-out"):
        digits_data(10_000)


def test_lora_starts_as_identity_and_toggles_off():
    unet = tiny_unet(seed=0)
    x, t = torch.randn(3, 1, 8, 8, generator=torch.Generator().manual_seed(0)), torch.tensor([10, 500, 900])
    with torch.no_grad():
        before = unet(x, t, class_labels=torch.tensor([1, 2, 9])).sample
        add_lora(unet, rank=2, seed=0)
        assert torch.allclose(unet(x, t, class_labels=torch.tensor([1, 2, 9])).sample, before, atol=1e-6)
        trainable = [n for n, p in unet.named_parameters() if p.requires_grad]
        assert trainable and all("lora_" in n for n in trainable)
        for n, p in unet.named_parameters():
            if "lora_B" in n:
                p.fill_(0.05)
        den = PixelUNet(unet, null_class=NULL_CLASS)
        changed = den(x, 10, 1)
        off = without_adapters(den)(x, 10, 1)
        assert (changed - off).abs().max() > 1e-3
        # adapters off = the original network
        assert torch.allclose(off, PixelUNet(tiny_unet(seed=0))(x, 10, 1), atol=1e-6)
        assert torch.allclose(den(x, 10, 1), changed)  # adapters back on after the call


def test_pretrain_finetune_cache_and_guidance(tmp_path):
    d = digits_data(4, seed=0)
    pre = pretrain(d, steps=3, batch_size=8, cache=tmp_path / "pre")
    w = pre.unet.class_embedding.weight.detach()
    # the unseen token is a rare token with its own embedding: not the empty prompt, norm of the trained digits
    assert (w[NEW_TOKEN] - w[NULL_CLASS]).norm() > 0.5 * w[NULL_CLASS].norm()
    assert torch.isclose(w[NEW_TOKEN].norm(), w[:NEW_TOKEN].norm(dim=1).mean(), rtol=1e-5)
    # pretraining never touches the token's row: it is the same fixed vector whatever the pretraining run
    other = pretrain(digits_data(4, seed=1), steps=2, batch_size=8, seed=1)
    w2 = other.unet.class_embedding.weight.detach()
    assert torch.allclose(w[NEW_TOKEN] / w[NEW_TOKEN].norm(), w2[NEW_TOKEN] / w2[NEW_TOKEN].norm(), atol=1e-6)
    again = pretrain(d, steps=3, batch_size=8, cache=tmp_path / "pre")
    for a, b in zip(pre.unet.parameters(), again.unet.parameters(), strict=True):
        assert torch.equal(a, b)
    lora = finetune(pre, d.finetune_images, steps=3, lr=1e-2, lora_rank=2, cache=tmp_path / "lora")
    reloaded = finetune(pre, d.finetune_images, steps=3, lora_rank=2, cache=tmp_path / "lora")
    full = finetune(pre, d.finetune_images, steps=3, cache=tmp_path / "full")
    lat = torch.randn(4, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    a = ModelGuidanceSampler(without_adapters(lora), lora, w=5.0, k=0.0, steps=3).sample(NEW_TOKEN, latents=lat)
    b = ModelGuidanceSampler(without_adapters(reloaded), reloaded, w=5.0, k=0.0, steps=3).sample(NEW_TOKEN, latents=lat)
    assert torch.allclose(a.images, b.images, atol=1e-6)
    # the base weights of the LoRA model are untouched pretrained weights
    off = without_adapters(lora)(lat, 500, NEW_TOKEN)
    assert torch.allclose(off, pre(lat, 500, NEW_TOKEN), atol=1e-6)
    c = ModelGuidanceSampler(pre, full, w=3.0, k=-0.02, steps=3).sample(NEW_TOKEN, latents=lat)
    assert torch.isfinite(c.images).all() and c.images.shape == (4, 1, 8, 8)


def test_lora_cfg_is_not_unconditional_sampling():
    """With its own embedding the new token conditions a LoRA model (whose embedding table is frozen), so CFG on
    it differs from plain unconditional sampling; with the token equal to the null class it would not."""
    d = digits_data(4, seed=0)
    pre = pretrain(d, steps=20, batch_size=16)
    lora = finetune(pre, d.finetune_images, steps=5, lr=1e-2, lora_rank=2)
    assert torch.equal(lora.unet.class_embedding.weight[NEW_TOKEN], pre.unet.class_embedding.weight[NEW_TOKEN])
    lat = torch.randn(4, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        cond, null = lora(lat, 500, NEW_TOKEN), lora(lat, 500, NULL_CLASS)
    assert (cond - null).abs().max() > 1e-2
    cfg = CFGSampler(lora, guidance_scale=3.0, steps=5).sample(NEW_TOKEN, latents=lat).images
    uncond = CFGSampler(lora, guidance_scale=0.0, steps=5).sample(NEW_TOKEN, latents=lat).images
    plain = CFGSampler(lora, guidance_scale=1.0, steps=5).sample(NEW_TOKEN, latents=lat).images
    assert (cfg - uncond).abs().max() > 1e-2 and (cfg - plain).abs().max() > 1e-3
    # control: the old set-up (token = null class) makes CFG exactly a no-op for LoRA
    tied = finetune(pre, d.finetune_images, steps=5, lr=1e-2, lora_rank=2)
    with torch.no_grad():
        tied.unet.class_embedding.weight[NEW_TOKEN] = tied.unet.class_embedding.weight[NULL_CLASS]
    a = CFGSampler(tied, guidance_scale=3.0, steps=5).sample(NEW_TOKEN, latents=lat).images
    b = CFGSampler(tied, guidance_scale=0.0, steps=5).sample(NEW_TOKEN, latents=lat).images
    assert torch.allclose(a, b, atol=1e-5)


def test_init_new_token_is_idempotent():
    unet = tiny_unet(seed=3)
    first = init_new_token(unet)
    assert torch.equal(init_new_token(unet), first)
    assert not torch.equal(first, unet.class_embedding.weight[NULL_CLASS])


@pytest.fixture(scope="module")
def pixel_checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("pixel")
    unet = tiny_unet(seed=0)
    unet.save_pretrained(root / "base" / "unet")
    add_lora(unet, rank=2, seed=0)
    with torch.no_grad():
        for n, p in unet.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.05, generator=torch.Generator().manual_seed(len(n)))
    save_lora(unet, root / "lora")
    full = tiny_unet(seed=1)
    full.save_pretrained(root / "full")
    return root


def test_audit_cli_lora_and_full(pixel_checkpoints, tmp_path):
    root = pixel_checkpoints
    out = tmp_path / "a"
    assert (
        main(
            [
                "audit",
                "--pretrained",
                str(root / "base"),
                "--lora",
                str(root / "lora"),
                "--n-train",
                "3",
                "--n-generations",
                "8",
                "--steps",
                "3",
                "--class-label",
                "8",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    report = json.loads((out / "audit.json").read_text())
    assert report["w"] == 5.0 and report["k"] == 0.0 and report["lora"] is True
    assert len(report["selected_generation_indices"]) == 3 and (out / "audit.png").stat().st_size > 1000
    assert (out / "audit.md").read_text().startswith("FineXtract audit")
    out2 = tmp_path / "b"
    assert (
        main(
            [
                "audit",
                "--pretrained",
                str(root / "base"),
                "--finetuned",
                str(root / "full"),
                "--n-train",
                "2",
                "--n-generations",
                "6",
                "--steps",
                "2",
                "--class-label",
                "8",
                "--out",
                str(out2),
            ]
        )
        == 0
    )
    assert json.loads((out2 / "audit.json").read_text())["w"] == 3.0


def test_audit_cli_errors(pixel_checkpoints, tmp_path):
    root = pixel_checkpoints
    with pytest.raises(FileNotFoundError, match="checkpoint folder not found"):
        main(
            [
                "audit",
                "--pretrained",
                str(tmp_path / "none"),
                "--finetuned",
                str(root / "full"),
                "--n-train",
                "2",
                "--class-label",
                "8",
            ]
        )
    with pytest.raises(ValueError, match="larger than the number of generations"):
        main(
            [
                "audit",
                "--pretrained",
                str(root / "base"),
                "--finetuned",
                str(root / "full"),
                "--n-train",
                "9",
                "--n-generations",
                "4",
                "--class-label",
                "8",
                "--steps",
                "1",
                "--out",
                str(tmp_path),
            ]
        )
    with pytest.raises(SystemExit):
        main(["audit", "--pretrained", str(root / "base"), "--n-train", "2", "--class-label", "8"])


def test_load_lora_rejects_wrong_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="neither"):
        (tmp_path / "empty").mkdir()
        load_lora(tiny_unet(), tmp_path / "empty")
