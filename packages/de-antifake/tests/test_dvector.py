"""GE2E d-vector: the loss against a hand computation, training, held-out EER, gradients, determinism."""

import numpy as np
import pytest
import torch

from de_antifake.clone import SpeakerVerifier, embed_batch
from de_antifake.corpus import make_corpus
from de_antifake.dvector import DVectorConfig, DVectorEncoder, ge2e_loss, ge2e_similarity, train_dvector
from de_antifake.encoder import eer_threshold
from de_antifake.protect import attackvc

CFG = DVectorConfig(hidden_size=32, embedding_size=32, num_layers=1, partial_frames=80, n_speakers=4, n_utterances=4,
                    steps=40)


@pytest.fixture(scope="module")
def data():
    c = make_corpus(n_speakers=4, n_utterances=8, seconds=1.0, words_per_utterance=2, random_state=5)
    train = np.arange(len(c.utterances)) % 8 < 5
    return c.waveforms(), c.labels, train


@pytest.fixture(scope="module")
def trained(data):
    w, lab, train = data
    return train_dvector(w[train], lab[train], sr=16000, config=CFG, random_state=0)


def _hand_loss(e, w, b):
    n, m, _ = e.shape
    e = e / np.linalg.norm(e, axis=2, keepdims=True)
    total = 0.0
    for j in range(n):
        for i in range(m):
            s = np.empty(n)
            for k in range(n):
                if k == j:
                    c = np.mean([e[j, q] for q in range(m) if q != i], axis=0)
                else:
                    c = e[k].mean(axis=0)
                s[k] = w * (e[j, i] @ c) / np.linalg.norm(c) + b
            total += -s[j] + np.log(np.exp(s).sum())
    return total / (n * m)


def test_ge2e_loss_equals_a_hand_computation():
    rng = np.random.default_rng(0)
    e = rng.standard_normal((3, 4, 5))
    for w, b in ((10.0, -5.0), (2.5, 0.7)):
        got = float(ge2e_loss(torch.tensor(e), torch.tensor(w, dtype=torch.float64), b))
        assert got == pytest.approx(_hand_loss(e, w, b), rel=1e-12)
    s = ge2e_similarity(torch.tensor(e), 1.0, 0.0)
    # the own-speaker column excludes the utterance: it differs from the cosine with the full centroid
    en = e / np.linalg.norm(e, axis=2, keepdims=True)
    full = en[0].mean(0)
    assert float(s[0, 0, 0]) != pytest.approx(en[0, 0] @ full / np.linalg.norm(full))
    with pytest.raises(ValueError, match="M >= 2"):
        ge2e_loss(torch.zeros(3, 1, 4), 10.0, -5.0)


def test_training_lowers_the_loss_and_held_out_eer_is_below_chance(trained, data):
    w, lab, train = data
    assert trained.losses.shape == (40,)
    assert trained.losses[:5].mean() > 1.3  # about log 4 at the start
    assert trained.losses[-5:].mean() < 0.3 * trained.losses[:5].mean()
    assert trained.w > 0
    held = ~train
    e, lh = embed_batch(trained.encoder, w[held]), lab[held]
    sims = e @ e.T
    iu = np.triu_indices(len(lh), 1)
    same = lh[iu[0]] == lh[iu[1]]
    _, eer = eer_threshold(sims[iu][same], sims[iu][~same])
    assert eer < 0.2  # chance is 0.5
    ver = SpeakerVerifier().fit(embed_batch(trained.encoder, w[train]), lab[train])
    assert ver.accept(e, lh).mean() > 0.8


def test_gradient_reaches_the_waveform_and_attackvc_accepts_it(trained, data):
    w, _, _ = data
    x = torch.tensor(w[:2], requires_grad=True)
    trained.encoder.embed(x).sum().backward()
    g = x.grad.numpy()
    assert np.isfinite(g).all() and np.abs(g).max() > 0
    target = trained.encoder.embed_utterance(w[-1], 16000)
    protected = attackvc(w[0], target, eps=0.01, encoder=trained.encoder, iters=3)
    assert protected.shape == w[0].shape and np.abs(protected - w[0]).max() <= 0.01 + 1e-7


def test_same_seed_gives_identical_weights(data):
    w, lab, train = data
    cfg = DVectorConfig(hidden_size=8, embedding_size=8, num_layers=1, partial_frames=80, n_speakers=3,
                        n_utterances=2, steps=3)
    before = torch.random.get_rng_state()
    a = train_dvector(w[train], lab[train], sr=16000, config=cfg, random_state=7)
    assert torch.equal(torch.random.get_rng_state(), before)  # the caller's RNG is untouched
    b = train_dvector(w[train], lab[train], sr=16000, config=cfg, random_state=7)
    c = train_dvector(w[train], lab[train], sr=16000, config=cfg, random_state=8)
    sa, sb, sc = a.encoder.state_dict(), b.encoder.state_dict(), c.encoder.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    np.testing.assert_array_equal(a.losses, b.losses)
    assert not torch.equal(sa["linear.weight"], sc["linear.weight"])


def test_save_load_round_trip(trained, data, tmp_path):
    w, _, _ = data
    path = trained.encoder.save(tmp_path / "dvector.pt")
    back = DVectorEncoder.load(path)
    assert back.config == trained.encoder.config
    np.testing.assert_array_equal(back.embed_utterance(w[0], 16000), trained.encoder.embed_utterance(w[0], 16000))
    with pytest.raises(FileNotFoundError, match="nothere.pt"):
        DVectorEncoder.load(tmp_path / "nothere.pt")
    torch.save({"x": 1}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a d-vector"):
        DVectorEncoder.load(tmp_path / "other.pt")
    blob = torch.load(path, weights_only=True)  # weights that do not fit their config
    blob["config"]["hidden_size"] += 1
    torch.save(blob, tmp_path / "mismatch.pt")
    with pytest.raises(ValueError, match="do not match"):
        DVectorEncoder.load(tmp_path / "mismatch.pt")


def test_bad_configs_and_data(data):
    w, lab, _ = data
    for kwargs, match in (({"partial_frames": 40}, "77 frames apart"), ({"n_speakers": 1}, "n_speakers"),
                          ({"lr": 0.0}, "lr"), ({"pooling": "max"}, "pooling"), ({"steps": 2.5}, "steps")):
        with pytest.raises(ValueError, match=match):
            DVectorConfig(**kwargs)
    with pytest.raises(TypeError):
        DVectorConfig(32)  # keyword-only
    with pytest.raises(ValueError, match="n_speakers=5"):
        train_dvector(w, lab, sr=16000, config=DVectorConfig(partial_frames=80, n_speakers=5, steps=1))
    with pytest.raises(ValueError, match="shorter than one partial"):
        train_dvector(w[:, :4000], lab, sr=16000, config=CFG)
    with pytest.raises(ValueError, match="one per waveform"):
        train_dvector(w, lab[:-1], sr=16000, config=CFG)
    with pytest.raises(ValueError, match="sr=8000"):
        train_dvector(w, lab, sr=8000, config=CFG)
