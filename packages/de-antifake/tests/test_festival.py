"""festival as an optional data source: a clear error without it, and the corpus it builds (with a stand-in
``text2wave`` that writes a tone, since festival is a system package)."""

import stat
import sys

import numpy as np
import pytest
from icml25_shared.testing import assert_rejects

from de_antifake import synthesize_festival
from de_antifake.datasets import FESTIVAL_INSTALL, festival_voices

STAND_IN = """#!{python}
import math, struct, sys, wave
args = sys.argv[1:]
out, voice = args[args.index("-o") + 1], args[args.index("-eval") + 1]
if "broken" in voice:
    sys.stderr.write("SIOD ERROR: unbound variable " + voice)
    sys.exit(1)
n = 2205 * len(sys.stdin.read().split())  # 0.1 s per word at 22.05 kHz, festival's usual rate
with wave.open(out, "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(22050)
    w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * (200 + len(voice)) * i / 22050)))
                           for i in range(n)))
"""


@pytest.fixture
def text2wave(tmp_path):
    path = tmp_path / "text2wave"
    path.write_text(STAND_IN.format(python=sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_missing_festival_says_how_to_install_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="text2wave was not found") as err:
        synthesize_festival(["Hello world."], folder=tmp_path, text2wave=tmp_path / "no" / "text2wave")
    assert FESTIVAL_INSTALL in str(err.value)
    assert festival_voices(tmp_path / "none") == []


def test_no_voice_installed_says_so(tmp_path, text2wave):
    with pytest.raises(FileNotFoundError, match="no festival voice is installed") as err:
        synthesize_festival(["Hello world."], folder=tmp_path / "out", text2wave=text2wave, voices_dir=tmp_path)
    assert FESTIVAL_INSTALL in str(err.value)


def test_corpus_of_every_voice_and_sentence(tmp_path, text2wave):
    voices_dir = tmp_path / "voices"
    for lang, voice in (("english", "kal_diphone"), ("english", "cmu_us_slt_arctic_hts"), ("spanish", "el_diphone")):
        (voices_dir / lang / voice).mkdir(parents=True)
    assert festival_voices(voices_dir) == ["cmu_us_slt_arctic_hts", "el_diphone", "kal_diphone"]
    c = synthesize_festival(["Hello world.", "The cat sat down."], folder=tmp_path / "out", text2wave=text2wave,
                            voices=["kal_diphone", "cmu_us_slt_arctic_hts"], voices_dir=voices_dir)
    assert c.speaker_ids == ["cmu_us_slt_arctic_hts", "kal_diphone"]
    assert [u.speaker for u in c.utterances] == [0, 0, 1, 1]
    assert [u.words for u in c.utterances[:2]] == [["HELLO", "WORLD"], ["THE", "CAT", "SAT", "DOWN"]]
    assert [len(u.wav) for u in c.utterances[:2]] == [3200, 6400]  # resampled 22.05 -> 16 kHz
    assert all(u.wav.dtype == np.float32 and u.alignment == [] for u in c.utterances)
    assert all(p.is_file() for p in c.paths)
    everyone = synthesize_festival("Hello.", folder=tmp_path / "all", text2wave=text2wave, voices_dir=voices_dir)
    assert everyone.speaker_ids == festival_voices(voices_dir)


def test_festival_failure_is_quoted(tmp_path, text2wave):
    with pytest.raises(RuntimeError, match="broken_voice.*unbound variable"):
        synthesize_festival(["Hello."], folder=tmp_path, text2wave=text2wave, voices=["broken_voice"])
    with pytest.raises(ValueError, match="plain festival voice names"):
        synthesize_festival(["Hello."], folder=tmp_path, text2wave=text2wave, voices=["kal) (quit"])


def test_parameters_are_checked(tmp_path, text2wave):
    valid = {"folder": tmp_path, "text2wave": text2wave, "voices": ["kal_diphone"]}
    assert_rejects(synthesize_festival, "sentences", wrong_type=[1], wrong_value=["..."], **valid)
    with pytest.raises(ValueError, match="sentences"):
        synthesize_festival([], **valid)
    with pytest.raises(TypeError, match="text2wave"):
        synthesize_festival(["Hello."], folder=tmp_path, text2wave=3)
