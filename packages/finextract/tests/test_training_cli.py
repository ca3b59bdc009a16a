"""Digits data, tiny training with LoRA via peft, caching, and the audit command on pixel checkpoints."""

import json

import numpy as np
import pytest
import torch

from finextract import CFGSampler, ModelGuidanceSampler, PixelUNet, add_lora, load_lora, save_lora, without_adapters
from finextract.__main__ import main
from finextract.training import NEW_TOKEN, NULL_CLASS, digits_data, finetune, init_new_token, pretrain, tiny_unet


def test_digits_split():
    d = digits_data(6, random_state=0)
    assert d.pretrain_images.shape[1:] == (1, 8, 8) and int(d.pretrain_labels.max()) == 7
    assert d.finetune_images.shape == (6, 1, 8, 8) and set(d.finetune_digits) <= {8, 9}
    assert float(d.pretrain_images.min()) == -1.0 and float(d.pretrain_images.max()) == 1.0
    assert digits_data(4, size=16).finetune_images.shape == (4, 1, 16, 16)
    with pytest.raises(ValueError, match="held-out"):
        digits_data(10_000)


def test_lora_starts_as_identity_and_toggles_off():
    unet = tiny_unet(random_state=0)
    x, t = torch.randn(3, 1, 8, 8, generator=torch.Generator().manual_seed(0)), torch.tensor([10, 500, 900])
    with torch.no_grad():
        before = unet(x, t, class_labels=torch.tensor([1, 2, 9])).sample
        add_lora(unet, rank=2, random_state=0)
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
        assert torch.allclose(off, PixelUNet(tiny_unet(random_state=0))(x, 10, 1), atol=1e-6)
        assert torch.allclose(den(x, 10, 1), changed)  # adapters back on after the call


def test_pretrain_finetune_cache_and_guidance(tmp_path):
    d = digits_data(4, random_state=0)
    pre = pretrain(d, steps=3, batch_size=8, cache=tmp_path / "pre")
    w = pre.unet.class_embedding.weight.detach()
    # the unseen token is a rare token with its own embedding: not the empty prompt, norm of the trained digits
    assert (w[NEW_TOKEN] - w[NULL_CLASS]).norm() > 0.5 * w[NULL_CLASS].norm()
    assert torch.isclose(w[NEW_TOKEN].norm(), w[:NEW_TOKEN].norm(dim=1).mean(), rtol=1e-5)
    # pretraining never touches the token's row: it is the same fixed vector whatever the pretraining run
    other = pretrain(digits_data(4, random_state=1), steps=2, batch_size=8, random_state=1)
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
    d = digits_data(4, random_state=0)
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
    unet = tiny_unet(random_state=3)
    first = init_new_token(unet)
    assert torch.equal(init_new_token(unet), first)
    assert not torch.equal(first, unet.class_embedding.weight[NULL_CLASS])


@pytest.fixture(scope="module")
def pixel_checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("pixel")
    unet = tiny_unet(random_state=0)
    unet.save_pretrained(root / "base" / "unet")
    add_lora(unet, rank=2, random_state=0)
    with torch.no_grad():
        for n, p in unet.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.05, generator=torch.Generator().manual_seed(len(n)))
    save_lora(unet, root / "lora")
    full = tiny_unet(random_state=1)
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
    md = (out / "audit.md").read_text()
    assert md.startswith("FineXtract audit")
    # the robust rule by default; the report names it and lists every threshold tried
    assert report["stop"] == "robust" and report["min_clique_size"] == 2
    trace = report["threshold_trace"]
    assert [t["threshold"] for t in trace] == report["thresholds_tried"] and report["threshold"] in report[
        "thresholds_tried"
    ]
    kept = next(t for t in trace if t["threshold"] == report["threshold"])
    assert kept["n_qualifying"] == report["qualifying_cliques"] and kept["separation"] == report["separation"]
    assert all(t["n_qualifying"] == len(t["sizes"]) for t in trace if t["n_cliques"] is not None)
    assert "Stopping rule: robust rule (cliques of 2+ members" in md and report["stop_reason"] in md
    assert md.count("(kept) |") == 1 and sum(line.startswith("| ") for line in md.splitlines()) == (1 + 3) + (
        1 + len(trace)
    )
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
                "--stop",
                "paper",
            ]
        )
        == 0
    )
    report2 = json.loads((out2 / "audit.json").read_text())
    assert report2["w"] == 3.0 and report2["stop"] == "paper"
    # the paper rule stops at the first threshold with N cliques, singletons included
    counts = [t["n_cliques"] for t in report2["threshold_trace"]]
    assert report2["threshold"] == report2["thresholds_tried"][-1] and counts[-1] >= 2
    assert all(c is None or c < 2 for c in counts[:-1])
    assert "Stopping rule: paper rule" in (out2 / "audit.md").read_text()
    with pytest.raises(SystemExit):
        main(["audit", "--pretrained", str(root / "base"), "--n-train", "2", "--class-label", "8", "--stop", "early"])
    with pytest.raises(SystemExit):
        main(
            [
                "audit",
                "--pretrained",
                str(root / "base"),
                "--n-train",
                "2",
                "--class-label",
                "8",
                "--min-clique-size",
                "0",
            ]
        )


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


def test_instance_split_holds_the_pool_out_of_pretraining():
    from sklearn.datasets import load_digits

    from finextract.training import INSTANCE_DIGIT, INSTANCE_POOL, instance_data, instance_pool

    target = load_digits().target
    pool = instance_pool()
    assert pool.size == INSTANCE_POOL and set(target[pool]) == {INSTANCE_DIGIT}
    sets = [instance_data(8, random_state=s) for s in range(6)]
    pre_idx = sets[0].pretrain_indices
    for d in sets:
        assert d.design == "instance" and d.token_init == INSTANCE_DIGIT
        assert np.array_equal(d.pretrain_indices, pre_idx)  # one pretraining set serves every seed
        assert set(d.finetune_indices) <= set(pool) and set(d.finetune_digits) == {INSTANCE_DIGIT}
        assert not set(d.finetune_indices) & set(d.pretrain_indices)
        # pixel-level: no fine-tuning image occurs in the pretraining images
        flat_pre = d.pretrain_images.flatten(1)
        for img in d.finetune_images.flatten(1):
            assert not (flat_pre == img).all(dim=1).any()
    # the whole pool is out of pretraining; everything else of digits 0-7 is in, including the other 3s
    assert not set(pool) & set(pre_idx)
    assert set(pre_idx) == set(np.flatnonzero(target < 8)) - set(pool)
    assert int((sets[0].pretrain_labels == INSTANCE_DIGIT).sum()) == int((target == INSTANCE_DIGIT).sum()) - pool.size
    # seeds 0-5 use disjoint blocks of the pool (calibration seed 3 never shares an image with test seeds 0-2)
    all_idx = np.concatenate([d.finetune_indices for d in sets])
    assert np.unique(all_idx).size == all_idx.size == 48
    assert np.array_equal(instance_data(8, random_state=6).finetune_indices, sets[0].finetune_indices)
    with pytest.raises(ValueError, match="pretrained digits"):
        instance_data(8, digit=8)
    with pytest.raises(ValueError, match="exceeds"):
        instance_data(64)


def test_instance_token_starts_as_the_digit_embedding(tmp_path):
    from finextract.training import INSTANCE_DIGIT, instance_data

    d = instance_data(4, random_state=0)
    pre = pretrain(d, steps=20, batch_size=16, cache=tmp_path / "pre")
    w = pre.unet.class_embedding.weight.detach()
    assert torch.equal(w[NEW_TOKEN], w[INSTANCE_DIGIT]) and not torch.equal(w[NEW_TOKEN], w[NULL_CLASS])
    lat = torch.randn(4, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():  # before fine-tuning, the token means "a 3" to the model
        assert torch.allclose(pre(lat, 500, NEW_TOKEN), pre(lat, 500, INSTANCE_DIGIT))
    again = pretrain(d, steps=20, batch_size=16, cache=tmp_path / "pre")
    assert torch.equal(again.unet.class_embedding.weight[NEW_TOKEN], w[INSTANCE_DIGIT])
    # full fine-tune trains the token's embedding; LoRA leaves it at the digit's embedding
    full = finetune(pre, d.finetune_images, steps=5, lr=1e-2)
    wf = full.unet.class_embedding.weight.detach()
    assert (wf[NEW_TOKEN] - w[NEW_TOKEN]).abs().max() > 1e-4
    assert torch.equal(wf[NULL_CLASS], w[NULL_CLASS])  # p_uncond = 0: the empty prompt's row is untouched
    lora = finetune(pre, d.finetune_images, steps=5, lr=1e-2, lora_rank=2)
    assert torch.equal(lora.unet.class_embedding.weight[NEW_TOKEN], w[INSTANCE_DIGIT])
    # so for LoRA, CFG is token-vs-null on the adapted UNet: not unconditional sampling
    cfg = CFGSampler(lora, guidance_scale=3.0, steps=5).sample(NEW_TOKEN, latents=lat).images
    uncond = CFGSampler(lora, guidance_scale=0.0, steps=5).sample(NEW_TOKEN, latents=lat).images
    assert (cfg - uncond).abs().max() > 1e-2
    # the random-token design is unchanged by the instance option
    rnd = pretrain(digits_data(4, random_state=0), steps=2, batch_size=8)
    wr = rnd.unet.class_embedding.weight.detach()
    assert not torch.allclose(wr[NEW_TOKEN], wr[INSTANCE_DIGIT])
    with pytest.raises(ValueError, match="pretrained digit"):
        init_new_token(tiny_unet(), from_class=NULL_CLASS)


def test_instance_threshold_follows_the_data_only_rule():
    """0.93 = the 90th percentile of the best match between a training 3 and 8 other real 3s (rounded)."""
    from finextract.experiments import INSTANCE_ESR_THRESHOLDS, lookalike_reference, no_extraction_reference
    from finextract.training import instance_data

    ref = no_extraction_reference(8, digits=(3,), thresholds=INSTANCE_ESR_THRESHOLDS)
    assert round(ref["quantiles"]["0.9"], 2) == INSTANCE_ESR_THRESHOLDS[0]
    assert 0.05 < ref["A-ESR@0.93"] < 0.15
    assert ref["AS_nearest_real"] > ref["AS"]
    d = instance_data(8, random_state=0)
    look = lookalike_reference(d, INSTANCE_ESR_THRESHOLDS)
    assert 0.85 < look["AS"] < 1.0  # real look-alikes exist, but no training image itself is in the pool
    assert look["AS"] < 1.0 - 1e-6


def test_design_option_routes_to_reproduce(monkeypatch, tmp_path, capsys):
    import finextract.__main__ as cli

    seen = []
    monkeypatch.setattr("finextract.experiments.reproduce", lambda ctx, design, **kw: seen.append(design))
    assert cli.main(["reproduce", "--design", "new-concept", "--out", str(tmp_path)]) == 0
    assert cli.main(["reproduce", "--out", str(tmp_path), "--design=instance"]) == 0
    assert cli.main(["reproduce", "--out", str(tmp_path)]) == 0
    assert seen == ["new-concept", "instance", "instance"]
    with pytest.raises(SystemExit):
        cli.main(["reproduce", "--design", "dog"])
    assert "invalid choice: 'dog'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["demo", "--design", "new-concept"])
    assert "unrecognized arguments: --design" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["reproduce", "--help"])
    help_text = capsys.readouterr().out
    assert all(flag in help_text for flag in ("--design", "--seeds", "--calibration"))


def test_seeds_and_calibration_options(monkeypatch, tmp_path, capsys):
    """``reproduce --seeds A,B --calibration FILE``: parsed, validated, and passed on; bad values name the problem."""
    import finextract.__main__ as cli

    cal = tmp_path / "reproduce.json"
    cal.write_text("{}")
    seen = []
    monkeypatch.setattr("finextract.experiments.reproduce", lambda ctx, design, **kw: seen.append((design, kw, ctx.seed)))
    assert cli.main(["reproduce", "--seeds", "4,5", "--calibration", str(cal), "--out", str(tmp_path)]) == 0
    assert cli.main(["reproduce", "--out", str(tmp_path), f"--calibration={cal}", "--seeds=5"]) == 0
    assert cli.main(["reproduce", "--out", str(tmp_path)]) == 0
    assert seen == [
        ("instance", {"seeds": [4, 5], "calibration": cal}, 0),
        ("instance", {"seeds": [5], "calibration": cal}, 0),
        ("instance", {}, 0),
    ]
    parse_errors = {  # argparse: exit status 2, the message on stderr
        "comma-separated integers": ["--seeds", "4,a", "--calibration", str(cal)],
        "non-negative": ["--seeds=-1", "--calibration", str(cal)],
        "distinct": ["--seeds", "4,4", "--calibration", str(cal)],
        "expected one argument": ["--calibration", str(cal), "--seeds"],
    }
    for message, extra in parse_errors.items():
        with pytest.raises(SystemExit):
            cli.main(["reproduce", *extra])
        assert message in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["demo", "--seeds", "4", "--calibration", str(cal)])
    assert "unrecognized arguments: --seeds" in capsys.readouterr().err
    usage_errors = {  # checked across options before the run starts
        "go together": ["--seeds", "4,5"],
        "not a file": ["--seeds", "4", "--calibration", str(tmp_path / "missing.json")],
        "--quick": ["--seeds", "4", "--calibration", str(cal), "--quick"],
    }
    for message, extra in usage_errors.items():
        with pytest.raises(SystemExit, match=message):
            cli.main(["reproduce", *extra])
    assert len(seen) == 3


def test_frozen_calibration_is_checked_before_reuse(tmp_path):
    """An earlier run's calibrated settings are reused only for the same design, config, regimes and pretrained
    model, and only on test seeds whose fine-tuning images are disjoint from the calibration seed's."""
    from icml25_shared.cli import RunContext

    from finextract.experiments import QUICK, REGIMES, Config, design_setup, load_calibration, reproduce

    chosen = {"FineXtract (calibrated)": ["mg", 1.5, 0.0], "CFG baseline (calibrated)": ["cfg", 3.0]}
    rec = {
        "design": "instance",
        "config": Config().__dict__,
        "regimes": REGIMES,
        "seeds": [0, 1, 2],
        "calibration": {"seed": 3, "chosen": {"full": chosen, "lora": chosen}},
    }
    path = tmp_path / "reproduce.json"
    path.write_text(json.dumps(rec))
    des = design_setup("instance")
    kw = {"design": des, "config": Config(), "pretrain_seed": 0}
    got = load_calibration(path, test_seeds=[4, 5], **kw)
    assert got.seed == 3 and got.chosen["lora"]["FineXtract (calibrated)"] == ("mg", 1.5, 0.0)
    assert got.chosen["full"]["CFG baseline (calibrated)"] == ("cfg", 3.0)
    # seed 9 is pool block 9 mod 6 = 3, the calibration block
    for seeds in ([3], [4, 9]):
        with pytest.raises(ValueError, match="shares fine-tuning images with calibration seed 3"):
            load_calibration(path, test_seeds=seeds, **kw)
    with pytest.raises(ValueError, match="design"):
        load_calibration(path, test_seeds=[4], **{**kw, "design": design_setup("new-concept")})
    with pytest.raises(ValueError, match="config"):
        load_calibration(path, test_seeds=[4], **{**kw, "config": QUICK})
    with pytest.raises(ValueError, match="pretrained with seed 0"):
        load_calibration(path, test_seeds=[4], **{**kw, "pretrain_seed": 1})
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_calibration(tmp_path / "nope.json", test_seeds=[4], **kw)
    path.write_text(json.dumps({**rec, "regimes": {"light": REGIMES["light"]}}))
    with pytest.raises(ValueError, match="regimes"):
        load_calibration(path, test_seeds=[4], **kw)
    path.write_text(json.dumps({**rec, "calibration": {"seed": 3, "chosen": {"full": chosen}}}))
    with pytest.raises(ValueError, match="both full and lora"):
        load_calibration(path, test_seeds=[4], **kw)
    ctx = RunContext("finextract", "reproduce", tmp_path, 0, False, np.random.default_rng(0))
    with pytest.raises(ValueError, match="go together"):
        reproduce(ctx, seeds=[4])


def test_pooled_regime_rule_and_head_to_head():
    """The comparison fixed before the extra seeds ran: a regime counts only if calibration-seed CFG beats the look-alike AS; a cell
    is won only with strictly higher mean AS and A-ESR over the seeds; ties and missing runs do not pass."""
    from finextract.experiments import BASELINE, METHOD, counted_regimes, head_to_head

    chosen = {mode: {METHOD: ["mg", 1.5, 0.0], BASELINE: ["cfg", 3.0]} for mode in ("full", "lora")}
    cal_runs = [
        {"regime": g, "setting": m, "method": c, "AS": a}
        for g, base in (("light", 0.85), ("strong", 0.90))
        for m in ("full", "lora")
        for c, a in (("cfg s=3.0", base), ("cfg s=1.0", 0.99), ("mg w=1.5 k=0.0", 0.99))
    ]
    got = counted_regimes({"chosen": chosen, "runs": cal_runs}, 0.859)
    assert [got[g]["counts"] for g in ("light", "strong")] == [False, True]  # other candidates are ignored
    assert got["strong"]["cfg_AS"] == pytest.approx(0.90)
    with pytest.raises(ValueError, match="chosen CFG scale"):
        counted_regimes({"chosen": chosen, "runs": [r for r in cal_runs if r["setting"] == "full"]}, 0.859)

    def run(seed, method, a, e):
        return {"regime": "strong", "setting": "lora", "seed": seed, "method": method, "AS": a, "A-ESR@0.93": e}

    win = [
        run(0, METHOD, 0.9, 0.25),
        run(0, BASELINE, 0.8, 0.0),
        run(1, METHOD, 0.8, 0.0),
        run(1, BASELINE, 0.85, 0.125),
    ]
    (e,) = head_to_head(win + [run(0, "FineXtract", 0.1, 0.0)], "A-ESR@0.93")
    assert e["seeds"] == [0, 1] and e["wins"]
    assert e["FX AS"] == pytest.approx(0.85) and e["CFG A-ESR@0.93"] == pytest.approx(0.0625)
    tie = [run(0, METHOD, 0.9, 0.25), run(0, BASELINE, 0.8, 0.25)]
    assert not head_to_head(tie, "A-ESR@0.93")[0]["wins"]
    with pytest.raises(ValueError, match="different seeds"):
        head_to_head(win[:3], "A-ESR@0.93")
    with pytest.raises(ValueError, match="more than one run"):
        head_to_head(win + [run(1, METHOD, 0.8, 0.0)], "A-ESR@0.93")


def _png(path, array):
    from PIL import Image

    Image.fromarray(np.asarray(array, dtype=np.uint8)).save(path)


def test_load_images_folder_and_array_files(tmp_path):
    from finextract import load_images

    folder = tmp_path / "imgs"
    folder.mkdir()
    _png(folder / "a_grey.png", np.full((8, 8), 128))
    red = np.zeros((12, 16, 3))
    red[..., 0] = 255
    _png(folder / "b_red.png", red)
    frame = np.full((12, 16), 255)
    frame[:, :2] = frame[:, -2:] = 0  # black side bands that a centre crop to a square removes
    _png(folder / "c_frame.png", frame)
    (folder / "notes.txt").write_text("not an image")
    images = load_images(folder)
    assert images.names == ["a_grey.png", "b_red.png", "c_frame.png"] and len(images) == 3
    grey = images.fit((1, 8, 8))
    assert grey.shape == (3, 1, 8, 8) and float(grey.min()) >= -1 and float(grey.max()) <= 1
    assert torch.allclose(grey[0], torch.tensor(128 / 255 * 2 - 1), atol=1e-6)
    assert torch.allclose(grey[1], torch.tensor(0.299 * 2 - 1), atol=1e-3)  # BT.601 luma of pure red
    assert torch.allclose(grey[2], torch.tensor(1.0), atol=1e-3)  # the bands are cropped away
    assert images.fit((3, 4, 4)).shape == (3, 3, 4, 4)
    digits = digits_data(4, random_state=0).finetune_images
    torch.save(digits, tmp_path / "train.pt")
    np.save(tmp_path / "train.npy", digits.numpy())
    for name in ("train.pt", "train.npy"):
        loaded = load_images(tmp_path / name)
        assert loaded.names[0] == f"{name}[0]"
        assert torch.allclose(loaded.fit((1, 8, 8)), digits, atol=1e-6)


def test_load_images_reads_16_bit_greys_and_applies_exif_orientation(tmp_path):
    from PIL import Image

    from finextract import load_images

    folder = tmp_path / "imgs"
    folder.mkdir()
    ramp = np.linspace(0, 65535, 64).reshape(8, 8).astype(np.uint16)
    Image.fromarray(ramp).save(folder / "a_ramp16.png")
    wide = np.zeros((8, 16, 3), dtype=np.uint8)
    wide[:, :8] = 255  # left half white as stored; EXIF orientation 6 = rotate 90 degrees clockwise to display
    exif = Image.Exif()
    exif[0x0112] = 6
    Image.fromarray(wide).save(folder / "b_phone.jpg", exif=exif, quality=100)
    images = load_images(folder)
    assert torch.allclose(images.images[0][0], torch.from_numpy(ramp / 65535.0).float(), atol=1e-6)
    upright = images.images[1]
    assert upright.shape == (3, 16, 8)  # displayed portrait: 16 high, 8 wide
    assert upright[:, :8].mean() > 0.9 and upright[:, 8:].mean() < 0.1  # the white half is now on top


def test_load_images_errors(tmp_path):
    from finextract import load_images

    with pytest.raises(FileNotFoundError, match="training images not found"):
        load_images(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no image files"):
        load_images(tmp_path / "empty")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "x.png").write_bytes(b"not a png")
    with pytest.raises(ValueError, match="cannot read"):
        load_images(tmp_path / "broken")
    torch.save(torch.zeros(2, 8, 8), tmp_path / "flat.pt")
    with pytest.raises(ValueError, match=r"\(n, C, H, W\)"):
        load_images(tmp_path / "flat.pt")
    torch.save(torch.tensor(1.0), tmp_path / "scalar.pt")
    with pytest.raises(ValueError, match=r"\(n, C, H, W\)"):
        load_images(tmp_path / "scalar.pt")
    torch.save(torch.full((2, 1, 8, 8), 3.0), tmp_path / "range.pt")
    with pytest.raises(ValueError, match=r"in \[-1, 1\]"):
        load_images(tmp_path / "range.pt")
    (tmp_path / "list.txt").write_text("a")
    with pytest.raises(ValueError, match="folder of images"):
        load_images(tmp_path / "list.txt")


def test_audit_cli_scores_against_the_owners_training_images(pixel_checkpoints, tmp_path):
    root = pixel_checkpoints
    folder = tmp_path / "train"
    folder.mkdir()
    for i, img in enumerate(digits_data(3, random_state=0).finetune_images):
        _png(folder / f"img{i}.png", ((img[0] + 1) / 2 * 255).round().numpy())
    common = ["audit", "--pretrained", str(root / "base"), "--lora", str(root / "lora"), "--class-label", "8"]
    out = tmp_path / "a"
    run = [*common, "--n-train", "3", "--n-generations", "8", "--steps", "3", "--out", str(out)]
    assert main([*run, "--training-images", str(folder), "--thresholds", "0.5,0.2", "--rescale-x0"]) == 0
    report = json.loads((out / "audit.json").read_text())
    assert report["rescale_x0"] is True
    rows = report["per_training_image"]
    assert [r["name"] for r in rows] == ["img0.png", "img1.png", "img2.png"]
    best = np.array([r["best_similarity"] for r in rows])
    assert np.isclose(report["average_similarity"], best.mean())
    assert report["a_esr"] == {"0.5": float(np.mean(best >= 0.5)), "0.2": float(np.mean(best >= 0.2))}
    assert all(1 <= r["best_match_rank"] <= 3 for r in rows)
    md = (out / "audit.md").read_text()
    assert "Against the 3 training images" in md and "| img2.png |" in md and "upper bound" in md
    # Defaults: pixel cosine gets the digits-calibrated thresholds; --k none selects the conditional base.
    out2 = tmp_path / "b"
    run2 = [*common, "--n-train", "3", "--n-generations", "8", "--steps", "2", "--out", str(out2), "--k", "none"]
    assert main([*run2, "--training-images", str(folder)]) == 0
    report2 = json.loads((out2 / "audit.json").read_text())
    assert report2["a_esr_thresholds"] == [0.93, 0.9] and set(report2["a_esr"]) == {"0.93", "0.9"}
    assert report2["k"] is None
    with pytest.raises(SystemExit):
        main([*run2, "--k", "abc"])
    # A bad path fails before any sampling; bad thresholds are refused by argparse.
    with pytest.raises(FileNotFoundError, match="training images not found"):
        main([*common, "--n-train", "3", "--n-generations", "100000", "--training-images", str(tmp_path / "no")])
    with pytest.raises(SystemExit):
        main([*run, "--training-images", str(folder), "--thresholds", "0.5,1.5"])
