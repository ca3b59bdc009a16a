"""The template script makes a package that passes the structural checks, its own tests and its README."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from new_package import AnchorError, Names, create_package, register_in_hatch, register_in_readme

ROOT = Path(__file__).resolve().parents[2]
PAPER = "J. Doe, R. Roe (ICML 2025). A toy paper."
SHAPE = ["pyproject.toml", "README.md", "CHANGELOG.md", "LICENSE", "src/toy_method/__init__.py",
         "src/toy_method/__main__.py", "src/toy_method/experiments.py", "src/toy_method/method.py",
         "src/toy_method/py.typed", "tests/test_smoke.py", "tests/test_method.py", "benchmarks/run.py"]
SECTIONS = ["Install", "Example", "API", "Agreement with peers", "Benchmark", "Reproduction", "Limits"]


def make(root, dist="toy-method", **kwargs):
    shutil.copyfile(ROOT / "LICENSE", root / "LICENSE")
    return create_package(dist, summary=kwargs.pop("summary", "A toy method."), paper=PAPER, root=root,
                          register=False, **kwargs)


def test_shape_and_names(tmp_path):
    target = make(tmp_path)
    for relative in SHAPE:
        assert (target / relative).is_file(), relative
    text = "".join((target / r).read_text() for r in SHAPE)
    for key in ("__DIST__", "__MODULE__", "__SUMMARY__", "__PAPER__"):
        assert key not in text
    pyproject = (target / "pyproject.toml").read_text()
    assert 'name = "toy-method"' in pyproject and 'description = "A toy method"' in pyproject
    assert "TODO" not in text and "NotImplementedError" not in text
    assert (target / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()
    readme = (target / "README.md").read_text()
    assert re.findall(r"^## (.+)$", readme, re.M) == SECTIONS
    assert 'pip install ./shared "./packages/toy-method[cli]"' in readme and PAPER in readme
    assert "## Unreleased" in (target / "CHANGELOG.md").read_text()
    assert PAPER in (target / "src/toy_method/__main__.py").read_text()


def test_generated_pyproject_matches_the_members(tmp_path):
    from checks import tomllib

    config = tomllib.loads((make(tmp_path) / "pyproject.toml").read_text())
    member = tomllib.loads((ROOT / "packages" / "corrgcv" / "pyproject.toml").read_text())
    assert config["build-system"] == member["build-system"]
    project = config["project"]
    assert project["dynamic"] == ["version", "readme"] and project["license-files"] == ["LICENSE"]
    for classifier in ("Programming Language :: Python :: 3.10", "Programming Language :: Python :: 3.12",
                       "Typing :: Typed"):
        assert classifier in project["classifiers"]
    assert project["keywords"] and project["scripts"] == {"toy-method": "toy_method.__main__:main"}
    assert "test" in project["optional-dependencies"]
    hatch, member_hatch = config["tool"]["hatch"], member["tool"]["hatch"]
    assert hatch["version"]["raw-options"]["local_scheme"] == "no-local-version"
    assert hatch["build"]["targets"]["sdist"]["exclude"] == ["/studies"]
    assert hatch["metadata"]["hooks"] == member_hatch["metadata"]["hooks"]  # same PyPI README substitutions


def test_rejects_bad_names(tmp_path):
    with pytest.raises(ValueError, match="lowercase"):
        make(tmp_path, "Bad_Name")
    with pytest.raises(ValueError, match="identifier"):
        make(tmp_path, "ok-name", module="class")
    with pytest.raises(ValueError, match="summary"):
        make(tmp_path, "ok-name", summary='say "hi"')
    make(tmp_path, "twice")
    with pytest.raises(FileExistsError):
        make(tmp_path, "twice")


def test_registration_refuses_files_without_their_anchors(tmp_path):
    names = Names("toy-method", "toy_method", "A toy method", PAPER)
    with pytest.raises(AnchorError, match="workspace.members"):
        register_in_hatch("[envs.pkg]\ninstaller = 'pip'\n", "toy-method")
    hatch = (ROOT / "hatch.toml").read_text()
    with pytest.raises(AnchorError, match=r"envs.pkg.matrix"):
        register_in_hatch(hatch.replace("[[envs.pkg.matrix]]", "[[envs.other.matrix]]"), "toy-method")
    with pytest.raises(AnchorError, match="already lists"):
        register_in_hatch(hatch, "corrgcv")
    with pytest.raises(AnchorError, match="package table"):
        register_in_readme("# readme\n\nno table\n", names)
    with pytest.raises(AnchorError, match="column 'owner'"):
        register_in_readme("| distribution | import | owner |\n|---|---|---|\n| a | b | c |\n", names)
    # create_package checks both files before writing anything
    shutil.copyfile(ROOT / "LICENSE", tmp_path / "LICENSE")
    (tmp_path / "hatch.toml").write_text(hatch)
    (tmp_path / "README.md").write_text("# no table\n")
    with pytest.raises(AnchorError):
        create_package("toy-method", summary="A toy method", paper=PAPER, root=tmp_path)
    assert not (tmp_path / "packages").exists() and (tmp_path / "hatch.toml").read_text() == hatch
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "new_package.py"), "toy-method", "--summary", "x",
                           "--paper", PAPER, "--root", str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.startswith("error: README.md has no package table")


def readme_python_blocks(readme: Path) -> str:
    blocks = re.findall(r"^```python\n(.*?)^```", readme.read_text(), re.M | re.S)
    return "\n".join(b for b in blocks if not b.startswith("# Not run by the README test"))


def test_generated_package_installs_passes_its_tests_and_runs_its_readme(tmp_path):
    shutil.copytree(ROOT / "shared", tmp_path / "shared", ignore=shutil.ignore_patterns("__pycache__", "tests"))
    target = make(tmp_path)
    # Install without dependencies (they are in this environment already) into a private target dir.
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                           "--target", str(site), str(target)], capture_output=True, text=True)
    if done.returncode != 0 and "hatch" in done.stderr.lower():  # build isolation needs hatchling
        pytest.skip(f"cannot build without isolation here: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stderr
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow",
                           "--doctest-modules", str(site / "toy_method"), str(target / "tests")],
                          capture_output=True, text=True, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = done.stdout.strip().splitlines()[-1]
    assert re.search(r"\b1[6-9] passed|\b[2-9]\d passed", summary) and "failed" not in summary, summary
    code = readme_python_blocks(target / "README.md")
    assert "bootstrap_mean" in code
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"\d+\.\d{3} \[\d+\.\d{3}, \d+\.\d{3}\]", done.stdout.strip()), done.stdout
