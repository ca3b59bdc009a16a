"""`python -m looped_transformers --help` loads no torch/transformers; a bare import registers the Auto classes."""

import subprocess
import sys


def _run(code_or_args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *code_or_args], capture_output=True, text=True, timeout=120)


def test_help_loads_neither_torch_nor_transformers():
    probe = ("import runpy, sys; sys.argv = ['looped_transformers', '--help']; "
             "sys.orig_argv = [sys.executable, '-m', 'looped_transformers', '--help']\n"
             "try:\n    runpy.run_module('looped_transformers', run_name='__main__', alter_sys=True)\n"
             "except SystemExit:\n    pass\n"
             "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    done = _run(["-c", probe])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
    real = _run(["-m", "looped_transformers", "--help"])
    assert real.returncode == 0 and "demo" in real.stdout


def test_bare_import_registers_the_model_with_the_auto_classes():
    done = _run(["-c", "import looped_transformers\nfrom transformers import AutoConfig\n"
                       "print(type(AutoConfig.for_model('looped', n_loops=2)).__name__)"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "LoopedConfig"


def test_public_names_resolve_when_started_as_the_command():
    probe = ("import sys; sys.orig_argv = [sys.executable, '-m', 'looped_transformers']\n"
             "import looped_transformers as lt\n"
             "assert 'looped_transformers.modeling' not in sys.modules\n"
             "print(lt.LoopedConfig.__name__, all(hasattr(lt, n) for n in lt.__all__))")
    done = _run(["-c", probe])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "LoopedConfig True"
