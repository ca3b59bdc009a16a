"""``python -m de_antifake train --data DIR``: retraining on a folder, progress, checkpoints, named errors."""

import numpy as np
import pytest
from scipy.io import wavfile

from de_antifake.__main__ import main
from de_antifake.diffusion import DiffWavePurifier, load_purification_pkl
from de_antifake.refiner import load_refinement_ckpt
from de_antifake.retrain import load_folder


@pytest.fixture
def folder(tmp_path, small_corpus):
    data = tmp_path / "data"
    (data / "speaker2").mkdir(parents=True)
    wavs = [u.wav for u in small_corpus.utterances[:2]]
    wavfile.write(data / "a.wav", 16000, (wavs[0] * 32767).astype(np.int16))  # PCM is scaled
    wavfile.write(data / "speaker2" / "b.wav", 16000, wavs[1].astype(np.float32))
    (data / "notes.txt").write_text("not audio")
    return data


def test_train_writes_loadable_weights_with_progress_and_checkpoints(folder, tmp_path, capsys):
    out = tmp_path / "weights"
    code = main(["train", "--data", str(folder), "--out", str(out), "--seconds", "0.5", "--stage1-steps", "3",
                 "--refiner-steps", "2", "--checkpoint-every", "2"])
    assert code == 0
    err = capsys.readouterr().err
    assert "stage 1: step 1/3" in err and "stage 1: step 3/3" in err and "refiner: step 2/2" in err
    assert sorted(p.name for p in (out / "checkpoints").glob("*.pkl")) == ["stage1_step2.pkl", "stage1_step3.pkl"]
    assert (out / "checkpoints" / "config.json").is_file()  # the official layout: the config beside the weights
    dw, schedule = load_purification_pkl(out / "purification.pkl")
    refiner = load_refinement_ckpt(out / "refinement_unguided.ckpt")
    assert not refiner.use_text
    clip = load_folder(folder, seconds=0.5)[0][0]
    purified = DiffWavePurifier(dw, schedule=schedule, t=3, peak=0.95, random_state=0).purify(clip, 16000)
    assert purified.shape == clip.shape and np.isfinite(purified).all()
    # the last checkpoint holds the final averaged weights
    last, _ = load_purification_pkl(out / "checkpoints" / "stage1_step3.pkl")
    assert all(np.array_equal(a.detach().numpy(), b.detach().numpy())
               for a, b in zip(last.parameters(), dw.parameters(), strict=True))


def test_folder_clips(folder, small_corpus):
    clips, n_files = load_folder(folder, seconds=0.5)
    expected = sum(len(u.wav) // 8000 for u in small_corpus.utterances[:2])  # whole 0.5 s clips of each file
    assert n_files == 2 and clips.shape == (expected, 8000) and expected >= 4
    assert np.allclose(clips[0], small_corpus.utterances[0].wav[:8000], rtol=1e-4, atol=2 / 32768)
    assert clips.dtype == np.float32 and np.abs(clips).max() <= 1.0


def test_bad_folders_are_named(tmp_path, folder, capsys):
    assert main(["train", "--data", str(tmp_path / "missing")]) == 1
    assert "training data folder not found" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["train", "--data", str(empty)]) == 1
    assert "holds no audio file" in capsys.readouterr().err
    with pytest.raises(ValueError, match="lasts 5.0 s"):
        load_folder(folder, seconds=5.0)
