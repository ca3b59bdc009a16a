"""The template script makes a package that passes the structural checks and its own smoke test."""

import subprocess
import sys
from pathlib import Path

import pytest

from new_package import create_package

ROOT = Path(__file__).resolve().parents[2]
SHAPE = ["pyproject.toml", "README.md", "CHANGELOG.md", "src/toy_method/__init__.py",
         "src/toy_method/__main__.py", "tests/test_smoke.py", "benchmarks/run.py"]


def test_shape_and_names(tmp_path):
    target = create_package("toy-method", summary="A toy method", root=tmp_path)
    for relative in SHAPE:
        assert (target / relative).is_file(), relative
    text = "".join((target / r).read_text() for r in SHAPE)
    assert "__DIST__" not in text and "__MODULE__" not in text and "__SUMMARY__" not in text
    assert 'name = "toy-method"' in (target / "pyproject.toml").read_text()
    assert "TODO" not in text and "NotImplementedError" not in text


def test_rejects_bad_names(tmp_path):
    with pytest.raises(ValueError, match="lowercase"):
        create_package("Bad_Name", summary="x", root=tmp_path)
    with pytest.raises(ValueError, match="identifier"):
        create_package("ok-name", module="class", summary="x", root=tmp_path)
    create_package("twice", summary="x", root=tmp_path)
    with pytest.raises(FileExistsError):
        create_package("twice", summary="x", root=tmp_path)


def test_generated_package_installs_and_passes_its_smoke_test(tmp_path):
    import shutil

    shutil.copytree(ROOT / "shared", tmp_path / "shared", ignore=shutil.ignore_patterns("__pycache__", "tests"))
    target = create_package("toy-method", summary="A toy method", root=tmp_path)
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "checks.py"), "imports", "--root", str(tmp_path)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
    # Install without dependencies (they are in this environment already) into a private target dir.
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                           "--target", str(site), str(target)], capture_output=True, text=True)
    if done.returncode != 0 and "hatch" in done.stderr.lower():  # build isolation needs hatchling
        pytest.skip(f"cannot build without isolation here: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stderr
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(target / "tests")],
                          capture_output=True, text=True, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
