"""CIFAR-size models at tiny width, the torchvision-format folder loader, the augmentation and the presets."""

import inspect
import pickle

import numpy as np
import pytest
import torch

from crossclass_at import (
    AdversarialTrainer,
    PreActResNet18,
    ResNet18,
    WideResNet,
    cas,
    class_attribution,
    correlation_matrix,
    find_head,
)
from crossclass_at.cifar import CIFAR_PRESETS, cifar_augment, cifar_preset, load_cifar


@pytest.mark.parametrize("make, n_features", [(lambda: ResNet18(10, width=4), 32),
                                              (lambda: PreActResNet18(10, width=4), 32),
                                              (lambda: WideResNet(10, depth=10, widen_factor=1), 64)])
def test_tiny_cifar_models_on_random_32x32_inputs(make, n_features):
    torch.manual_seed(0)
    model = make()
    x, y = torch.rand(6, 3, 32, 32), torch.arange(6) % 3
    assert model(x).shape == (6, 10) and model.features(x).shape == (6, n_features)
    assert find_head(model) is model.fc
    model.eval()
    assert torch.allclose(model(x), model.fc(model.features(x)))
    model3 = type(model)(3, **({"width": 4} if not isinstance(model, WideResNet) else {"depth": 10, "widen_factor": 1}))
    a = class_attribution(model3, x, y, on="clean")
    assert a.shape == (3, n_features) and 0.0 <= cas(correlation_matrix(a)) <= 6.0


def test_full_size_parameter_counts():
    # the standard CIFAR sizes: ResNet-18 11.17 M, WRN-34-10 46.16 M parameters (10 classes)
    assert sum(p.numel() for p in ResNet18().parameters()) == 11_173_962
    with torch.device("meta"):
        assert sum(p.numel() for p in WideResNet().parameters()) == 46_160_474
        assert WideResNet().fc.in_features == 640


def test_model_size_errors():
    with pytest.raises(ValueError, match="depth must be 6 n \\+ 4"):
        WideResNet(depth=30)
    with pytest.raises(ValueError, match="width must be a positive int"):
        ResNet18(width=0)
    with pytest.raises(ValueError, match="widen_factor must be a positive int"):
        WideResNet(widen_factor=1.5)


def _write(path, data, labels, key):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump({"data": data, key: labels, "batch_label": "x"}, f)


def test_load_cifar10_and_cifar100_from_a_tiny_torchvision_folder(tmp_path):
    rng = np.random.default_rng(0)
    batches = [rng.integers(0, 256, size=(3, 3072), dtype=np.uint8) for _ in range(6)]
    labels = [[(5 * i + j) % 10 for j in range(3)] for i in range(6)]
    for i in range(5):
        _write(tmp_path / "cifar-10-batches-py" / f"data_batch_{i + 1}", batches[i], labels[i], "labels")
    _write(tmp_path / "cifar-10-batches-py" / "test_batch", batches[5], labels[5], "labels")
    x, y = load_cifar(tmp_path)
    assert x.shape == (15, 3, 32, 32) and x.dtype == torch.float32 and y.dtype == torch.int64
    # torchvision's layout: row = 1024 red, 1024 green, 1024 blue bytes, each 32 x 32 row-major
    assert torch.equal(x[4], torch.from_numpy(batches[1][1].reshape(3, 32, 32)).float() / 255)
    assert y.tolist() == sum(labels[:5], [])
    xt, yt = load_cifar(tmp_path, train=False)
    assert xt.shape == (3, 3, 32, 32) and yt.tolist() == labels[5]
    _write(tmp_path / "cifar-100-python" / "train", batches[0], [99, 0, 42], "fine_labels")
    assert load_cifar(tmp_path, dataset="cifar100")[1].tolist() == [99, 0, 42]


def test_load_cifar_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="data_batch_1 not found.*download=True"):
        load_cifar(tmp_path)
    with pytest.raises(ValueError, match="dataset must be one of"):
        load_cifar(tmp_path, dataset="cifar-10")
    folder = tmp_path / "cifar-100-python"
    _write(folder / "test", np.zeros((2, 3072), np.uint8), [0, 100], "fine_labels")
    with pytest.raises(ValueError, match=r"labels must lie in 0\.\.99, got 0\.\.100"):
        load_cifar(tmp_path, dataset="cifar100", train=False)
    _write(folder / "test", np.zeros((2, 1024), np.uint8), [0, 1], "fine_labels")
    with pytest.raises(ValueError, match=r"\(n, 3072\)"):
        load_cifar(tmp_path, dataset="cifar100", train=False)
    _write(folder / "test", np.zeros((2, 3072), np.uint8), [0, 1], "coarse")
    with pytest.raises(ValueError, match="'fine_labels'"):
        load_cifar(tmp_path, dataset="cifar100", train=False)


def test_augment_is_a_reflect_padded_crop_and_a_flip():
    x = torch.rand(16, 3, 32, 32)
    out = cifar_augment(x, torch.Generator().manual_seed(3))
    gen = torch.Generator().manual_seed(3)  # the same draws, one sample at a time
    dy, dx = torch.randint(0, 9, (16,), generator=gen), torch.randint(0, 9, (16,), generator=gen)
    flip = torch.rand(16, generator=gen) < 0.5
    padded = torch.nn.functional.pad(x, (4, 4, 4, 4), mode="reflect")
    for i in range(16):
        crop = padded[i, :, dy[i]:dy[i] + 32, dx[i]:dx[i] + 32]
        assert torch.equal(out[i], crop.flip(-1) if flip[i] else crop)
    assert 0 < int(flip.sum()) < 16 and len(set(zip(dy.tolist(), dx.tolist(), strict=True))) > 4
    assert torch.equal(cifar_augment(x, torch.Generator().manual_seed(3)), out)
    with pytest.raises(ValueError, match="padding must be an int"):
        cifar_augment(x, padding=32)


def test_presets_build_and_train_one_tiny_step():
    assert len(CIFAR_PRESETS) == 18 and "cifar100-wrn34-10-pgd-at-l2" in CIFAR_PRESETS
    accepted = set(inspect.signature(AdversarialTrainer).parameters)
    for name in CIFAR_PRESETS:
        p = cifar_preset(name)
        assert set(p.trainer) <= accepted and p.trainer["epochs"] == 200 and p.trainer["lr"] == 0.1
    p = cifar_preset("cifar10-resnet18-pgd-at-l2")
    assert p.model is ResNet18 and p.trainer["eps"] == pytest.approx(128 / 255) and p.trainer["alpha"] == pytest.approx(16 / 255)
    assert cifar_preset("cifar100-prn18-trades-linf").n_classes == 100
    with pytest.raises(ValueError, match="unknown preset 'cifar10-vgg-pgd-at-linf'; accepted"):
        cifar_preset("cifar10-vgg-pgd-at-linf")
    # the recipe runs: one epoch of a tiny ResNet-18 on 8 random images with the augmentation
    torch.manual_seed(0)
    settings = dict(cifar_preset("cifar10-resnet18-pgd-at-linf").trainer, epochs=1, steps=1, eval_steps=1, batch_size=4)
    x, y = torch.rand(8, 3, 32, 32), torch.arange(8) % 10
    trainer = AdversarialTrainer(p.model(10, width=2), random_state=0, **settings).fit(x, y, x[:4], y[:4])
    assert len(trainer.history_) == 1


def test_trainer_refuses_a_non_callable_augment():
    with pytest.raises(TypeError, match="augment must be None or a callable"):
        AdversarialTrainer(ResNet18(width=2), augment="flip", epochs=1).fit(torch.rand(4, 3, 32, 32), torch.arange(4),
                                                                             torch.rand(2, 3, 32, 32), torch.arange(2))


@pytest.mark.parametrize("data, labels, match", [
    (np.random.default_rng(0).random((2, 3072)), [0, 1], "bytes in 0..255"),  # pixels already / 255: read as zeros
    (np.full((2, 3072), 300), [0, 1], "bytes in 0..255"),  # wrapped modulo 256
    (np.full((2, 3072), -1), [0, 1], "bytes in 0..255"),  # wrapped to 255
    (np.zeros((2, 3072), np.uint8), [0.7, 1.9], "labels must be integers"),  # truncated to 0, 1
])
def test_load_cifar_refuses_values_it_would_cast_silently(tmp_path, data, labels, match):
    _write(tmp_path / "cifar-100-python" / "test", data, labels, "fine_labels")
    with pytest.raises(ValueError, match=match):
        load_cifar(tmp_path, dataset="cifar100", train=False)


def test_load_cifar_accepts_integer_pixels_of_another_dtype_and_a_list(tmp_path):
    rows = np.random.default_rng(1).integers(0, 256, size=(2, 3072))
    _write(tmp_path / "cifar-100-python" / "test", rows.tolist(), np.array([3, 4]), "fine_labels")
    x, y = load_cifar(tmp_path, dataset="cifar100", train=False)
    assert torch.equal(x, torch.from_numpy(rows.reshape(2, 3, 32, 32)).float() / 255) and y.tolist() == [3, 4]


@pytest.mark.parametrize("augment, match", [
    (lambda xb, g: (xb - 0.5) / 0.25, r"augment returned values in \["),  # a Normalize step: trains off [0, 1]
    (lambda xb, g: xb[:, :, :16, :16], "augment must return a tensor of the batch's shape"),
    (lambda xb, g: xb.numpy(), "augment must return a tensor of the batch's shape"),
])
@pytest.mark.parametrize("method", ["standard", "pgd-at"])
def test_trainer_checks_what_augment_returns(augment, match, method):
    # standard training used to fit normalised inputs silently while evaluating on [0, 1] ones
    x, y = torch.rand(4, 3, 32, 32), torch.arange(4)
    trainer = AdversarialTrainer(ResNet18(4, width=2), method=method, augment=augment, epochs=1, steps=1, eval_steps=1,
                                 batch_size=4, random_state=0)
    with pytest.raises(ValueError, match=match):
        trainer.fit(x, y, x[:2], y[:2])


def test_preset_attribution_attack_carries_the_presets_norm():
    # attribution_eps alone is 128/255 for the l2 presets: PGD(eps=attribution_eps) would be an l-inf attack of
    # radius 0.5 (any image); the preset's attack keeps the norm
    from crossclass_at import PGD

    l2, linf = cifar_preset("cifar10-resnet18-pgd-at-l2"), cifar_preset("cifar100-wrn34-10-trades-linf")
    a2, ainf = l2.attribution_attack(), linf.attribution_attack()
    assert isinstance(a2, PGD) and (a2.norm, a2.eps, a2.steps) == ("l2", pytest.approx(128 / 255), 20)
    assert (ainf.norm, ainf.eps, ainf.steps) == ("linf", pytest.approx(8 / 255), 20)
    x, y = torch.rand(4, 3, 32, 32), torch.arange(4)
    model = l2.model(10, width=2)
    delta = (a2(model, x, y, generator=torch.Generator().manual_seed(0)) - x).flatten(1)
    assert float(delta.norm(dim=1).max()) <= 128 / 255 + 1e-5


def test_preset_build_normalises_inside_the_model_as_the_official_script():
    # the official train.py feeds normalize_cifar(x) to the model; the bare preset model saw [0, 1] inputs
    from crossclass_at import Normalized

    p = cifar_preset("cifar100-resnet18-pgd-at-linf")
    assert p.mean == pytest.approx((0.5071, 0.4865, 0.4409), abs=1e-4)
    torch.manual_seed(0)
    model = p.build(width=2)
    assert isinstance(model, Normalized) and find_head(model) is model.model.fc and model.model.fc.out_features == 100
    x = torch.rand(4, 3, 32, 32)
    model.eval()
    mean, std = torch.tensor(p.mean).view(1, 3, 1, 1), torch.tensor(p.std).view(1, 3, 1, 1)
    assert torch.allclose(model(x), model.model((x - mean) / std))
    assert cifar_preset("cifar10-prn18-trades-linf").std == pytest.approx((0.2471, 0.2435, 0.2616))
    settings = dict(p.trainer, epochs=1, steps=1, eval_steps=1, batch_size=4)
    y = torch.tensor([0, 99, 5, 42])
    trainer = AdversarialTrainer(model, random_state=0, **settings).fit(x, y, x[:2], y[:2])
    assert len(trainer.history_) == 1 and np.isfinite(trainer.history_[0]["train_loss"])


def test_load_cifar_train_must_be_a_bool(tmp_path):
    # train="test" or "false" is truthy: it loaded the 50 000 training images
    with pytest.raises(TypeError, match="train must be True or False"):
        load_cifar(tmp_path, train="test")
