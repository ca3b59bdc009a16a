"""ECAPA loader: round trip through a speechbrain-layout folder, errors, gradients, and (when speechbrain
imports) identity with speechbrain's own Fbank + InputNormalization + ECAPA_TDNN."""

import sys
import types

import numpy as np
import pytest
import torch

from de_antifake.clone import SpeakerVerifier, embed_batch
from de_antifake.ecapa import ECAPATDNN, SpeechbrainFbank, load_ecapa, save_ecapa

pytest.importorskip("yaml")

SIZES = {"channels": [16, 16, 16, 16, 48], "kernel_sizes": [5, 3, 3, 3, 1], "dilations": [1, 2, 3, 4, 1],
         "attention_channels": 8, "lin_neurons": 8, "se_channels": 8, "res2net_scale": 4}

# The layout of speechbrain/spkrec-ecapa-voxceleb's hyperparams.yaml with tiny sizes.
REAL_LAYOUT = """# Model: ECAPA big for Speaker verification
n_mels: 80
pretrained_path: speechbrain/spkrec-ecapa-voxceleb
out_n_neurons: 7205
compute_features: !new:speechbrain.lobes.features.Fbank
    n_mels: !ref <n_mels>
mean_var_norm: !new:speechbrain.processing.features.InputNormalization
    norm_type: sentence
    std_norm: False
embedding_model: !new:speechbrain.lobes.models.ECAPA_TDNN.ECAPA_TDNN
    input_size: !ref <n_mels>
    channels: [16, 16, 16, 16, 48]
    kernel_sizes: [5, 3, 3, 3, 1]
    dilations: [1, 2, 3, 4, 1]
    attention_channels: 8
    se_channels: 8
    res2net_scale: 4
    lin_neurons: 8
classifier: !new:speechbrain.lobes.models.ECAPA_TDNN.Classifier
    input_size: 8
    out_neurons: !ref <out_n_neurons>
mean_var_norm_emb: !new:speechbrain.processing.features.InputNormalization
    norm_type: global
    std_norm: False
modules:
    compute_features: !ref <compute_features>
    mean_var_norm: !ref <mean_var_norm>
    embedding_model: !ref <embedding_model>
    mean_var_norm_emb: !ref <mean_var_norm_emb>
    classifier: !ref <classifier>
label_encoder: !new:speechbrain.dataio.encoder.CategoricalEncoder
pretrainer: !new:speechbrain.utils.parameter_transfer.Pretrainer
    loadables:
        embedding_model: !ref <embedding_model>
        mean_var_norm_emb: !ref <mean_var_norm_emb>
        classifier: !ref <classifier>
        label_encoder: !ref <label_encoder>
    paths:
        embedding_model: !ref <pretrained_path>/embedding_model.ckpt
        mean_var_norm_emb: !ref <pretrained_path>/mean_var_norm_emb.ckpt
        classifier: !ref <pretrained_path>/classifier.ckpt
        label_encoder: !ref <pretrained_path>/label_encoder.txt
"""


def _model(seed=0):
    torch.manual_seed(seed)
    m = ECAPATDNN(80, **SIZES)
    with torch.no_grad():  # non-trivial batch-norm statistics, so eval mode matters
        for mod in m.modules():
            if isinstance(mod, torch.nn.BatchNorm1d):
                mod.running_mean.uniform_(-0.5, 0.5)
                mod.running_var.uniform_(0.5, 2.0)
    return m.eval()


@pytest.fixture(scope="module")
def wavs(small_corpus):
    return small_corpus.waveforms()[:6]


def test_round_trip_gives_identical_embeddings(tmp_path, wavs):
    model = _model()
    mean = torch.randn(8)
    enc = load_ecapa(save_ecapa(model, tmp_path / "ecapa", embedding_mean=mean))
    x = torch.from_numpy(wavs)
    with torch.no_grad():
        feats = SpeechbrainFbank(n_mels=80)(x)
        direct = model(feats - feats.mean(dim=1, keepdim=True))[:, 0]
        got = enc.raw_embed(x)
    assert torch.equal(got, direct)
    assert torch.equal(enc.raw_embed(x, normalize=True), direct - mean)
    e = enc.embed_utterance(wavs[0], 16000)
    np.testing.assert_allclose(e, (direct[0] / direct[0].norm()).numpy(), rtol=1e-5, atol=1e-7)
    assert not enc.training and not any(p.requires_grad for p in enc.parameters())


def test_real_layout_hyperparams_load(tmp_path, wavs):
    model = _model(1)
    (tmp_path / "hyperparams.yaml").write_text(REAL_LAYOUT)
    torch.save(model.state_dict(), tmp_path / "embedding_model.ckpt")
    enc = load_ecapa(tmp_path)
    assert enc.embedding_mean is None
    with pytest.raises(ValueError, match="mean_var_norm_emb.ckpt"):
        enc.raw_embed(torch.from_numpy(wavs[:1]), normalize=True)
    ver = SpeakerVerifier().fit(embed_batch(enc, wavs), np.array([0, 0, 0, 1, 1, 1]))
    assert ver.centroids_.shape == (2, 8)


def test_fbank_values():
    fb = SpeechbrainFbank(n_mels=80)
    tone = 0.5 * torch.sin(2 * torch.pi * 1000 * torch.arange(16000, dtype=torch.float64) / 16000).float()
    x = tone + 1e-3 * torch.from_numpy(np.random.default_rng(0).standard_normal(16000).astype(np.float32))
    db = fb(x[None])[0].double().numpy()
    # frame 50 by hand: samples 7800..8199 (centred frames), periodic Hamming, |rfft|^2, triangular HTK filters
    n = np.arange(400)
    frame = x.double().numpy()[7800:8200] * (0.54 - 0.46 * np.cos(2 * np.pi * n / 400))
    power = np.abs(np.fft.rfft(frame)) ** 2
    hz = 700 * (10 ** (np.linspace(0, 2595 * np.log10(1 + 8000 / 700), 82) / 2595) - 1)
    freqs = np.linspace(0, 8000, 201)
    slope = (freqs[None] - hz[1:-1, None]) / (hz[1:-1] - hz[:-2])[:, None]
    filters = np.maximum(0, np.minimum(slope + 1, 1 - slope))
    expected = np.maximum(10 * np.log10(np.maximum(filters @ power, 1e-10)), db.max() - 80)
    np.testing.assert_allclose(db[50], expected, rtol=1e-4, atol=1e-3)
    assert db.max() - db.min() == pytest.approx(80.0)  # the top_db floor
    assert int(db[50].argmax()) == int(np.abs(hz[1:-1] - 1000).argmin())


def test_gradient_reaches_the_waveform(tmp_path, wavs):
    enc = load_ecapa(save_ecapa(_model(), tmp_path))
    x = torch.tensor(wavs[:2], requires_grad=True)
    enc.embed(x)[:, 0].sum().backward()
    assert torch.isfinite(x.grad).all() and float(x.grad.abs().max()) > 0
    assert torch.allclose(enc.embed(x.detach()).norm(dim=1), torch.ones(2))
    torch.testing.assert_close(enc.embed(x.detach().double()), enc.embed(x.detach()))  # float64 is cast
    with pytest.raises(ValueError, match="reflect padding"):
        enc.embed(torch.zeros(480))



@pytest.mark.parametrize("bad, match", [
    (torch.full((16000,), 3, dtype=torch.int16), "integer"),
    (torch.tensor([0.1] * 16000 + [float("nan")]), "NaN"),
    (torch.zeros(0), "empty"),
])
def test_pcm_nan_and_empty_waveforms_are_refused(tmp_path, bad, match):
    enc = load_ecapa(save_ecapa(_model(), tmp_path))
    with pytest.raises(ValueError, match=match):
        enc.embed(bad)


def test_directly_built_encoder_is_in_eval_mode(wavs):
    from de_antifake.ecapa import ECAPAEncoder

    model = _model().train()
    enc = ECAPAEncoder(SpeechbrainFbank(n_mels=80), model)
    x = torch.from_numpy(wavs[:3])
    before = [b.clone() for b in model.buffers()]
    with torch.no_grad():
        batch = enc.embed(x)
        single = enc.embed(x[0])
    torch.testing.assert_close(batch[0], single, atol=1e-5, rtol=1e-5)  # no batch statistics
    assert all(torch.equal(a, b) for a, b in zip(before, model.buffers(), strict=True))  # running stats untouched

def test_missing_files_name_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        load_ecapa(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="hyperparams.yaml"):
        load_ecapa(tmp_path)
    folder = save_ecapa(_model(), tmp_path / "m")
    (folder / "embedding_model.ckpt").unlink()
    with pytest.raises(FileNotFoundError, match=r"m/embedding_model\.ckpt"):
        load_ecapa(folder)


def test_unsupported_or_mismatched_settings(tmp_path):
    folder = save_ecapa(_model(), tmp_path)
    text = (folder / "hyperparams.yaml").read_text()
    cases = [
        (text.replace("    n_mels: !ref <n_mels>\n", "    n_mels: !ref <n_mels>\n    deltas: True\n", 1), "deltas"),
        (text.replace("std_norm: False", "std_norm: True", 1), "sentence with std_norm: False"),
        # no mean subtraction at all: loading it with the mean subtracted would give other embeddings
        (text.replace("std_norm: False", "std_norm: False\n    mean_norm: False", 1), "mean_norm"),
        (text.replace("channels: [16, 16, 16, 16, 48]", "channels: [32, 32, 32, 32, 96]"), "does not match"),
        (text.replace("lin_neurons: 8", "lin_neurons: 8\n    bogus: 3"), r"\['bogus'\]"),
        (text.replace("input_size: !ref <n_mels>", "input_size: !ref <n_mels> * 2"), "not supported"),
        (text.replace("ECAPA_TDNN.ECAPA_TDNN", "Xvector.Xvector"), "must be !new:speechbrain.lobes.models.ECAPA"),
        ("n_mels: 80\n  bad: : indentation", "not valid YAML"),
        (text.replace("    n_mels: !ref <n_mels>\n", "    n_mels: !ref <n_mels>\n    sample_rate: 8000\n", 1), "8000 Hz"),
    ]
    for bad, match in cases:
        (folder / "hyperparams.yaml").write_text(bad)
        with pytest.raises(ValueError, match=match):
            load_ecapa(folder)


def _speechbrain(monkeypatch):
    """speechbrain's modules, or a skip. A torchaudio that is absent or cannot load (the PyPI build beside a
    CPU torch) is replaced for this test by an empty module: these three modules never call it."""
    try:
        import torchaudio  # noqa: F401
    except (ImportError, OSError):
        monkeypatch.setitem(sys.modules, "torchaudio", types.SimpleNamespace(__version__="0"))
    try:
        from speechbrain.lobes.features import Fbank
        from speechbrain.lobes.models.ECAPA_TDNN import ECAPA_TDNN
        from speechbrain.processing.features import InputNormalization
    except (ImportError, OSError) as err:
        pytest.skip(f"speechbrain is not importable here ({type(err).__name__}: {err}); parity is measured in "
                    "studies/ecapa_parity.py")
    return Fbank, ECAPA_TDNN, InputNormalization


def test_identical_to_speechbrain(tmp_path, wavs, monkeypatch):
    Fbank, ECAPA_TDNN, InputNormalization = _speechbrain(monkeypatch)
    sb = ECAPA_TDNN(80, **SIZES)
    sb.load_state_dict(_model(2).state_dict())
    sb.eval()
    torch.save(sb.state_dict(), tmp_path / "embedding_model.ckpt")
    (tmp_path / "hyperparams.yaml").write_text(REAL_LAYOUT)
    x = torch.from_numpy(wavs)
    with torch.no_grad():
        ones = torch.ones(len(x))
        ref = sb(InputNormalization(norm_type="sentence", std_norm=False)(Fbank(n_mels=80)(x), ones), ones)[:, 0]
        got = load_ecapa(tmp_path).raw_embed(x)
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-6)
