"""tools/new_package.py on a copy of the repository: afterwards the repository's own checks still pass.

The copy holds the repository's files (tracked, plus untracked ones git does not ignore); new_package.py
runs there, then the tools tests that compare hatch.toml and the workflows with packages/, the import
contracts and the shape check run in the copy without any manual edit.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DIST, MODULE = "scaffold-probe", "scaffold_probe"
PAPER = "J. Doe, R. Roe (ICML 2025). A probe paper."


def repository_files() -> list[str]:
    done = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"not a git checkout: {done.stderr.strip()}")
    return sorted({name for name in done.stdout.split("\0") if name})


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    root = tmp_path_factory.mktemp("repo")
    for name in repository_files():
        source = ROOT / name
        if "__pycache__" in source.parts or not source.is_file():  # deleted in the working tree
            continue
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, root / name)
    return root


def run(args, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd,
                          env={**env, "OMP_NUM_THREADS": "1"})


def shape_problems(root):
    done = run([str(root / "tools" / "checks.py"), "shape", "--root", str(root)], root)
    return done, [line for line in done.stdout.splitlines() if re.match(r"^\S+:\d+: ", line)]


@pytest.fixture(scope="module")
def scaffolded(copy):
    before = shape_problems(copy)
    done = run([str(ROOT / "tools" / "new_package.py"), DIST, "--summary", "A probe method.", "--paper", PAPER,
                "--root", str(copy)], copy)
    assert done.returncode == 0, done.stderr
    return copy, before


def test_new_package_is_registered_everywhere(scaffolded):
    from checks import tomllib

    root, _ = scaffolded
    target = root / "packages" / DIST
    assert (target / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()
    hatch = tomllib.loads((root / "hatch.toml").read_text())
    assert hatch["envs"]["default"]["workspace"]["members"][-1] == {"path": f"packages/{DIST}", "features": ["test"]}
    assert hatch["envs"]["pkg"]["matrix"][0]["package"][-1] == DIST
    original = (ROOT / "hatch.toml").read_text().splitlines()
    assert len((root / "hatch.toml").read_text().splitlines()) == len(original) + 2  # two lines added, no rewrite
    rows = [line for line in (root / "README.md").read_text().splitlines() if line.startswith(f"| [{DIST}]")]
    assert rows == [f"| [{DIST}](packages/{DIST}) | `{MODULE}` | A probe method | new: not yet measured | "
                    f'`pip install ./shared "./packages/{DIST}[cli]"` |']
    table = [line for line in (root / "README.md").read_text().splitlines() if line.startswith("| [")]
    assert table[-1] == rows[0] and all(line.count(" | ") == rows[0].count(" | ") for line in table)


def test_a_second_run_is_refused_and_changes_nothing(scaffolded):
    root, _ = scaffolded
    hatch, readme = (root / "hatch.toml").read_text(), (root / "README.md").read_text()
    done = run([str(ROOT / "tools" / "new_package.py"), DIST, "--summary", "x", "--paper", PAPER,
                "--root", str(root)], root)
    assert done.returncode == 2 and "already exists" in done.stderr
    assert (root / "hatch.toml").read_text() == hatch and (root / "README.md").read_text() == readme


def test_tools_tests_pass_in_the_copy(scaffolded):
    root, _ = scaffolded
    done = run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tools/tests/test_ci_config.py",
                "tools/tests/test_checks.py"], root)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def test_import_contracts_cover_the_new_package_in_the_copy(scaffolded):
    pytest.importorskip("importlinter")
    root, _ = scaffolded
    done = run([str(root / "tools" / "dev.py"), "imports", "--root", str(root)], root)
    assert done.returncode == 0 and "2 kept, 0 broken" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]


def test_shape_check_finds_nothing_new(scaffolded):
    root, (before, problems_before) = scaffolded
    if "invalid choice: 'shape'" in before.stderr:
        pytest.skip("tools/checks.py has no shape check")
    done, problems = shape_problems(root)
    assert not [p for p in problems if f"packages/{DIST}/" in p], problems
    assert problems == problems_before  # the other members' state is what it was
    if before.returncode == 0:
        assert done.returncode == 0, done.stdout[-3000:]
    assert f"{len(problems)} problem(s)" in done.stdout


def test_docs_site_has_the_new_package(scaffolded):
    """The scaffold needs no docs edit: its guide, API, reproduction and changelog pages build strictly."""
    pytest.importorskip("mkdocs")
    root, _ = scaffolded
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env.update(ICML25_DOCS_PACKAGES=f"icml25-shared,{DIST}", NO_MKDOCS_2_WARNING="1",
               DISABLE_MKDOCS_2_WARNING="true")
    # the table's rows of the other packages would link pages this small site leaves out
    readme = root / "README.md"
    original = readme.read_text()
    readme.write_text("\n".join(r for r in original.splitlines()
                                if not r.startswith("| [") or "](shared)" in r or f"[{DIST}]" in r))
    try:
        done = subprocess.run([sys.executable, "tools/docs.py", "build", "--site", str(root / "site")], cwd=root,
                              capture_output=True, text=True, env=env)
    finally:
        readme.write_text(original)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    site = root / "site" / "packages" / DIST
    for page in ("index.html", "api/index.html", "reproduction/index.html", "changelog/index.html"):
        assert (site / page).exists(), page
    api = (site / "api" / "index.html").read_text()
    import docs

    names = [n for n in docs.public_names(docs.DocMember(DIST, MODULE, root / "packages" / DIST))
             if not n.startswith("__")]
    assert names and all(f'id="{MODULE}.{name}"' in api for name in names)
    assert f'href="packages/{DIST}/' in (root / "site" / "index.html").read_text()  # home page table and nav
