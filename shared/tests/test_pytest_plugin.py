"""The pytest plugin pins BLAS/OpenMP/torch threads only where the suite's configuration asks for it."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("threadpoolctl")
pytest.importorskip("torch")

PROBE = textwrap.dedent("""
    import json, os
    import numpy as np
    import torch
    from threadpoolctl import threadpool_info

    def test_report():
        np.ones((64, 64)) @ np.ones((64, 64))
        blas = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
        with open(os.environ["PROBE_OUT"], "w") as f:
            json.dump({"blas": blas, "torch": torch.get_num_threads(), "omp": os.environ.get("OMP_NUM_THREADS")}, f)
""")
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
               "NUMEXPR_NUM_THREADS", "ICML25_TEST_THREADS")


def probe(tmp_path, name, ini, extra_env=None):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "test_probe.py").write_text(PROBE)
    (folder / "pytest.ini").write_text("[pytest]\n" + ini)
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS and not k.startswith("PYTEST_")}
    env.update(extra_env or {}, PROBE_OUT=str(folder / "out.json"))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)],
                          capture_output=True, text=True, cwd=folder, env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((folder / "out.json").read_text())


def test_threads_pinned_with_the_ini_option_and_untouched_without(tmp_path):
    pinned = probe(tmp_path, "pinned", "icml25_threads = 1\n")
    assert pinned["blas"] and set(pinned["blas"]) == {1}
    assert pinned["torch"] == 1 and pinned["omp"] == "1"
    from_env = probe(tmp_path, "env", "", {"ICML25_TEST_THREADS": "1"})
    assert set(from_env["blas"]) == {1} and from_env["torch"] == 1
    free = probe(tmp_path, "free", "")
    assert free["omp"] is None  # nothing set where the option is unset
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one CPU: the unpinned default cannot be told apart from the pinned one")
    assert max(free["blas"]) > 1 and free["torch"] > 1


def test_bad_thread_count_is_a_usage_error(tmp_path):
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "test_x.py").write_text("def test_x():\n    pass\n")
    (folder / "pytest.ini").write_text("[pytest]\nicml25_threads = zero\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)],
                          capture_output=True, text=True, cwd=folder, timeout=60,
                          env={k: v for k, v in os.environ.items() if k not in THREAD_VARS})
    assert done.returncode == 4 and "must be a positive int, got 'zero'" in done.stderr
