"""The command line: help and lazy imports."""

import importlib.util
import subprocess
import sys

import pytest

from de_antifake.__main__ import main


def test_importing_the_command_line_imports_no_experiment_code():
    code = ("import sys, de_antifake.__main__; assert 'de_antifake.experiments' not in sys.modules; "
            "assert 'torch' not in sys.modules; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_help_shows_the_paper(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "Rethinking the Protective Perturbations" in capsys.readouterr().out


def test_the_pretrained_encoder_never_imports_resemblyzer_or_webrtcvad():
    if importlib.util.find_spec("resemblyzer") is None:
        pytest.skip("the resemblyzer wheel (its pretrained.pt) is not installed")
    code = ("import sys; from de_antifake.encoder import ResemblyzerEncoder; ResemblyzerEncoder.from_pretrained(); "
            "bad = [m for m in ('resemblyzer', 'webrtcvad', 'pkg_resources') if m in sys.modules]; "
            "assert not bad, bad; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_demo_finds_the_weights_reproduce_wrote_to_the_same_out_folder(tmp_path):
    from de_antifake.experiments import WEIGHT_FILES, _weights_folder, shipped_weights

    fallback = _weights_folder(tmp_path)
    assert fallback in (None, shipped_weights())
    (tmp_path / "weights").mkdir()
    for name in WEIGHT_FILES[:-1]:
        (tmp_path / "weights" / name).write_bytes(b"")
    assert _weights_folder(tmp_path) == fallback  # an incomplete folder is not used
    (tmp_path / "weights" / WEIGHT_FILES[-1]).write_bytes(b"")
    assert _weights_folder(tmp_path) == tmp_path / "weights"


def test_shipped_weights_load_and_stage1_keeps_clean_audio():
    import numpy as np
    import torch

    from de_antifake.audio import snr_db
    from de_antifake.corpus import make_corpus
    from de_antifake.experiments import WEIGHT_FILES, load_weights, shipped_weights

    folder = shipped_weights()
    assert all((folder / n).is_file() for n in WEIGHT_FILES), sorted(p.name for p in folder.glob("*"))
    assert sum((folder / n).stat().st_size for n in WEIGHT_FILES) < 2_000_000  # tiny
    torch.set_num_threads(1)
    stage1, guided, plain = load_weights(folder, random_state=0)
    assert guided.use_text and not plain.use_text and guided.parametrization == "denoiser"
    wav = make_corpus(n_speakers=1, n_utterances=1, seconds=1.5, random_state=123).utterances[0].wav
    out = stage1.purify(wav, 16000)
    assert snr_db(wav, out) > 15  # about 20 dB (the former weights kept 8 to 9 dB, untrained ones below 0)
    alignment = make_corpus(n_speakers=1, n_utterances=1, seconds=1.5, random_state=123).utterances[0].alignment
    assert snr_db(wav, guided.refine(out, 16000, alignment=alignment)) > 15  # the refiner keeps it (was about 0 dB)
    noise = stage1.purify(np.zeros_like(wav), 16000)
    assert np.isfinite(noise).all()


def test_experiments_restore_the_callers_torch_thread_count():
    import torch

    from de_antifake import experiments

    seen = []
    probe = experiments._one_thread(lambda: seen.append(torch.get_num_threads()))
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        probe()
        assert seen == [1] and torch.get_num_threads() == 2
        for fn in (experiments.run_chain, experiments.reproduce, experiments.demo):
            assert fn.__wrapped__ is not None  # run_chain, reproduce and demo run on one thread, then restore
    finally:
        torch.set_num_threads(before)
