"""Install lines come from one source, each package's ``[tool.icml25] install``: the package README and the
root table show exactly that line, and a drift in either fails."""

import shutil
import subprocess
import sys
from pathlib import Path

import checks

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = checks.workspace(ROOT)[1:]


def test_the_repository_has_no_drift():
    problems = [str(p) for m in PACKAGES for p in checks.install_problems(m, ROOT)]
    assert problems == []
    for member in PACKAGES:
        assert checks.install_line(member) in (ROOT / "README.md").read_text()


def test_a_drifted_line_fails_and_write_renders_the_root_table(tmp_path):
    shutil.copytree(ROOT / "shared", tmp_path / "shared", ignore=shutil.ignore_patterns("__pycache__", "tests"))
    shutil.copytree(ROOT / "packages" / "janus-sa", tmp_path / "packages" / "janus-sa",
                    ignore=shutil.ignore_patterns("__pycache__", "tests", "studies", "results", "benchmarks"))
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    member = checks.read_member(tmp_path / "packages" / "janus-sa")
    line = checks.install_line(member)
    assert line == 'pip install ./shared "./packages/janus-sa[' + ",".join(checks.install_extras(member)) + ']"'
    assert checks.install_problems(member, tmp_path) == []
    pyproject = member.path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("\ninstall = [", '\ninstall = ["nope", '))
    found = [p.message for p in checks.install_problems(member, tmp_path)]
    assert any("extra 'nope'" in m for m in found) and any("Install section does not show" in m for m in found)
    assert any("install cell of janus-sa" in m for m in found)
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "checks.py"), "readme", "--write", "--root",
                           str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 1 and "rendered the package table" in done.stdout  # the package README still drifts
    assert '`pip install ./shared "./packages/janus-sa[nope,' in (tmp_path / "README.md").read_text()
    assert not [m for m in (p.message for p in checks.install_problems(member, tmp_path)) if "install cell" in m]


def test_an_install_without_the_cli_extra_fails(tmp_path):
    shutil.copytree(ROOT / "packages" / "pomwu", tmp_path / "packages" / "pomwu",
                    ignore=shutil.ignore_patterns("__pycache__", "tests", "studies", "results", "benchmarks"))
    member = checks.read_member(tmp_path / "packages" / "pomwu")
    pyproject = member.path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('install = ["cli"]', "install = []"))
    assert any("covers no `cli` extra" in p.message for p in checks.install_problems(member, tmp_path))
