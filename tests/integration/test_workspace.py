"""Every member installed together: imports, public API and the CLI frame.

The README examples run in the wheel check, each in a venv built from its package's documented install line.
"""

import importlib
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


