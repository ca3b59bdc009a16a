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


def test_import_linter_passes_the_workspace_and_fails_on_a_sibling_import(workspace):
    """The generated contracts cover every member; a lazy import of one package by another breaks them."""
    pytest.importorskip("importlinter")
    import dev

    config = dev.importlinter_config(workspace)
    assert "alpha_pkg" in config and "beta_pkg" in config and "source_modules =\n    icml25_shared" in config

    def imports():
        return subprocess.run([sys.executable, str(ROOT / "tools" / "dev.py"), "imports", "--root", str(workspace)],
                              capture_output=True, text=True)

    done = imports()
    assert done.returncode == 0 and "2 kept, 0 broken" in done.stdout, done.stdout + done.stderr
    (workspace / "packages/alpha-pkg/src/alpha_pkg/uses_sibling.py").write_text("def f():\n    import beta_pkg\n")
    (workspace / "shared/src/icml25_shared/uses_package.py").write_text("import alpha_pkg\n")
    done = imports()
    assert done.returncode == 1 and "0 kept, 2 broken" in done.stdout, done.stdout
    assert "alpha_pkg.uses_sibling -> beta_pkg" in done.stdout
    assert "icml25_shared.uses_package -> alpha_pkg" in done.stdout


def test_deptry_command_reads_the_reasoned_ignores():
    import dev

    cmd = dev.deptry_command("fastpd", "fastpd", ROOT / "packages" / "fastpd")
    assert cmd[cmd.index("--known-first-party") + 1] == "fastpd"
    assert cmd[cmd.index("--optional-dependencies-dev-groups") + 1] == "test"
    ignores = cmd[cmd.index("--per-rule-ignores") + 1]
    assert "DEP003=matplotlib|tqdm" in ignores and "DEP002=dask|catboost" in ignores


def test_requirement_parsing():
    assert checks.parse_requirement("icml25-shared[cli,torch]>=0.1,<0.2") == ("icml25-shared", ("cli", "torch"))
    assert checks.parse_requirement("Scikit_Learn>=1.2; python_version>'3.9'") == ("scikit-learn", ())



# --- the wheel check's inspection of built artefacts and of the base install's commands ---------------

def make_wheel(path: Path, names: list[str]) -> Path:
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        for name in names:
            archive.writestr(name, "x")
    return path


def make_sdist(path: Path, names: list[str]) -> Path:
    import io
    import tarfile

    with tarfile.open(path, "w:gz") as archive:
        for name in names:
            info = tarfile.TarInfo(name)
            info.size = 1
            archive.addfile(info, io.BytesIO(b"x"))
    return path


def test_artefact_inspector_on_hand_made_archives(tmp_path):
    good_wheel = ["toy/__init__.py", "toy/py.typed", "toy-0.1.0.dist-info/licenses/LICENSE",
                  "toy-0.1.0.dist-info/METADATA"]
    assert checks.artefact_problems(make_wheel(tmp_path / "toy-0.1.0-py3-none-any.whl", good_wheel), "toy") == []
    bad = make_wheel(tmp_path / "bad-0.1.0-py3-none-any.whl", ["toy/__init__.py", "studies/run.py"])
    found = checks.artefact_problems(bad, "toy")
    assert any("holds no LICENSE" in p for p in found) and any("no toy/py.typed" in p for p in found)
    assert any("1 file(s) under studies/ (e.g. studies/run.py)" in p for p in found), found
    good_sdist = ["toy-0.1.0/LICENSE", "toy-0.1.0/pyproject.toml", "toy-0.1.0/src/toy/py.typed"]
    assert checks.artefact_problems(make_sdist(tmp_path / "toy-0.1.0.tar.gz", good_sdist), "toy") == []
    bad = make_sdist(tmp_path / "bad-0.1.0.tar.gz", ["toy-0.1.0/src/toy/py.typed", "toy-0.1.0/studies/a.md"])
    found = checks.artefact_problems(bad, "toy")
    assert len(found) == 2 and "sdist bad-0.1.0.tar.gz holds no LICENSE" in found[0], found
    assert "under studies/" in found[1]


def completed(code, stderr="", stdout=""):
    return subprocess.CompletedProcess([], code, stdout, stderr)


def test_cli_problem_in_a_bare_install_wants_the_cli_extra_named():
    hint = 'python -m toy demo needs the extras [cli] (matplotlib not installed): pip install "toy-dist[cli]"\n'
    assert checks.cli_problem(completed(2, hint), "toy-dist", "toy", "demo", cli_installed=False) is None
    assert checks.cli_problem(completed(2, "\n" + hint + "\n"), "toy-dist", "toy", "demo", cli_installed=False) is None
    assert checks.cli_problem(completed(0), "toy-dist", "toy", "demo", cli_installed=True) is None
    data_hint = 'python -m toy audit needs the extras [data] (x not installed): pip install "toy-dist[data]"\n'
    assert checks.cli_problem(completed(2, data_hint), "toy-dist", "toy", "audit", cli_installed=False) is None
    for bad in [completed(0), completed(1, "boom"), completed(2, hint + hint), completed(2, "usage: toy\n"),
                completed(2, ""), completed(2, "Traceback (most recent call last): pip install x"),
                completed(2, hint, stdout="Traceback (most recent call last):\n"),
                completed(2, hint.replace('"toy-dist[cli]"', '"./packages/toy-dist[cli]"')),
                completed(2, data_hint.replace("audit", "demo"))]:
        problem = checks.cli_problem(bad, "toy-dist", "toy", "demo", cli_installed=False)
        assert problem is not None and "`python -m toy demo` in a bare install" in problem, bad


def test_probe_dry_runs_the_frame_and_resolves_the_api(tmp_path):
    """The probe checks extras through the real run_cli but never runs a command; __all__ names resolve."""
    pkg = tmp_path / "toyprobe"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "__all__ = ['fine', 'lazy_broken', 'absent']\nfine = 1\n"
        "def __getattr__(name):\n"
        "    if name == 'lazy_broken':\n"
        "        import not_a_module_anywhere\n"
        "    raise AttributeError(name)\n")
    (pkg / "__main__.py").write_text(
        "from icml25_shared.cli import run_cli\n"
        "def demo(ctx):\n    raise RuntimeError('the probe ran the demo')\n"
        "raise SystemExit(run_cli('toyprobe', demo=demo, reproduce=demo))\n")
    (tmp_path / "brokenprobe.py").write_text("import not_a_module_anywhere\n")
    shared_src = ROOT / "shared" / "src"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{tmp_path}:{shared_src}", "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, "-c", checks.PROBE, "toyprobe", "demo", "reproduce"], cwd=tmp_path,
                          env=env, capture_output=True, text=True)
    import json

    report = json.loads(done.stdout.splitlines()[-1])
    assert report["import"] == ""
    assert set(report["api"]) == {"lazy_broken", "absent"} and "not_a_module_anywhere" in report["api"]["lazy_broken"]
    for command in ("demo", "reproduce"):
        code, _, err = report["commands"][command]
        assert code == 0 and "the probe ran the demo" not in err, err
    done = subprocess.run([sys.executable, "-c", checks.PROBE, "brokenprobe", "demo"], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    report = json.loads(done.stdout.splitlines()[-1])
    assert "not_a_module_anywhere" in report["import"] and report["commands"] == {}


def test_probe_problems_name_cli_modules_in_a_bare_install(workspace):
    member = checks.read_member(workspace / "packages" / "alpha-pkg")
    report = {"present": ["matplotlib"], "import": "", "api": {"f": "ImportError: tqdm"},
              "commands": {"demo": [0, "", ""]}}
    messages = [p.message for p in checks.probe_problems(report, member)]
    assert any("holds matplotlib, which only its extras declare" in m for m in messages), messages
    assert any("alpha_pkg.f (in __all__) does not resolve" in m for m in messages), messages
    assert len(messages) == 2  # with matplotlib present, demo's exit 0 is right


def test_wheel_build_with_a_forced_studies_file_fails(workspace):
    """A pyproject that force-includes studies/ into the wheel is caught by the artefact inspection."""
    target = workspace / "packages" / "alpha-pkg"
    (target / "studies").mkdir()
    (target / "studies" / "log.md").write_text("# a study\n")
    (target / "LICENSE").write_text("MIT\n")
    (target / "src" / "alpha_pkg" / "py.typed").write_text("")
    pyproject = target / "pyproject.toml"
    text = pyproject.read_text()
    if "license-files" not in text:
        text = text.replace('license = "MIT"\n', 'license = "MIT"\nlicense-files = ["LICENSE"]\n')
    pyproject.write_text(text + '\n[tool.hatch.build.targets.wheel.force-include]\n"studies" = "alpha_pkg/studies"\n')
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)  # hatch-vcs needs a repository
    member = checks.read_member(target)
    wheel, sdist, problems = checks.build(member, workspace / "dist")
    assert problems == [] and wheel is not None, problems
    found = checks.artefact_problems(wheel, "alpha_pkg")
    assert found == [f"the wheel {wheel.name} holds 1 file(s) under studies/ (e.g. alpha_pkg/studies/log.md); "
                     "studies stay in the repository"], found


def test_readme_blocks_in_order_without_the_marked_ones(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# x\n\n```python\na = 1\n```\n\n```bash\npip install x\n```\n\n```python\n"
                      f"{checks.NOT_RUN_MARK}\nraise SystemExit\n```\n\n```python\nprint(a)\n```\n")
    assert checks.readme_python_blocks(readme) == ["a = 1\n", "print(a)\n"]
