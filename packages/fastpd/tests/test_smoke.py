
from icml25_shared.testing import run_command, run_module

from fastpd.__main__ import main


def test_demo_quick_writes_table_and_figure(tmp_path):
    table = run_command(main, "demo", tmp_path).table
    assert table.startswith("|") and table.count("\n") >= 3


def test_module_entry_point(tmp_path):
    run = run_module("fastpd", "reproduce", tmp_path, timeout=120)
    res = run.result
    mse = res["mse"]
    # the paper's claim, at quick scale (seeded): FastPD's error falls with n, path-dependent stays biased
    for t in ("m12", "shap1"):
        assert mse["fastpd"]["5000"][t]["mean"] < 0.5 * mse["fastpd"]["500"][t]["mean"]
        assert mse["path-dependent"]["5000"][t]["mean"] > 2 * mse["fastpd"]["5000"][t]["mean"]
    assert run.figure is not None
