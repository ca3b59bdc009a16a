"""The dependency checks fail on planted violations and name the file."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import checks
from new_package import create_package

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def workspace(tmp_path):
    """A copy of the shared distribution plus two template packages."""
    shutil.copytree(ROOT / "shared", tmp_path / "shared", ignore=shutil.ignore_patterns("__pycache__", "tests"))
    create_package("alpha-pkg", summary="first", root=tmp_path)
    create_package("beta-pkg", summary="second", root=tmp_path)
    return tmp_path


def run_imports(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "tools" / "checks.py"), "imports", "--root", str(root)],
                          capture_output=True, text=True)


def test_clean_workspace_passes(workspace):
    done = run_imports(workspace)
    assert done.returncode == 0, done.stdout
    assert "0 problem(s)" in done.stdout


def test_sibling_import_fails_naming_the_file(workspace):
    bad = workspace / "packages/alpha-pkg/src/alpha_pkg/uses_sibling.py"
    bad.write_text("import numpy\nfrom beta_pkg import experiments\n")
    done = run_imports(workspace)
    assert done.returncode == 1
    assert "packages/alpha-pkg/src/alpha_pkg/uses_sibling.py:2" in done.stdout or "uses_sibling.py:2" in done.stdout
    assert "sibling package 'beta_pkg'" in done.stdout


def test_sibling_import_in_tests_fails_too(workspace):
    (workspace / "packages/beta-pkg/tests/test_bad.py").write_text("import alpha_pkg\n")
    done = run_imports(workspace)
    assert done.returncode == 1 and "test_bad.py:1" in done.stdout


def test_undeclared_import_fails_naming_the_file(workspace):
    bad = workspace / "packages/beta-pkg/src/beta_pkg/undeclared.py"
    bad.write_text("import os\n\n\ndef f():\n    import requests\n    return requests\n")
    done = run_imports(workspace)
    assert done.returncode == 1
    assert "undeclared.py:5" in done.stdout and "'requests'" in done.stdout


def test_declaring_the_dependency_fixes_it(workspace):
    (workspace / "packages/beta-pkg/src/beta_pkg/uses_sklearn.py").write_text("import sklearn\n")
    assert run_imports(workspace).returncode == 1
    pyproject = workspace / "packages/beta-pkg/pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('test = ["pytest>=7"]', 'test = ["pytest>=7"]\nml = ["scikit-learn>=1.2"]'))
    done = run_imports(workspace)
    assert done.returncode == 0, done.stdout


def test_requirement_parsing():
    assert checks.parse_requirement("icml25-shared[cli,torch]>=0.1,<0.2") == ("icml25-shared", ("cli", "torch"))
    assert checks.parse_requirement("Scikit_Learn>=1.2; python_version>'3.9'") == ("scikit-learn", ())
    assert "sklearn" in checks.import_names("scikit-learn")

