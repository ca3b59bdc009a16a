"""`import kandinsky_cp` and `python -m kandinsky_cp --help` load no heavy library and start about as fast as Python."""

from __future__ import annotations

import json
import subprocess
import sys
import time

HEAVY = ("torch", "transformers", "sklearn", "scipy", "matplotlib", "tqdm", "xgboost", "lightgbm", "shap")


def _run(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, check=True)
    return time.perf_counter() - start


def test_import_and_help_load_no_heavy_library():
    code = ("import sys, json, runpy; sys.argv = ['kandinsky_cp', '--help']\n"
            "try:\n    runpy.run_module('kandinsky_cp', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_help_starts_within_a_few_interpreter_starts():
    """Relative to `python -c pass` (best of 3 each), so a loaded machine slows both alike."""
    bare = min(_run(["-c", "pass"]) for _ in range(3))
    help_time = min(_run(["-m", "kandinsky_cp", "--help"]) for _ in range(3))
    assert help_time < 15 * bare + 0.5, (help_time, bare)
