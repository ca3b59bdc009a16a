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
