import os
import subprocess
import sys

import pytest

import finextract
from finextract.__main__ import main


def test_version_is_set():
    assert isinstance(finextract.__version__, str) and finextract.__version__


def test_demo_quick_writes_table_and_figure(tmp_path):
    assert main(["demo", "--quick", "--out", str(tmp_path)]) == 0
    table = (tmp_path / "demo.md").read_text()
    assert table.startswith("| method") and "FineXtract" in table and "CFG baseline" in table
    assert (tmp_path / "demo.png").stat().st_size > 1000


def test_cli_rejects_unknown_command():
    with pytest.raises(SystemExit) as err:
        main(["nonsense"])
    assert err.value.code == 2


def test_module_entry_point(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "finextract", "reproduce", "--quick", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr
    import json

    out = json.loads((tmp_path / "reproduce.json").read_text())
    assert {(r["setting"], r["method"]) for r in out["summary"]} == {
        (s, m) for s in ("full", "lora") for m in ("FineXtract", "CFG baseline")}
    assert all(0 <= r["AS"] <= 1 for r in out["runs"])
