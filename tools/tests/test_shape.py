"""The shape check passes on a clean member and fails, naming path and line, on planted violations."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import checks

ROOT = Path(__file__).resolve().parents[2]

README = """\
# toy-method

Toy method for tests, after A. Author, "A paper", ICML 2025.

## Install

```bash
pip install ./shared "./packages/toy-method[cli]"
```

## Example

```python
import toy_method
```

## API

| name | what |
|---|---|
| `thing` | a thing |

## Agreement with peers

| peer | version | case | max difference |
|---|---|---|---|

## Benchmark

| size | seconds |
|---|---|

## Reproduction

| claim | ours |
|---|---|

## Studies

- [a study](studies/a.md)

## Limits

- none measured
"""

PYPROJECT = """\
[build-system]
requires = ["hatchling>=1.26"]
build-backend = "hatchling.build"

[project]
name = "toy-method"
version = "0.1.0"
description = "toy"
requires-python = ">=3.10"
dependencies = ["icml25-shared>=0.1.0.dev0,<0.2", "numpy>=1.23"]

[project.optional-dependencies]
test = ["pytest>=7"]
cli = ["icml25-shared[cli]"]

[tool.hatch.build.targets.sdist]
exclude = ["/studies"]

[tool.hatch.build.targets.wheel]
packages = ["src/toy_method"]

[tool.icml25]
install = ["cli"]
"""


@pytest.fixture()
def workspace(tmp_path):
    """The real shared distribution, the root LICENSE and pyproject, and one clean hand-written member."""
    shutil.copytree(ROOT / "shared", tmp_path / "shared", ignore=shutil.ignore_patterns("__pycache__", "tests"))
    shutil.copy(ROOT / "LICENSE", tmp_path / "LICENSE")
    (tmp_path / "pyproject.toml").write_text('[tool.icml25]\nrepository = ""\n')
    member = tmp_path / "packages" / "toy-method"
    (member / "src" / "toy_method").mkdir(parents=True)
    (member / "src" / "toy_method" / "__init__.py").write_text('"""Toy."""\n\n__all__ = ["thing"]\nthing = 1\n')
    (member / "src" / "toy_method" / "py.typed").write_text("")
    (member / "README.md").write_text(README)
    (member / "CHANGELOG.md").write_text("# Changelog\n\n## Unreleased\n\n- item 3 of the issue #4 (headings aside)\n")
    (member / "pyproject.toml").write_text(PYPROJECT)
    shutil.copy(ROOT / "LICENSE", member / "LICENSE")
    (member / "tests").mkdir()
    (member / "tests" / "test_param_contract.py").write_text(PARAM_CONTRACT)
    return tmp_path


PARAM_CONTRACT = """from icml25_shared.testing import assert_rejects

from toy_method import thing


def test_contract():
    assert_rejects(thing, "n", wrong_type="1", wrong_value=-1)
"""


def test_param_contract_test_is_required_and_must_call_assert_rejects(workspace):
    contract = member(workspace) / "tests" / "test_param_contract.py"
    contract.unlink()
    assert any("test_param_contract.py is missing" in p for p in problems(workspace))
    contract.write_text("def test_contract():\n    assert True\n")
    assert any("does not call assert_rejects" in p for p in problems(workspace))
    contract.write_text(PARAM_CONTRACT.replace("assert_rejects(thing", "print(thing"))
    assert any("does not call assert_rejects" in p for p in problems(workspace))
    contract.write_text(PARAM_CONTRACT)
    assert problems(workspace) == []


def shape(root: Path) -> tuple[int, str]:
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "checks.py"), "shape", "--root", str(root)],
                          capture_output=True, text=True)
    return done.returncode, done.stdout + done.stderr


def problems(root: Path) -> list[str]:
    return [str(p) for p in checks.check_shape(checks.workspace(root), root)]


def member(root: Path) -> Path:
    return root / "packages" / "toy-method"


def test_clean_member_passes(workspace):
    code, out = shape(workspace)
    assert code == 0, out
    assert "shape: 2 member(s) checked, 0 problem(s)" in out


def test_process_words_fail_with_path_and_line(workspace):
    readme = member(workspace) / "README.md"
    readme.write_text(README.replace("Toy method for tests", "Toy method (acceptance item 3)"))
    code, out = shape(workspace)
    assert code == 1
    assert "packages/toy-method/README.md:3: process word 'item 3', 'acceptance'" in out


@pytest.mark.parametrize("text", ["see issue #10", "fixed in #9", "item 5 holds", "pre-registered rule",
                                  "after an independent review", "numbers from this round", "last session's",
                                  "the round-4 rerun", "Round 4 rerun"])
def test_every_process_pattern_is_caught_in_src(workspace, text):
    source = member(workspace) / "src" / "toy_method" / "core.py"
    source.write_text(f'"""Core."""\n\nX = 1  # {text}\n')
    found = problems(workspace)
    assert len(found) == 1 and "core.py:3: process word" in found[0], found


def test_plain_words_are_not_process_words(workspace):
    source = member(workspace) / "src" / "toy_method" / "core.py"
    source.write_text('"""Core: items, issues, rounding, colour #1f77b4, A&#39;s, item(s), SMARTS [#7]-[OX2],\n'
                      'the next round announces the model, uploaded in this round."""\n')
    assert problems(workspace) == []


def test_missing_section_fails(workspace):
    (member(workspace) / "README.md").write_text(README.replace("## Benchmark\n", "## Speed\n"))
    found = problems(workspace)
    assert any("README.md:1: README has no '## Benchmark' section" in p for p in found), found
    assert any("'## Speed' is not one of the standard sections" in p for p in found), found


def test_sections_out_of_order_fail(workspace):
    text = README.replace("## API\n", "## TMP\n").replace("## Example\n", "## API\n").replace("## TMP\n", "## Example\n")
    (member(workspace) / "README.md").write_text(text)
    found = problems(workspace)
    assert len(found) == 1 and "'## Example' comes after '## API'" in found[0], found


def test_extra_section_before_reproduction_fails_after_is_fine(workspace):
    text = README.replace("## Benchmark\n", "## Notes\n\ntext\n\n## Benchmark\n")
    (member(workspace) / "README.md").write_text(text)
    found = problems(workspace)
    assert len(found) == 1 and "'## Notes' is not one of the standard sections" in found[0], found
    # headings inside code fences are not sections
    text = README.replace("import toy_method\n", "import toy_method\n## not a heading\n")
    (member(workspace) / "README.md").write_text(text)
    assert problems(workspace) == []


def test_long_readme_fails(workspace):
    (member(workspace) / "README.md").write_text(README + "\nline\n" * 100)
    assert len(README.splitlines()) + 200 > checks.README_MAX_LINES
    found = problems(workspace)
    assert any(f"README has {len(README.splitlines()) + 200} lines, at most 220" in p for p in found), found
    (member(workspace) / "README.md").write_text(README + "x\n" * (220 - len(README.splitlines())))
    assert problems(workspace) == []


def test_missing_license_py_typed_changelog_fail(workspace):
    (member(workspace) / "LICENSE").unlink()
    (member(workspace) / "src" / "toy_method" / "py.typed").unlink()
    (member(workspace) / "CHANGELOG.md").unlink()
    (workspace / "shared" / "src" / "icml25_shared" / "py.typed").unlink()
    found = problems(workspace)
    assert any("toy-method/LICENSE:1: LICENSE is missing" in p for p in found), found
    assert any("toy_method/py.typed:1: py.typed is missing" in p for p in found), found
    assert any("icml25_shared/py.typed:1: py.typed is missing" in p for p in found), found
    assert any("CHANGELOG.md:1: CHANGELOG.md is missing" in p for p in found), found
    code, _ = shape(workspace)
    assert code == 1


def test_license_must_equal_the_root_license(workspace):
    path = member(workspace) / "LICENSE"
    path.write_bytes(path.read_bytes() + b"\n")
    assert any("LICENSE differs from the root LICENSE" in p for p in problems(workspace))


def test_data_needs_data_md(workspace):
    (member(workspace) / "src" / "toy_method" / "table.csv").write_text("a,b\n1,2\n")
    assert any("DATA.md is missing but the package ships data (src/toy_method/table.csv)" in p
               for p in problems(workspace))
    (member(workspace) / "DATA.md").write_text("# Data\n")
    assert problems(workspace) == []


def test_results_in_docs_fail(workspace):
    (member(workspace) / "docs").mkdir()
    (member(workspace) / "docs" / "guide.md").write_text("# Guide\n")
    assert problems(workspace) == []
    (member(workspace) / "docs" / "benchmark.json").write_text("{}")
    assert any("docs/benchmark.json:1: docs/ holds 1 result file(s)" in p for p in problems(workspace))


def test_pyproject_rules(workspace):
    pyproject = member(workspace) / "pyproject.toml"
    pyproject.write_text(PYPROJECT.replace('exclude = ["/studies"]', 'exclude = ["/docs"]')
                         .replace('test = ["pytest>=7"]', 'tests = ["pytest>=7"]\nbench = ["rich"]'))
    found = problems(workspace)
    assert any('pyproject.toml:17: the sdist target must exclude "/studies"' in p for p in found), found
    assert any("pyproject.toml:12: no `test` extra" in p for p in found), found
    assert any("pyproject.toml:14: extra 'bench': use the canonical name" in p for p in found), found
    pyproject.write_text(PYPROJECT.replace('test = ["pytest>=7"]', 'test = ["pytest>=7"]\ndatasets = ["x"]'))
    assert any("extra 'datasets': use the canonical name 'data'" in p for p in problems(workspace))


def test_project_urls_follow_the_root_repository(workspace):
    pyproject = member(workspace) / "pyproject.toml"
    pyproject.write_text(PYPROJECT.replace("[project.optional-dependencies]",
                                           '[project.urls]\nHomepage = "https://example.org/x"\n\n'
                                           "[project.optional-dependencies]"))
    found = problems(workspace)
    assert len(found) == 1 and "toy-method/pyproject.toml:12: has a [project.urls] table but" in found[0], found
    (workspace / "pyproject.toml").write_text('[tool.icml25]\nrepository = "https://example.org/x"\n')
    found = problems(workspace)
    assert any("toy-method/pyproject.toml:12: [project.urls] is {'Homepage'" in p for p in found), found
    assert any("shared/pyproject.toml" in p and "expected" in p for p in found), found


def test_the_real_repository_has_the_release_files_and_urls():
    """The parts of the shape that do not depend on README rewrites hold on the repository itself."""
    members = checks.workspace(ROOT)
    found = [str(p) for m in members for p in checks.release_files_problems(m, ROOT)]
    found += [str(p) for p in checks.pyproject_problems(members[0], ROOT)]
    assert found == []
