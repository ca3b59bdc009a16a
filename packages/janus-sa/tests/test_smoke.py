import json
import subprocess
import sys

import pytest
from icml25_shared.testing import run_command, run_module

from janus_sa.__main__ import main


def test_demo_quick_writes_table_and_figure(tmp_path):
    run = run_command(main, "demo", tmp_path)
    rows = [line.split("|")[1:-1] for line in run.table.splitlines()[2:]]
    assert [r[0].strip() for r in rows] == ["1", "2", "cheat"]
    for r in rows[:2]:
        assert r[2] == r[3]  # Janus and plain FedAvg reach the same accuracy
        assert 0.75 < float(r[2]) < 1.0
        assert float(r[4]) <= 2 * 9.6e-7  # parameter gap within one quantisation bound per round
    assert "AggregateMismatchError" in rows[2][5] and "4/4 clients rejected" in rows[2][5] and "0 accepted" in rows[2][5]
    assert run.figure is not None


@pytest.mark.slow
def test_module_entry_point(tmp_path):
    run = run_module("janus_sa", "reproduce", tmp_path, timeout=300)
    out = run.result
    janus = [r for r in out["costs"] if r["protocol"] == "janus-exact"]
    plus = [r for r in out["costs"] if r["protocol"] == "secagg+"]
    # quick scale: l = 20, n in {3, 6, 12}. Janus uploads 32 ceil(l / 7) + 654 B whatever n (the masked
    # vector is 3 packed scalars of 32 B); SecAgg+ grows with k(n)
    assert [r["upload_bytes"] for r in janus] == [750, 750, 750] and all(r["verified"] for r in janus)
    assert [r["upload_bytes"] for r in plus] == [923, 1659, 3129] and all(r["correct_sum"] for r in plus)
    fl = out["federated"]
    assert fl["accuracy_janus"] == fl["accuracy_fedavg"] and fl["accuracy_janus"][0] == pytest.approx(0.80, abs=0.05)


def test_missing_extra_exits_2_with_one_line(monkeypatch, capsys, tmp_path):
    import icml25_shared.cli

    monkeypatch.setattr(icml25_shared.cli, "missing_extra", lambda dist, extra: ["scikit-learn"])
    for command in ("demo", "reproduce"):
        assert main([command, "--quick", "--out", str(tmp_path)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "pip install" in err[0] and "janus-sa[cli,fl]" in err[0]
    assert not list(tmp_path.iterdir())


def test_entry_point_imports_no_extra():
    code = ("import sys, json, janus_sa.__main__; "
            "print(json.dumps([m for m in ('sklearn', 'scipy', 'matplotlib', 'janus_sa.fl', 'janus_sa.experiments') "
            "if m in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == []


def test_help_names_the_paper(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "Janus: Dual-Server Multi-Round Secure Aggregation" in out and "ICML 2025" in out
    assert "keygen" in out and "serve" in out


def test_readme_tables_are_rendered_from_the_results_json():
    """The benchmark and reproduction tables are exactly what readme_tables renders from results/."""
    import re
    from pathlib import Path

    from janus_sa.experiments import readme_tables

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text()
    tables = readme_tables(root / "results")
    for name, table in tables.items():
        block = re.search(rf"readme_tables -->\n([^<]*)\n<!-- end {name} -->", readme)
        assert block is not None and block.group(1) == table, name
    assert "5,231" in tables["benchmark"] and "5,227" not in readme  # the current wire format's upload
    import json

    rows = json.loads((root / "results" / "range_proof_costs.json").read_text())["rows"]
    for dim in (1000, 10_000):  # the upload stays flat in n with and without the proof
        for proof in (False, True):
            sizes = {r["upload_bytes"] for r in rows if r["l"] == dim and r["range_proof"] == proof}
            assert len(sizes) == 1 and {r["n"] for r in rows if r["l"] == dim} == {10, 100, 1000}
    assert all(r["verified"] for r in rows if not r["extrapolated"])
