"""Every member installed together: imports, public API, CLI frame and the demo report runner."""

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
from checks import workspace  # noqa: E402

MEMBERS = workspace(ROOT)
PACKAGES = MEMBERS[1:]


def test_all_members_import_together_with_distinct_names():
    modules = [importlib.import_module(m.module) for m in MEMBERS]
    assert len({m.__name__ for m in modules}) == len(MEMBERS)
    for module in modules:
        assert module.__version__ != "0.0.0", f"{module.__name__} is not installed"


@pytest.mark.parametrize("member", PACKAGES, ids=[m.dist for m in PACKAGES])
def test_public_api_names_exist(member):
    module = importlib.import_module(member.module)
    exported = getattr(module, "__all__", None)
    assert exported, f"{member.module} has no __all__"
    for name in exported:
        assert hasattr(module, name), f"{member.module}.__all__ names missing {name!r}"


@pytest.mark.parametrize("member", PACKAGES, ids=[m.dist for m in PACKAGES])
def test_cli_frame_is_the_shared_one(member):
    done = subprocess.run([sys.executable, "-m", member.module, "demo", "--help"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    for flag in ("--out", "--seed", "--quick"):
        assert flag in done.stdout


NOT_RUN_MARK = "# Not run by the README test"


def readme_python_blocks(readme: Path) -> list[str]:
    """The README's ```python blocks in order, without those whose first line is NOT_RUN_MARK."""
    blocks = re.findall(r"^```python\n(.*?)^```", readme.read_text(encoding="utf-8"), re.S | re.M)
    return [block for block in blocks if not block.startswith(NOT_RUN_MARK)]


@pytest.mark.parametrize("member", MEMBERS, ids=[m.dist for m in MEMBERS])
def test_readme_examples_run(member, tmp_path):
    """A newcomer's first step: every python block of the README, run in order in one fresh interpreter
    (later blocks may use names from earlier ones), from an empty folder."""
    blocks = readme_python_blocks(member.path / "README.md")
    if not blocks:
        pytest.skip(f"{member.dist}'s README has no runnable python block")
    script = tmp_path / "readme_examples.py"
    script.write_text("\n\n".join(blocks), encoding="utf-8")
    env = {**os.environ, "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, env=env)
    assert done.returncode == 0, f"{member.dist} README example failed:\n{done.stderr[-3000:]}"
