"""The command line: demo and reproduce write the numbers the README reports."""

import importlib
import sys

import pytest
from icml25_shared.testing import run_command

from looped_transformers.__main__ import PAPER, main


def test_demo_quick_writes_accuracy_against_loops_and_the_gates(tmp_path, figures):
    run = run_command(main, "demo", tmp_path, expect=("md", "json", "png"))
    assert figures == ["demo"]  # labelled, no text over the neighbouring panel
    assert run.table.startswith("| model | train loops | steps | final loss |")
    rows = run.result["rows"]
    assert [r["model"] for r in rows] == ["LT", "TMLT"]
    for row in rows:
        accs = [row[f"acc r={r}"] for r in run.result["test_loops"]]
        assert all(0.0 <= a <= 1.0 for a in accs)
        assert row["final loss"] < 3.5  # below the uniform loss over the 51-token vocabulary (3.93)
    gates = run.result["tmlt_mean_abs_gamma"]
    assert len(gates) == 8 and all(len(g) == 2 for g in gates)
    assert min(min(g) for g in gates) > 0  # the zero-initialised gates moved in training


def test_reproduce_runs_the_protocol_and_applies_its_rules(tmp_path, monkeypatch, figures):
    from looped_transformers import experiments

    tiny = {"seeds": 2,
            "ed": {"task": {"min_length": 2, "max_length": 3, "alphabet": 3}, "d": 16, "heads": 2, "steps": 2,
                   "batch": 4, "lr": 1e-3, "lt_loops": [2, 4, 8], "tmlt_loops": [8], "test": 8},
            "icl": {"task": {"n_dims": 2, "n_points": 3}, "d": 16, "heads": 2, "steps": 2, "batch": 4, "lr": 1e-3,
                    "lt_loops": [2, 4, 8], "tmlt_loops": [8], "test": 8},
            "lm": {"task": {"seq_len": 8, "n_chars": 20_000}, "d": 16, "heads": 2, "steps": 2, "batch": 4,
                   "lr": 1e-3, "lt_loops": [1, 4], "tmlt_loops": [4], "test": 8}}
    monkeypatch.setitem(experiments.PROTOCOL, "quick", tiny)
    run = run_command(main, "reproduce", tmp_path, expect=("json", "md", "png"))
    assert figures == ["reproduce"]
    res = run.result
    assert res["protocol"] == tiny
    assert set(res["results"]) == {"ed", "icl", "lm"}
    ed = res["results"]["ed"]["LT r=8"]
    assert len(ed["accuracy"]["values"]) == 2 and set(ed) == {"accuracy", "accuracy r_test=16",
                                                              "accuracy r_test=32"}
    assert res["verdicts"] == experiments.verdicts(res["results"])
    ls = res["results"]["icl"]["least_squares"]["mean error"]
    assert ls["low"] <= ls["mean"] <= ls["high"] and ls["mean"] > 0


def _ours(name):
    return name == "looped_transformers" or name.startswith("looped_transformers.")


def test_importing_the_command_line_imports_no_experiment_code():
    # A fresh import of the whole package in this process: torch and transformers stay loaded, so this costs
    # a fraction of a new interpreter (~7 s of CPU), and the package's own import graph is what is checked.
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

    import looped_transformers.modeling as modeling

    saved = {name: module for name, module in sys.modules.items() if _ours(name)}
    for name in saved:
        del sys.modules[name]
    try:
        fresh = importlib.import_module("looped_transformers.__main__")
        assert fresh is not saved.get("looped_transformers.__main__")  # really executed again
        assert sys.modules["looped_transformers.modeling"] is not modeling
        assert "looped_transformers.experiments" not in sys.modules
    finally:  # put the original modules and their Auto registrations back for the other tests
        for name in [name for name in sys.modules if _ours(name)]:
            del sys.modules[name]
        sys.modules.update(saved)
        AutoConfig.register("looped", modeling.LoopedConfig, exist_ok=True)
        AutoModel.register(modeling.LoopedConfig, modeling.LoopedModel, exist_ok=True)
        AutoModelForCausalLM.register(modeling.LoopedConfig, modeling.LoopedForCausalLM, exist_ok=True)
    assert type(AutoConfig.for_model("looped", vocab_size=8, hidden_size=8, num_attention_heads=2)) is \
        modeling.LoopedConfig


def test_help_shows_the_paper(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert PAPER[:40] in capsys.readouterr().out.replace("\n", " ")
