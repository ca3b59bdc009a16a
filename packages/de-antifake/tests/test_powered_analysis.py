"""The powered comparison's pooled tests equal scipy's on hand-made paired outcomes."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest, ttest_rel

SCRIPT = Path(__file__).resolve().parents[1] / "studies" / "powered_comparison.py"


def _module():
    spec = importlib.util.spec_from_file_location("powered_comparison", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pooled_tests_match_scipy():
    m = _module()
    rng = np.random.default_rng(0)
    runs = []
    for seed in (1, 2):
        rows = {}
        for name, p in (("PhonePuRe", 0.7), ("stage 1 (t=3)", 0.5), ("AudioPure t=5", 0.5),
                        ("PhonePuRe, shuffled alignment", 0.6)):
            rows[name] = {"accepted": [bool(x) for x in rng.random(30) < p],
                          "sims": [float(x) for x in rng.normal(0.9, 0.02, 30)]}
        runs.append({"seed": seed, "rows": rows})
    res = m.pool(runs)
    assert res["n_pairs"] == 60
    a = [x for r in runs for x in r["rows"]["PhonePuRe"]["accepted"]]
    b = [x for r in runs for x in r["rows"]["stage 1 (t=3)"]["accepted"]]
    only_a = sum(x and not y for x, y in zip(a, b, strict=True))
    only_b = sum(y and not x for x, y in zip(a, b, strict=True))
    test = res["tests"]["PhonePuRe vs stage 1 (t=3)"]
    assert (test["mcnemar"]["a_only"], test["mcnemar"]["b_only"]) == (only_a, only_b)
    assert test["mcnemar"]["p"] == pytest.approx(binomtest(only_a, only_a + only_b, 0.5).pvalue)
    sa = [x for r in runs for x in r["rows"]["PhonePuRe"]["sims"]]
    sb = [x for r in runs for x in r["rows"]["PhonePuRe, shuffled alignment"]["sims"]]
    assert res["tests"]["PhonePuRe vs PhonePuRe, shuffled alignment"]["sim_paired_t"]["p"] == pytest.approx(
        ttest_rel(sa, sb).pvalue)
    lo, hi = m.wilson(sum(a), len(a))
    assert lo < sum(a) / len(a) < hi
    assert m._seeds("100-107") == list(range(100, 108)) and m._seeds("3") == [3]
    assert m._seeds("100,104-105") == [100, 104, 105]


def _fake_runs(rng, n_refs=30, seeds=(1, 2)):
    runs = []
    for seed in seeds:
        rows = {}
        for name, p, sim in (("clean reference", 0.9, 0.95), ("PhonePuRe", 0.7, 0.93), ("stage 1 (t=3)", 0.5, 0.92),
                             ("AudioPure t=5", 0.5, 0.92), ("PhonePuRe, shuffled alignment", 0.7, 0.93)):
            rows[name] = {"accepted": [bool(x) for x in rng.random(n_refs) < p],
                          "sims": [float(x) for x in rng.normal(sim, 0.01, n_refs)]}
        runs.append({"seed": seed, "rows": rows, "sizes": {"n_speakers": n_refs}, "cpu_seconds": 600.0})
    return runs


def test_rendered_table_says_what_ran_and_applies_the_rules():
    m = _module()
    runs = _fake_runs(np.random.default_rng(1))
    res = m.pool(runs)
    control = res["tests"]["PhonePuRe vs PhonePuRe, shuffled alignment"]
    sim = control["sim_paired_t"]
    assert control["holds"] == (sim["mean_difference"] > 0 and sim["p"] < 0.05)
    versus = res["tests"]["PhonePuRe vs stage 1 (t=3)"]["mcnemar"]
    assert res["tests"]["PhonePuRe vs stage 1 (t=3)"]["holds"] == (versus["a_only"] > versus["b_only"]
                                                                    and versus["p"] < 0.05)
    lo, hi = res["rows"]["PhonePuRe"]["sim_ci"]
    assert lo < res["rows"]["PhonePuRe"]["sim"] < hi
    text = m.render(runs, res)
    assert text.startswith("Ran: seeds 1, 2 (2 seeds; references per seed 1: 30, 2: 30; 60 paired references)")
    runs[1]["n_references"] = 40  # a seed stopped after 30 of its 40 references
    for r in runs:
        r["weights"] = "the shipped ones"
    assert "2: 30 of 40;" in m.render(runs, res) and m.render(runs, res).count("weights: the shipped ones") == 1
    assert "Underpowered" in text and "power 0.26" in text and "20.0 CPU-minutes" in text
    assert f"| {m._p(versus['p'])} |" in text
    decided = m.render(runs, res, ("PhonePuRe vs stage 1 (t=3)",))
    assert decided.count("| reported |") == 2 and decided.count("| reported |") + decided.count("hold |") == 3
    assert text.count("\n| PhonePuRe vs ") == 3
    assert m.render(_fake_runs(np.random.default_rng(2), 30, range(8)), m.pool(
        _fake_runs(np.random.default_rng(2), 30, range(8)))).count("Underpowered") == 0
    readme = f"intro\n{m.MARKERS[0]}\nold\n{m.MARKERS[1]}\nrest\n"
    assert m.replace_block(readme, text) == f"intro\n{m.MARKERS[0]}\n{text}{m.MARKERS[1]}\nrest\n"
    with pytest.raises(ValueError, match="block"):
        m.replace_block("no markers", text)


def test_readme_block_is_the_render_of_the_stored_seeds():
    m = _module()
    if not any(any((m.OUT / name).glob("seed*.json")) for name, *_ in m.GROUPS):
        pytest.skip("no powered seed has been stored")
    block = m.summarise(m.OUT, write=False, readme=False)
    assert f"{m.MARKERS[0]}\n{block}{m.MARKERS[1]}" in m.README.read_text()
    for name, *_ in m.GROUPS:
        if (m.OUT / name / "summary.md").is_file():
            assert (m.OUT / name / "summary.md").read_text() in block


def test_mcnemar_power_is_exact_and_matches_the_simulation():
    m = _module()
    assert m.mcnemar_power(60) == pytest.approx(0.26, abs=0.015)  # amendment 1: 4000 simulated draws
    assert m.mcnemar_power(120) == pytest.approx(0.53, abs=0.015)
    assert m.mcnemar_power(30) < m.mcnemar_power(60) < m.mcnemar_power(120)
    assert m.mcnemar_power(60, difference=0.0) < 0.03  # no difference: rejects in this direction < alpha / 2
    from scipy.stats import binom

    brute = sum(binom.pmf(d, 20, 0.25) * sum(binom.pmf(a, d, 0.7) for a in range(d + 1)
                                             if a > d - a and binomtest(a, d, 0.5).pvalue < 0.05)
                for d in range(1, 21))
    assert m.mcnemar_power(20) == pytest.approx(brute, rel=1e-9)
    for bad in ({"difference": 0.3}, {"discordant": 0.0}, {"difference": -0.1}):  # NaN / ZeroDivisionError before
        with pytest.raises(ValueError, match="mcnemar_power needs"):
            m.mcnemar_power(60, **bad)


def test_summary_renders_each_group_with_the_tests_it_decides(tmp_path):
    import json

    m = _module()
    for (name, _, _), seed in zip(m.GROUPS, (1, 2), strict=True):
        (tmp_path / name).mkdir()
        run = _fake_runs(np.random.default_rng(seed), 30, (seed,))[0]
        (tmp_path / name / f"seed{seed}.json").write_text(json.dumps(run))
    block = m.summarise(tmp_path, readme=False)
    first, second = block.split("\n**")
    assert first.startswith(f"**{m.GROUPS[0][1]}**") and second.startswith(f"{m.GROUPS[1][1]}**")
    shipped = [line for line in first.splitlines() if line.startswith("| PhonePuRe vs ")]
    assert [line.endswith("| reported |") for line in shipped] == [False, False, True]
    assert (tmp_path / m.GROUPS[1][0] / "summary.md").read_text() in second
    with pytest.raises(SystemExit, match="no seed"):
        m.summarise(tmp_path / "empty", readme=False)
    assert m.summarise(tmp_path, write=False, readme=False) == block
