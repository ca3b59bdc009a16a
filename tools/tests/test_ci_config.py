"""The GitHub workflows parse and say what the plan promises; plan/release map paths and tags."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import plan
import release
from checks import tomllib

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
PACKAGES = sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").exists())


def load(name):
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as True
    return data


def run_lines(job):
    return [step["run"] for step in job["steps"] if "run" in step]


def test_ci_jobs_and_matrix():
    ci = load("ci.yml")
    assert {"plan", "lint", "test", "lowest", "integration", "wheels"} <= set(ci["jobs"])
    matrix = ci["jobs"]["test"]["strategy"]["matrix"]
    assert matrix["python"] == ["3.10", "3.11", "3.12"]
    assert "fromJSON(needs.plan.outputs.packages)" in matrix["package"]
    assert ci["jobs"]["test"]["needs"] == "plan"
    for job in ci["jobs"].values():
        for step in job["steps"]:
            assert "uses" in step or "run" in step


def python_of(job):
    return next(s["with"]["python-version"] for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python"))


def test_one_definition_of_a_suite_serves_hatch_ci_and_the_gate():
    """hatch's scripts call `dev.py pytest`, CI calls hatch, the gate builds its steps from the same function."""
    import dev

    ci = load("ci.yml")
    assert "hatch run pkg.${{ matrix.package }}:test" in run_lines(ci["jobs"]["test"])
    assert "hatch run pkg.${{ matrix.package }}:test --triton" in run_lines(ci["jobs"]["test"])
    config = tomllib.loads((ROOT / "hatch.toml").read_text())["envs"]
    assert config["pkg"]["scripts"]["test"] == "python tools/dev.py pytest {matrix:package} {args}"
    assert config["default"]["scripts"]["test"] == "python tools/dev.py pytest {args}"
    assert config["default"]["scripts"]["static"] == "python tools/dev.py static"
    assert config["integration"]["scripts"]["test"] == "python tools/dev.py pytest integration {args}"
    assert "hatch run integration:test" in run_lines(ci["jobs"]["integration"])
    lint = run_lines(ci["jobs"]["lint"])
    assert "hatch run static" in lint and any(line.startswith("hatch run test shared tools") for line in lint)
    # the definition: tests and src doctests, Triton-marked tests apart
    suites = dev.suites(dev.members())
    assert set(suites) == {"tools", "shared", *PACKAGES, "integration"}
    tests, src = suites["fastpd"]
    cmd, env = dev.pytest_command("python", tests, src, triton=False)
    assert cmd[3:6] == [str(tests), str(src), "--doctest-modules"] and cmd[-2:] == ["-m", "not triton and not scale"] and env == {}
    cmd, env = dev.pytest_command("python", tests, src, triton=True)
    assert "--doctest-modules" not in cmd and cmd[-2:] == ["-m", "triton"] and env == {"TRITON_INTERPRET": "1"}
    step = dev.pytest_step(Path("python"), "tests: fastpd", tests, ROOT, triton=False, src=src)
    assert step.cmd[:-1] == dev.pytest_command("python", tests, src, triton=False)[0]


def test_static_steps_are_the_maintained_tools():
    import dev

    names = [step.name for step in dev.static_steps("python")]
    assert names == ["ruff", "import-linter", "deptry", "mypy", "checks: shape"]


def test_lowest_covers_every_member_and_wheels_run_twine():
    ci = load("ci.yml")
    lowest = ci["jobs"]["lowest"]
    # every member, from the plan job (a new package needs no workflow edit)
    assert lowest["strategy"]["matrix"]["package"] == "${{ fromJSON(needs.plan.outputs.members) }}"
    assert lowest["needs"] == "plan" and "members" in ci["jobs"]["plan"]["outputs"]
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "plan.py"), "--paths", "README.md"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == ["packages=[]", f"members={json.dumps(['icml25-shared', *PACKAGES])}"]
    assert python_of(lowest) == "3.10"
    assert "python tools/lowest.py --packages ${{ matrix.package }}" in run_lines(lowest)
    wheels = run_lines(ci["jobs"]["wheels"])
    assert "python tools/checks.py wheels" in wheels and any("twine" in line for line in wheels)


def test_tools_import_no_circle():
    """lowest.py imports checks.py; checks.py imports neither lowest nor dev (no circle among the tools)."""
    import ast

    for name in ("checks", "release", "plan"):
        tree = ast.parse((ROOT / "tools" / f"{name}.py").read_text())
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        assert not imported & {"lowest", "dev", "docs", "new_package"}, (name, imported)

def test_release_on_package_tags():
    rel = load("release.yml")
    assert rel["on"]["push"]["tags"] == ["*-v*"]
    assert rel["jobs"]["publish"]["permissions"]["id-token"] == "write"


def test_hatch_matrix_lists_every_package():
    config = tomllib.loads((ROOT / "hatch.toml").read_text())
    assert sorted(config["envs"]["pkg"]["matrix"][0]["package"]) == PACKAGES
    members = [m["path"] for m in config["envs"]["default"]["workspace"]["members"]]
    assert members == ["shared"] + [f"packages/{p}" for p in config["envs"]["pkg"]["matrix"][0]["package"]]
    assert config["envs"]["pkg"]["template"] == "pkg"  # no inheritance from the all-members env
    for env in ("default", "pkg"):
        assert config["envs"][env]["installer"] == "pip"
    assert "torch==2.13.0" in (ROOT / "tools" / "constraints.txt").read_text()


@pytest.mark.parametrize(("paths", "expected"), [
    (["packages/dsi/src/dsi/x.py"], ["dsi"]),
    (["packages/dsi/README.md", "packages/pomwu/tests/t.py"], ["pomwu"]),
    (["packages/dsi/CHANGELOG.md", "packages/dsi/studies/exposure/run.py", "packages/dsi/results/x.json",
      "packages/dsi/studies/a.md", "packages/dsi/DATA.md"], []),
    (["packages/dsi/benchmarks/run.py"], ["dsi"]),
    (["packages/dsi/pyproject.toml"], ["dsi"]),
    (["packages/dsi/src/dsi/data/notes.md"], ["dsi"]),  # package data may be read by the tests
    (["packages/dsi/results"], []),
    (["./packages/dsi/src/dsi/x.py"], ["dsi"]),
    (["./.github/workflows/ci.yml"], PACKAGES),  # the dot of .github survives a leading ./
    ([".ci/run"], PACKAGES),
    (["  packages/nopkg/x.py", ""], []),
    (["README.md", "docs/x.md"], []),
    (["shared/src/icml25_shared/data.py"], PACKAGES),
    (["hatch.toml"], PACKAGES),
    ([".github/workflows/ci.yml"], PACKAGES),
    (["tools/checks.py"], PACKAGES),
])
def test_plan_maps_paths_to_packages(paths, expected):
    assert plan.affected(paths, PACKAGES) == expected


def test_release_tags():
    assert release.resolve("fastpd-v0.2.0") == {"dist": "fastpd", "folder": "packages/fastpd", "version": "0.2.0"}
    assert release.resolve("kandinsky-cp-v1.0.0rc1")["folder"] == "packages/kandinsky-cp"
    assert release.resolve("icml25-shared-v0.1.1")["folder"] == "shared"
    with pytest.raises(ValueError, match="not one of"):
        release.resolve("nopkg-v1.0")
    with pytest.raises(ValueError, match="<distribution>-v<version>"):
        release.resolve("v1.0")


def test_gate_runs_doctests_in_the_modules_the_tests_import(tmp_path):
    """dev.py's member step: doctests of src/ run with the tests, each module imported once, by its name."""
    import dev

    project = tmp_path / "pkgx"
    (project / "src" / "pkgx").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "--import-mode=importlib"\n')
    log = tmp_path / "imports.log"
    (project / "src" / "pkgx" / "__init__.py").write_text('"""Pkgx."""\n')
    (project / "src" / "pkgx" / "mod.py").write_text(
        f'"""A module.\n\n>>> import sys\n>>> __name__\n\'pkgx.mod\'\n'
        f'>>> sys.modules["pkgx.mod"].MARK\n\'set by the test\'\n"""\n'
        f"with open({str(log)!r}, 'a') as f:\n    f.write(__name__ + '\\n')\nMARK = 'unset'\n")
    (project / "tests" / "test_a.py").write_text(
        "import pkgx.mod\n\n\ndef test_a():\n    pkgx.mod.MARK = 'set by the test'\n")
    step = dev.pytest_step(Path(sys.executable), "tests: pkgx (+ doctests)", project / "tests", tmp_path,
                           triton=False, src=project / "src")
    step.env["PYTHONPATH"] = str(project / "src")  # what the editable install's .pth does
    dev.run_step(step, single_thread=True)
    assert step.ok, step.output
    assert step.counts == {"tests": 2, "failures": 0, "errors": 0, "skipped": 0}, step.output
    assert log.read_text().splitlines() == ["pkgx.mod"]  # imported once, under its real name
    assert [name for _, name in step.slowest] and len(step.slowest) == 2


def test_slowest_tests_from_junit(tmp_path):
    import dev

    xml = tmp_path / "j.xml"
    cases = "".join(f'<testcase classname="m" name="t{i}" time="{i / 10}"/>' for i in range(15))
    xml.write_text(f'<testsuites><testsuite tests="15">{cases}<testcase classname="m" name="bad" time=""/>'
                   "</testsuite></testsuites>")
    slowest = dev.slowest_tests(xml)
    assert len(slowest) == 10 and slowest[0] == (1.4, "m::t14") and slowest[-1] == (0.5, "m::t5")
    assert dev.slowest_tests(tmp_path / "missing.xml") == []


def test_docs_workflow_builds_strictly_checks_in_a_browser_and_deploys_from_main():
    wf = load("docs.yml")
    assert wf["on"]["push"]["branches"] == ["main"]
    build = wf["jobs"]["build"]
    lines = run_lines(build)
    assert "pip install -r tools/requirements-docs.txt" in lines
    assert "python tools/docs.py build --site site" in lines
    assert any(line.startswith("python tools/docs.py check") for line in lines)
    assert (ROOT / "tools" / "requirements-docs.txt").exists()
    deploy = wf["jobs"]["deploy"]
    assert deploy["needs"] == "build" and "refs/heads/main" in deploy["if"]
    assert any(s.get("uses", "").startswith("actions/deploy-pages") for s in deploy["steps"])
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
