"""The command line: demo, reproduce and scan write the numbers the README reports."""

import json
import subprocess
import sys

import pytest
from icml25_shared.testing import run_command, run_module

from train_test_overlap import load_registry
from train_test_overlap.__main__ import PAPER, main


def test_demo_writes_labels_where_rules_disagree(tmp_path):
    run = run_command(main, "demo", tmp_path, expect=("md", "json", "png"))
    rows = {r["instance"]: r for r in run.result["rows"]}
    assert len(rows) == 10
    assert all(rows["dedent"][p] == "dirty" for p in ("helm", "gpt3", "gpt4", "palm", "llama2"))  # quoted verbatim
    assert rows["loads"]["helm"] == "clean" and rows["loads"]["HELM jaccard"] == 0
    # the upper-cased, unpunctuated copy: n-gram rules see it, GPT-4's case-keeping substrings do not
    assert rows["dumps"]["helm"] == "dirty" and rows["dumps"]["gpt4"] == "clean"


def test_reproduce_quick_rates_per_planted_kind(tmp_path):
    result = run_command(main, "reproduce", tmp_path).result
    assert result["instances"] == 200 and result["corpus_bytes"] > 1_900_000
    rates = {name: p["dirty_rate"] for name, p in result["presets"].items()}
    for name, r in rates.items():
        assert r["verbatim"] == 1.0 and r["clean"] == 0.0, name  # random 30+ word texts: no chance overlap
    assert rates["helm"]["noised"] == 1.0 and rates["palm"]["noised"] == 0.0  # 14-word runs: 13-grams survive, 70% of 8-grams do not
    assert rates["gpt4"]["reformatted"] == 0.0 and rates["gpt3"]["reformatted"] == 1.0
    # the registry table and chart: every entry of the shipped registry, with its score and unverified fields
    entries = load_registry()
    rows = result["registry"]["entries"]
    assert [r["model"] for r in rows] == [e.model for e in entries]
    assert [r["score"] for r in rows] == [e.score for e in entries]
    assert [r["unverified"] for r in rows] == [", ".join(e.unverified) or "-" for e in entries]
    assert result["registry"]["coverage"]["models"]["registry"] == len(entries)
    table = (tmp_path / "registry.md").read_text()
    assert all(e.model in table for e in entries) and "unverified" in table
    assert (tmp_path / "registry.png").stat().st_size > 0


def test_scan_command_writes_helm_files_equal_to_golden(tmp_path, helm_data):
    code = main(["scan", "--scenarios", str(helm_data / "scenarios.jsonl"), "--corpus", str(helm_data / "corpus.txt"),
                 "--out", str(tmp_path)])
    assert code == 0
    stats = [json.loads(line) for line in open(tmp_path / "stats.jsonl")]
    assert stats == [json.loads(line) for line in open(helm_data / "golden_stats.jsonl")]
    assert (tmp_path / "metrics_N13.jsonl").read_text().count("\n") == 40


def test_presets_command(tmp_path, helm_data, capsys):
    code = main(["presets", "--scenarios", str(helm_data / "scenarios.jsonl"), "--corpus", str(helm_data / "corpus.txt"),
                 "--out", str(tmp_path), "--presets", "helm", "palm"])
    assert code == 0
    lines = [json.loads(line) for line in open(tmp_path / "labels.jsonl")]
    assert [(r["preset"], r["split"]) for r in lines] == [("helm", "test"), ("helm", "valid"), ("palm", "test"), ("palm", "valid")]
    # HELM's 13-gram input overlap on the fixture: id1 and id10 of the first scenario (golden_stats.jsonl)
    assert sorted(k for k, v in lines[0]["labels"].items() if v == "dirty") == ["id1", "id10"]


@pytest.mark.slow
def test_module_entry_point_matches_in_process(tmp_path):
    first = run_module("train_test_overlap", "reproduce", tmp_path / "a", timeout=300).result
    second = run_command(main, "reproduce", tmp_path / "b").result
    assert first["presets"] == second["presets"]


def test_importing_the_command_line_imports_no_experiment_code():
    code = ("import sys, train_test_overlap.__main__; "
            "assert 'train_test_overlap.experiments' not in sys.modules; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_help_shows_the_paper(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert PAPER[:20] in capsys.readouterr().out


def test_report_command_with_scores(tmp_path, helm_data):
    scores = tmp_path / "scores.jsonl"
    sets = [json.loads(line) for line in open(helm_data / "scenarios.jsonl")]
    with open(scores, "w") as f:
        for s in sets:
            spec = s["scenario_key"]["scenario_spec"]
            name = spec["class_name"] + "".join(f",{k}={v}" for k, v in sorted(spec["args"].items()))
            for k, inst in enumerate(s["instances"]):
                f.write(json.dumps({"test_set": name, "split": s["scenario_key"]["split"], "id": inst["id"], "score": k % 2}) + "\n")
    code = main(["report", "--scenarios", str(helm_data / "scenarios.jsonl"), "--corpus", str(helm_data / "corpus.txt"),
                 "--out", str(tmp_path), "--presets", "helm", "palm", "--scores", str(scores)])
    assert code == 0
    data = json.loads((tmp_path / "report.json").read_text())
    helm_test = next(p for p in data["presets"] if p["preset"] == "helm" and p["split"] == "test")
    # MMLU fixture: dirty at n=13 are id1, id10 (scores 0, 1); clean id2..id5 (scores 1, 0, 1, 0); all mean 0.5
    assert helm_test["delta"]["clean_mean"] == 0.5 and helm_test["delta"]["all_mean"] == 0.5


def test_sketch_command_build_and_query(tmp_path, helm_data, capsys):
    pytest.importorskip("xxhash")
    assert main(["sketch", "--corpus", str(helm_data / "corpus.txt"), "--n", "13", "--capacity", "1000",
                 "--out", str(tmp_path / "s.npz")]) == 0
    assert main(["sketch", "--load", str(tmp_path / "s.npz"), "--scenarios", str(helm_data / "scenarios.jsonl"),
                 "--out", str(tmp_path / "q.json")]) == 0
    out = capsys.readouterr().out
    # exact 13-gram input overlap (golden_stats.jsonl): 2 of 6 and 2 of 4; a sketch can only add
    assert "MMLUScenario,subject=anatomy [test]: 2/6" in out and "NaturalQAScenario [valid]: 2/4" in out


def test_report_command_refuses_a_duplicated_score_and_an_unindexed_metric_n(tmp_path, helm_data):
    first = json.loads(open(helm_data / "scenarios.jsonl").readline())
    spec = first["scenario_key"]["scenario_spec"]
    name = spec["class_name"] + "".join(f",{k}={v}" for k, v in sorted(spec["args"].items()))
    rec = {"test_set": name, "split": first["scenario_key"]["split"], "id": first["instances"][0]["id"]}
    scores = tmp_path / "scores.jsonl"
    # two scores for one instance: the second used to replace the first without a word
    scores.write_text(json.dumps(dict(rec, score=0.0)) + "\n" + json.dumps(dict(rec, score=1.0)) + "\n")
    args = ["report", "--scenarios", str(helm_data / "scenarios.jsonl"), "--corpus", str(helm_data / "corpus.txt"),
            "--out", str(tmp_path), "--presets", "helm"]
    with pytest.raises(SystemExit, match=r"scores\.jsonl:2: .*scored twice"):
        main(args + ["--scores", str(scores)])
    with pytest.raises(SystemExit) as exc:  # refused before the corpus is read
        main(args + ["--n", "5", "9"])
    assert exc.value.code == 2


@pytest.mark.parametrize("command", ["presets", "report"])
def test_gpt4_rule_without_pyahocorasick_names_the_extra_and_other_rules_still_run(tmp_path, helm_data, capsys,
                                                                                   monkeypatch, command):
    monkeypatch.setitem(sys.modules, "ahocorasick", None)  # import ahocorasick raises ImportError
    args = [command, "--scenarios", str(helm_data / "scenarios.jsonl"), "--corpus", str(helm_data / "corpus.txt"),
            "--out", str(tmp_path)]
    for chosen in ([], ["--presets", "helm", "gpt4"]):  # the default is every preset, gpt4 included
        with pytest.raises(SystemExit) as exc:
            main(args + chosen)
        assert exc.value.code == 2
        assert "train-test-overlap[gpt4]" in capsys.readouterr().err
    assert main(args + ["--presets", "helm", "palm"]) == 0


def test_presets_command_refuses_an_unknown_preset_listing_the_accepted(tmp_path, helm_data, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["presets", "--scenarios", str(helm_data / "scenarios.jsonl"), "--corpus", str(helm_data / "corpus.txt"),
              "--out", str(tmp_path), "--presets", "gpt5"])
    assert exc.value.code == 2 and "'gpt5'" in capsys.readouterr().err


def test_sketch_query_refuses_another_n_or_tokenizer_than_the_sketch_holds(tmp_path, helm_data, capsys):
    pytest.importorskip("xxhash")
    assert main(["sketch", "--corpus", str(helm_data / "corpus.txt"), "--n", "5", "--capacity", "1000",
                 "--out", str(tmp_path / "s.npz")]) == 0
    query = ["sketch", "--load", str(tmp_path / "s.npz"), "--scenarios", str(helm_data / "scenarios.jsonl")]
    for wrong, says in ((["--n", "13"], "5-grams"), (["--tokenizer", "whitespace"], "helm-default")):
        with pytest.raises(SystemExit) as exc:
            main(query + wrong)
        assert exc.value.code == 2 and says in capsys.readouterr().err
    assert main(query + ["--n", "5", "--tokenizer", "helm-default"]) == 0
    assert "with a reported 5-gram" in capsys.readouterr().out
