"""The command line: demo re-scores the shipped answers; the curriculum runner on a miniature setting."""

import subprocess
import sys

import pytest
from icml25_shared.testing import run_command

from wmarkgpt.__main__ import main


def test_demo_reproduces_the_official_table(tmp_path, data_dir, monkeypatch):
    monkeypatch.setenv("WMARKGPT_DATA", str(data_dir))  # a regular (non-editable) install has no tests/data
    run = run_command(main, "demo", tmp_path, expect=("md", "json", "png"))
    m = run.result["models"]["WMarkGPT-7B"]
    assert m["BLEU-1"] == pytest.approx(0.42419, abs=1e-5) and m["ROUGE-L"] == pytest.approx(0.41800, abs=1e-5)
    assert m["LLM x25 (stored)"] == pytest.approx(71.95) and m["judge fallbacks (stored 2.5)"] == 0
    assert m["ACC substring"] == 0.55 and m["ACC exact"] == 0.546
    assert m["max |BLEU-1 - stored|"] == 0.0 and m["max |ROUGE-L - stored|"] == 0.0
    assert run.result["visibility"]["real"]["SRCC"] == pytest.approx(0.697, abs=1e-3)
    assert run.table.startswith("| model | BLEU-1 |")


def test_curriculum_runner_on_a_miniature_setting():
    from dataclasses import replace

    import torch

    from wmarkgpt.experiments import CurriculumSettings, run_curriculum

    s = CurriculumSettings(image_size=16, n_position=8, n_synthetic=8, n_real=8, n_test=6, epochs=(1, 1, 1),
                           batch_size=8, hidden_size=32, vision_hidden_size=16, num_learnable_queries=4)
    res = run_curriculum(s, seed=0)
    assert "stage0" not in res  # the default is the first protocol's tower (no stage 0)
    tower = replace(s, conv_stem=(8, 8, 8), n_stage0=16, stage0_epochs=1, aux_weight=1.0, epochs=(1, 2, 1))
    torch.manual_seed(1234)
    expected = torch.rand(3)
    torch.manual_seed(1234)
    res0 = run_curriculum(tower, seed=0)
    assert torch.equal(torch.rand(3), expected)  # the caller's global RNG is neither reseeded nor advanced
    assert set(res0["stage0"]) >= {"aux_head_synthetic_SRCC", "losses"}
    assert [r["epoch"] for r in res0["S2_per_epoch"]] == [1, 2]
    # the last tracked epoch is the model that S2 reports: the same score, computed twice
    assert res0["S2_per_epoch"][-1]["SRCC"] == pytest.approx(res0["S2_synthetic_visibility"]["SRCC"], abs=1e-12)
    assert res0["S2_per_epoch"][-1]["aux_head_SRCC"] == pytest.approx(res0["S2_aux_head_synthetic_SRCC"], abs=1e-12)
    assert res["S2_aux_head_synthetic_SRCC"] is None  # no auxiliary head in the first protocol's tower
    for key in ("S1", "S2", "S3", "stage3_only"):
        assert 0.0 <= res[key]["BLEU-1"] <= 1.0 and 0.0 <= res[key]["ACC exact"] <= 1.0
    assert 0.0 <= res["position_exact_match"] <= 1.0
    assert set(res["full_reference_baselines"]) == {"PSNR SRCC", "SSIM SRCC", "PSNR PLCC", "SSIM PLCC"}


def test_importing_the_command_line_imports_no_experiment_code():
    code = "import sys, wmarkgpt.__main__; assert 'wmarkgpt.experiments' not in sys.modules; print('ok')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_importing_the_package_does_not_import_torch():
    code = "import sys, wmarkgpt; assert 'torch' not in sys.modules; print(round(wmarkgpt.predict_score([0.0] * 5), 12))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "3.0", done.stderr


def test_data_folder_is_found_from_the_repository_root_without_an_editable_install(data_dir, monkeypatch):
    import wmarkgpt.data as ex

    monkeypatch.delenv("WMARKGPT_DATA", raising=False)
    monkeypatch.setattr(ex, "__file__", str(data_dir.parents[3] / "site-packages" / "wmarkgpt" / "data.py"))
    monkeypatch.chdir(data_dir.parents[3])
    assert ex.find_data_dir().resolve() == data_dir.resolve()
    monkeypatch.chdir(data_dir)
    with pytest.raises(FileNotFoundError, match="WMARKGPT_DATA"):
        ex.find_data_dir()


def test_shipped_official_files_match_data_md_and_carry_their_licence(data_dir):
    # the files travel in the sdist: their Apache-2.0 text must travel with them, and their hashes match DATA.md
    import gzip
    import hashlib
    import re

    text = (data_dir.parents[1] / "DATA.md").read_text()
    rows = re.findall(r"\| `([\w.-]+\.json\.gz)` \| .*? \| `([0-9a-f]{64})` \|", text)
    assert {name for name, _ in rows} == {p.name for p in data_dir.glob("*.json.gz")}
    for name, sha in rows:
        assert hashlib.sha256(gzip.decompress((data_dir / name).read_bytes())).hexdigest() == sha, name
    licence = (data_dir / "LICENSE-WMarkGPT-Apache-2.0").read_text()
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    assert "LICENSE-WMarkGPT-Apache-2.0" in text


def test_the_reproduce_figure_of_a_stored_run_is_legible():
    import json
    from pathlib import Path

    from icml25_shared.testing import figure_problems

    from wmarkgpt.experiments import reproduce_figure

    res = json.loads((Path(__file__).parents[1] / "results" / "tower" / "seed0.json").read_text())
    fig = reproduce_figure(res)
    assert figure_problems(fig) == []
    assert [round(b.get_height(), 6) for b in fig.axes[0].patches] == [
        round(res[k]["BLEU-1"], 6) for k in ("S1", "S2", "S3", "stage3_only")]


def test_the_readme_shows_the_rendered_tower_table():
    import importlib.util
    from pathlib import Path

    package = Path(__file__).parents[1]
    spec = importlib.util.spec_from_file_location("tower_rerun", package / "studies" / "tower_rerun.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    table = module.readme_table()
    assert table in (package / "README.md").read_text()
    rows = table.splitlines()[2:]
    assert [r.rsplit("| ", 1)[1].split(" / ")[1].split(" ")[0] for r in rows] == ["no"] * 5  # confirmatory seeds
    assert "0.244 [-0.459, 0.947]: 0.071, 0.090, 0.571" in rows[1]
    summary = module.summary([3, 4, 5])
    assert summary in (package / "results" / "tower" / "summary.md").read_text()
    assert summary.splitlines()[0] == "seeds [3, 4, 5]"
