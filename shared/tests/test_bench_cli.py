import json
import random

import numpy as np
import pytest
from icml25_shared.bench import BenchmarkReport, compare, time_call
from icml25_shared.cli import RunContext, progress, run_cli, seed_everything


def test_time_call_counts_repeats_and_warmup():
    calls = []
    timing = time_call(lambda: calls.append(1), name="f", warmup=2, repeats=3)
    assert len(calls) == 5 and len(timing.times_s) == 3
    assert timing.min_s <= timing.median_s
    with pytest.raises(ValueError, match="repeats >= 1"):
        time_call(lambda: None, repeats=0)


def test_compare_ratio_and_report(tmp_path):
    import time

    row = compare(lambda: None, lambda: time.sleep(0.01), label="sleep", ours_name="noop", peer_name="sleep",
                  repeats=3, sizes={"n": 1}, metrics={"max_err": 0.0})
    assert row.speedup > 10
    report = BenchmarkReport("unit", packages=["numpy", "not-a-real-dist"])
    report.add(row)
    path = report.write_json(tmp_path / "b.json")
    saved = json.loads(path.read_text())
    assert saved["rows"][0]["speedup"] == pytest.approx(row.speedup)
    assert saved["environment"]["versions"]["numpy"] == np.__version__
    assert saved["environment"]["versions"]["not-a-real-dist"] is None
    table = report.to_markdown()
    assert "| sleep | 1 | noop |" in table and "x |" in table and f"numpy {np.__version__}" in table


def test_seed_everything_seeds_all_generators():
    torch = pytest.importorskip("torch")

    seed_everything(7)
    a = (random.random(), np.random.rand(), torch.rand(1).item())
    seed_everything(7)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == a
    with pytest.raises(TypeError):
        seed_everything(-1)


def test_progress_passes_items_through():
    assert list(progress(range(4), enabled=True, desc="x")) == [0, 1, 2, 3]
    assert list(progress(range(3), enabled=False)) == [0, 1, 2]


def _demo(ctx: RunContext) -> None:
    import matplotlib.pyplot as plt

    ctx.write_table(f"| seed | quick |\n|---|---|\n| {ctx.seed} | {ctx.quick} |")
    fig, ax = plt.subplots()
    ax.plot([0, 1], [ctx.rng.random(), 1])
    ctx.save_figure(fig)


def _reproduce(ctx: RunContext) -> None:
    ctx.write_json({"value": np.arange(3), "quick": ctx.quick})


def test_run_cli_writes_into_out(tmp_path, capsys):
    assert run_cli("toy", demo=_demo, reproduce=_reproduce, argv=["demo", "--out", str(tmp_path), "--seed", "3"]) == 0
    assert (tmp_path / "demo.md").read_text() == "| seed | quick |\n|---|---|\n| 3 | False |\n"
    assert (tmp_path / "demo.png").read_bytes()[:4] == b"\x89PNG"
    assert "toy demo finished" in capsys.readouterr().out
    run_cli("toy", demo=_demo, reproduce=_reproduce, argv=["reproduce", "--quick", "--out", str(tmp_path)])
    assert json.loads((tmp_path / "reproduce.json").read_text()) == {"value": [0, 1, 2], "quick": True}


def test_run_cli_default_out_and_bad_args(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_cli("toy", demo=_demo, reproduce=_reproduce, argv=["demo", "--quick"])
    assert (tmp_path / "out" / "toy" / "demo.md").exists()
    with pytest.raises(SystemExit):
        run_cli("toy", demo=_demo, reproduce=_reproduce, argv=["train"])
    with pytest.raises(SystemExit):
        run_cli("toy", demo=_demo, reproduce=_reproduce, argv=["demo", "--seed", "-1"])


def test_reproduce_options_reach_the_command_and_the_help(tmp_path, capsys):
    seen = []

    def add(parser):
        parser.add_argument("--variant", choices=("a", "b"), default="a", help="which variant to run")

    def main(argv):
        return run_cli("toy", demo=lambda ctx: seen.append(("demo", ctx.options)),
                       reproduce=lambda ctx: seen.append(("reproduce", ctx.options)), argv=argv, reproduce_options=add)

    main(["reproduce", "--variant", "b", "--out", str(tmp_path)])
    main(["reproduce", "--out", str(tmp_path)])
    main(["demo", "--out", str(tmp_path)])
    assert seen == [("reproduce", {"variant": "b"}), ("reproduce", {"variant": "a"}), ("demo", {})]
    with pytest.raises(SystemExit):
        main(["demo", "--variant", "b"])  # the option belongs to reproduce only
    with pytest.raises(SystemExit):
        main(["reproduce", "--variant", "c"])
    assert "invalid choice" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    assert "which variant to run" in capsys.readouterr().out


def test_testing_helpers_check_the_written_files(tmp_path):
    from icml25_shared.testing import run_command

    def main(argv):
        return run_cli("toy", demo=_demo, reproduce=_reproduce, argv=argv)

    demo = run_command(main, "demo", tmp_path / "d")
    assert demo.table.startswith("| seed | quick |") and demo.figure.name == "demo.png" and demo.result is None
    rep = run_command(main, "reproduce", tmp_path / "r")
    assert rep.result == {"value": [0, 1, 2], "quick": True} and rep.table == ""
    with pytest.raises(AssertionError, match="did not write reproduce.png"):
        run_command(main, "reproduce", tmp_path / "r2", expect=("json", "png"))


def test_extra_commands_are_listed_and_get_their_own_arguments(capsys):
    from icml25_shared.cli import ExtraCommand

    calls = []
    audit = ExtraCommand("inspect a checkpoint", lambda argv: calls.append(argv) or 3)

    def main(argv):
        return run_cli("toy", demo=_demo, reproduce=_reproduce, argv=argv, extra_commands={"audit": audit})

    assert main(["audit", "--model", "m", "--help"]) == 3  # parsed by the command, not by the frame
    assert calls == [["--model", "m", "--help"]]
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "audit" in out and "inspect a checkpoint (options: audit --help)" in out
    with pytest.raises(ValueError, match="may not redefine"):
        run_cli("toy", demo=_demo, reproduce=_reproduce, argv=["demo"], extra_commands={"demo": audit})


def test_commands_named_as_module_function_are_imported_when_they_run(tmp_path, monkeypatch):
    import sys
    import types

    module = types.ModuleType("toy_lazy_experiments")
    module.demo = _demo
    module.reproduce = _reproduce
    module.not_a_function = 3
    names = {"demo": "toy_lazy_experiments:demo", "reproduce": "toy_lazy_experiments:reproduce"}
    # --help must not import the experiments: the module does not exist yet.
    with pytest.raises(SystemExit):
        run_cli("toy", **names, argv=["--help"])
    monkeypatch.setitem(sys.modules, "toy_lazy_experiments", module)
    assert run_cli("toy", **names, argv=["reproduce", "--out", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "reproduce.json").read_text()) == {"value": [0, 1, 2], "quick": False}
    with pytest.raises(ValueError, match="demo must be a callable or a 'module:function' string, got 'nocolon'"):
        run_cli("toy", demo="nocolon", reproduce=_reproduce, argv=["demo", "--out", str(tmp_path)])
    with pytest.raises(TypeError, match="names int, not a function"):
        run_cli("toy", demo="toy_lazy_experiments:not_a_function", reproduce=_reproduce,
                argv=["demo", "--out", str(tmp_path)])
    with pytest.raises(TypeError, match="reproduce must be a callable"):
        run_cli("toy", demo=_demo, reproduce=3, argv=["demo", "--out", str(tmp_path)])  # refused at entry
    with pytest.raises(ValueError, match="demo must be a callable or a 'module:function' string, got 'x:'"):
        run_cli("toy", demo="x:", reproduce=_reproduce, argv=["--help"])
    with pytest.raises(ImportError, match=r"demo='toy_lazy_experiments:missing' cannot be imported"):
        run_cli("toy", demo="toy_lazy_experiments:missing", reproduce=_reproduce, argv=["demo", "--out", str(tmp_path)])
    with pytest.raises(ImportError, match=r"reproduce='no_such_module_xyz:run' cannot be imported"):
        run_cli("toy", demo=_demo, reproduce="no_such_module_xyz:run", argv=["reproduce", "--out", str(tmp_path)])


def test_hard_limit_keeps_partial_results_and_exits_3(tmp_path):
    import signal
    import time

    from icml25_shared.bench import hard_limit, write_results

    out = tmp_path / "gpu.json"
    before = signal.getsignal(signal.SIGALRM)
    with pytest.raises(SystemExit) as stopped:
        with hard_limit(1, {"device": "cpu"}, out) as results:
            results["first"] = np.float64(0.5)
            write_results(results, out)
            results["second"] = "measured before the limit"
            time.sleep(5)
            results["never"] = True
    assert stopped.value.code == 3
    assert json.loads(out.read_text()) == {"device": "cpu", "first": 0.5, "second": "measured before the limit",
                                           "stopped_by_limit_s": 1}
    assert signal.getsignal(signal.SIGALRM) == before and signal.alarm(0) == 0  # handler restored, alarm off
    with hard_limit(30, {}, out) as results:
        results["done"] = True
    assert signal.alarm(0) == 0 and results == {"done": True}
    with pytest.raises(TypeError, match="seconds must be an int >= 1; got 1.5"):
        with hard_limit(1.5, {}, out):
            pass
    with pytest.raises(ValueError, match="seconds must be an int >= 1; got 0"):
        with hard_limit(0, {}, out):
            pass


def test_run_jobs_statuses_width_and_budget(tmp_path):
    import sys

    from icml25_shared.bench import run_jobs

    def py(code):
        return [sys.executable, "-c", code]

    marker = tmp_path / "threads"
    jobs = {"ok": py(f"import os, pathlib; pathlib.Path({str(marker)!r}).write_text(os.environ['OMP_NUM_THREADS'])"),
            "fails": py("raise SystemExit(2)"), "slow": py("import time; time.sleep(30)"), "queued": py("pass")}
    status = run_jobs(jobs, workers=3, seconds=6.0)
    assert status == {"ok": "done", "fails": "failed (2)", "slow": "timed out", "queued": "done"}
    assert marker.read_text() == "1"
    assert run_jobs({"slow": py("import time; time.sleep(30)"), "late": py("pass")}, workers=1, seconds=1.0) == {
        "slow": "timed out", "late": "not started (budget)"}
    seen = []
    assert run_jobs({"a": [], "b": []}, workers=0, seconds=60.0, inline=seen.append) == {"a": "done", "b": "done"}
    assert seen == ["a", "b"]
    with pytest.raises(ValueError, match="needs inline"):
        run_jobs({"a": []}, workers=0, seconds=1.0)
    with pytest.raises(ValueError, match="workers"):
        run_jobs({"a": []}, workers=-2, seconds=1.0)


def test_run_jobs_starts_nothing_past_the_deadline_and_leaves_nothing_running(tmp_path):
    import sys
    import time

    from icml25_shared.bench import run_jobs

    touched = tmp_path / "touched"
    job = [sys.executable, "-c", f"open({str(touched)!r}, 'w')"]
    assert run_jobs({"a": job}, workers=1, seconds=0.0) == {"a": "not started (budget)"}
    time.sleep(0.5)
    assert not touched.exists()
    survivor = tmp_path / "survivor"
    slow = [sys.executable, "-c", f"import time; time.sleep(2); open({str(survivor)!r}, 'w')"]
    with pytest.raises(FileNotFoundError):
        run_jobs({"slow": slow, "broken": [str(tmp_path / "no-such-program")]}, workers=-1, seconds=30.0)
    time.sleep(3)
    assert not survivor.exists()  # killed when the second job could not start
    with pytest.raises(TypeError, match=r"jobs\['a'\] must be a command line as a list of str"):
        run_jobs({"a": "python -c 1"}, workers=1, seconds=1.0)


def test_hard_limit_rearms_an_outer_alarm(tmp_path):
    import signal

    from icml25_shared.bench import hard_limit

    signal.alarm(50)
    try:
        with hard_limit(5, {}, tmp_path / "x.json"):
            pass
        left = signal.alarm(0)
    finally:
        signal.alarm(0)
    assert 45 <= left <= 50
