"""``python -m rfig_exp.results.status`` and ``python -m campaign.estimate`` on hand-made results trees."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from campaign import estimate, estimate_sweep, estimate_throughput
from rfig_exp.results import contract as results
from rfig_exp.results import status

ROOT = Path(__file__).resolve().parents[1]
HEADER = "env_steps,update,episode_return\r\n"


def run_folder(exp: Path, env: str, bonus: str, variant: str, seed: int, *, windows: int = 0,
               summary: dict | None = None, total: int = 1000, every: int = 100, torn_row: bool = False) -> Path:
    """One run directory as training leaves it: config, ``windows`` metrics rows, maybe a summary."""
    path = exp / env / bonus / variant / f"seed_{seed}"
    path.mkdir(parents=True)
    (path / "config.yaml").write_text(f"seed: {seed}\neval_frequency: {every}\nagent:\n  total_timesteps: {total}\n")
    rows = "".join(f"{every * (w + 1)},{w + 1},1.5\r\n" for w in range(windows))
    if windows or torn_row:
        (path / "metrics.csv").write_text(HEADER + rows + ("999,9" if torn_row else ""))
    if summary is not None:
        (path / "summary.json").write_text(json.dumps(summary))
    return path


def manifest(exp: Path, *entries: tuple[str, str, str, list[int]]) -> None:
    exp.mkdir(parents=True, exist_ok=True)
    with open(exp / "manifest.jsonl", "a") as f:
        for env, bonus, variant, seeds in entries:
            f.write(json.dumps({"env": env, "bonus": bonus, "variant": variant, "seeds": seeds,
                                "overrides": [f"env={env}", f"bonus={bonus}"], "launched_at": "2026-11-26T10:00:00"})
                    + "\n")


@pytest.fixture
def sweep(tmp_path):
    """A sweep of mountaincar x {none, rfig} x seeds 0-3 (as 2 jobs of 2 seeds), half done."""
    exp = tmp_path / "results" / "paper"
    manifest(exp, ("mountaincar", "none", "base", [0, 1]), ("mountaincar", "none", "base", [2, 3]),
             ("mountaincar", "rfig", "base", [0, 1]), ("mountaincar", "rfig", "base", [2, 3]))
    for seed in (0, 1):
        run_folder(exp, "mountaincar", "none", "base", seed, windows=10, summary={"status": "complete"})
    run_folder(exp, "mountaincar", "none", "base", 2, windows=3)                 # partial: 3 of 10 windows
    run_folder(exp, "mountaincar", "rfig", "base", 0, windows=7, torn_row=True)  # a half-written 8th row
    run_folder(exp, "mountaincar", "rfig", "base", 1)                            # started, no window yet
    run_folder(exp, "mountaincar", "rfig", "base", 2, windows=10, summary={"status": "failed"})
    # a single run outside any sweep, in another variant
    run_folder(exp, "mountaincar", "rfig", "agent.lr=0.001", 0, windows=10, summary={"status": "complete"})
    return exp


def test_status_counts_complete_partial_missing_and_failed(sweep):
    groups, notes = status.collect(sweep)
    by_key = {(g.env, g.bonus, g.variant): g for g in groups}
    assert list(by_key) == [("mountaincar", "none", "base"), ("mountaincar", "rfig", "agent.lr=0.001"),
                            ("mountaincar", "rfig", "base")]
    none = by_key["mountaincar", "none", "base"].as_dict()
    assert (none["complete"], none["partial"], none["missing"], none["failed"]) == ([0, 1], [2], [3], [])
    assert none["partial_windows"] == {"2": [3, 10]}
    rfig = by_key["mountaincar", "rfig", "base"].as_dict()
    assert (rfig["complete"], rfig["partial"], rfig["missing"], rfig["failed"]) == ([], [0], [1, 3], [2])
    assert rfig["partial_windows"] == {"0": [7, 10]}  # the torn row is not a window
    assert by_key["mountaincar", "rfig", "agent.lr=0.001"].as_dict()["complete"] == [0]
    assert notes["manifest_lines"] == 4 and notes["last_launch"] == "2026-11-26T10:00:00"


def test_status_table_and_cli(sweep):
    out = subprocess.run([sys.executable, "-m", "rfig_exp.results.status", "--results", str(sweep.parent),
                          "--experiment", "paper"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("experiment paper: 3 env x bonus x variant groups; 4 manifest lines")
    row = next(line for line in lines if line.split()[:3] == ["mountaincar", "none", "base"])
    assert " ".join(row.split()[3:]) == "2 1 (seed 2 at window 3 of 10) 1 (3) 0"
    assert "total: 9 runs; 3 complete, 2 partial, 3 missing, 1 failed" in out.stdout
    assert "relaunching the same sweep" in out.stdout
    as_json = subprocess.run([sys.executable, "-m", "rfig_exp.results.status", "--results", str(sweep.parent),
                              "--json"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert json.loads(as_json.stdout)["paper"]["groups"][0]["partial"] == [2]


def test_launch_py_status_says_partial_seeds_in_words_kept_short_for_many(tmp_path):
    """``python launch.py status``: seeds at one window are said together, a wide sweep's other
    windows counted, so a row of 40 partial seeds stays one short line."""
    exp = tmp_path / "results" / "wide"
    for seed in range(40):  # seeds 0-29 at window 12, 30-34 at 3, 35-37 at 5, 38-39 at 7 (of 20)
        windows = 12 if seed < 30 else 3 if seed < 35 else 5 if seed < 38 else 7
        run_folder(exp, "cartpole", "none", "base", seed, windows=windows, total=2000)
    out = subprocess.run([sys.executable, "launch.py", "status", "--results", str(tmp_path / "results")],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if line.startswith("cartpole"))
    assert ("40 (seeds 0-29 at window 12 of 20, seeds 30-34 at window 3 of 20, seeds 35-37 at window 5 of 20, "
            "2 more seeds elsewhere)") in row
    assert "@" not in row and len(row) < 160


def test_status_errors_and_empty_trees(tmp_path):
    missing = status.main(["--results", str(tmp_path / "nope")])
    assert missing == 2
    (tmp_path / "res" / "a").mkdir(parents=True)
    assert status.main(["--results", str(tmp_path / "res"), "--experiment", "b"]) == 2
    assert status.main(["--results", str(tmp_path / "res"), "--experiment", "a"]) == 0


def test_status_skips_bad_manifest_lines_and_folders_outside_the_layout(tmp_path, capsys):
    exp = tmp_path / "old"
    manifest(exp, ("cartpole", "none", "base", [0]))
    with open(exp / "manifest.jsonl", "a") as f:
        f.write('{"env": "cartpole", "bonus"\n')  # torn by a crash
    old = exp / "cartpole" / "none" / "seed_0"   # <env>/<bonus>/seed_k (no variant level): not the layout
    old.mkdir(parents=True)
    (old / "metrics.csv").write_text(HEADER + "100,1,1.5\r\n")
    run_folder(exp, ".trash", "none", "base", 1, windows=2)      # hidden folders are not part of the tree
    assert status.main(["--results", str(tmp_path), "--experiment", "old"]) == 0
    out = capsys.readouterr().out
    assert "1 unreadable line(s)" in out
    assert "total: 1 runs; 0 complete, 0 partial, 1 missing" in out


def test_whole_rows_matches_a_csv_reader(tmp_path):
    import csv

    path = tmp_path / "metrics.csv"
    for text in ("", HEADER, HEADER + "1,2,3\r\n", HEADER + "1,2,3\r\n4,5,6\r\n", HEADER + "1,2,3\n4,5,6\n"):
        path.write_text(text)
        with open(path, newline="") as f:
            assert results.whole_rows(tmp_path) == len(list(csv.DictReader(f)))


@pytest.mark.parametrize("summary, rows, state", [
    ({"status": "complete"}, 10, "complete"),
    ({"status": "complete", "num_windows": 10}, 10, "complete"),
    ({"status": "complete", "num_windows": 10}, 7, "failed"),   # metrics.csv truncated: re-run by the trainer
    ({"env": "mountaincar"}, 10, "failed"),                     # no status: not a summary the trainer wrote
    ({"status": "failed"}, 10, "failed"),
    ("[1, 2]", 10, "failed"),                                   # not a JSON object
    ("{", 10, "failed"),                                        # torn
])
def test_status_and_analysis_agree_on_completeness(tmp_path, summary, rows, state):
    """One rule (results.incomplete_reason): status, the trainer (results.is_complete) and
    analysis.runs.load_run give the same answer for the same run folder."""
    from analysis.runs import load_run

    path = run_folder(tmp_path / "exp", "mountaincar", "none", "base", 0, windows=rows)
    (path / "summary.json").write_text(summary if isinstance(summary, str) else json.dumps(summary))
    assert status.read_seed(path, 0).state == state
    assert results.is_complete(path) == (state == "complete")
    assert load_run(path, "exp", "mountaincar", "none", 0).complete == (state == "complete")
    if state != "complete":
        assert load_run(path, "exp", "mountaincar", "none", 0).load_error == results.incomplete_reason(path)


def test_the_results_contract_status_and_estimate_do_not_import_jax():
    code = ("import sys, rfig_exp.results.contract, rfig_exp.results.status, campaign.estimate; "
            "print('jax' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=str(ROOT / "src")))
    assert out.stdout.strip() == "False", out.stderr


# --- estimate -------------------------------------------------------------------------------


def measured(exp: Path, env: str, bonus: str, seeds: list[int], sps: float, compile_s: float, *,
             variant: str = "base", host: str = "vm", variant_yaml: str | None = None, **extra) -> None:
    """The summaries one training process of ``len(seeds)`` vmapped seeds writes."""
    for seed in seeds:
        summary = {"status": "complete", "env": env, "bonus": bonus, "seed": seed, "env_steps": 98304,
                   "num_seeds_in_process": len(seeds), "env_steps_per_second": sps, "compile_time_s": compile_s,
                   "wall_time_s": compile_s + 98304 * len(seeds) / sps, "host": host, "resumed_from_windows": [],
                   **extra}
        path = run_folder(exp, env, bonus, variant, seed, windows=4, summary=summary)
        if variant_yaml is not None:
            (path.parent / "variant.yaml").write_text(variant_yaml)


def test_rounded_steps_is_whole_windows():
    assert estimate_sweep.rounded_steps(1_000_000) == 41 * 24_576 == 1_007_616
    assert estimate_sweep.rounded_steps(24_576) == 24_576


def test_estimate_picks_the_cheapest_measured_job_shape(tmp_path):
    res = tmp_path / "results"
    # mountaincar/rfig: one process of 1 seed and one of 8 seeds
    measured(res / "bench", "mountaincar", "rfig", [0], sps=20_000.0, compile_s=15.0)
    measured(res / "bench", "mountaincar", "rfig", [8, 9, 10, 11, 12, 13, 14, 15], sps=24_000.0, compile_s=20.0)
    processes, skipped = estimate_throughput.collect_processes(res)
    assert len(processes) == 2 and skipped == {}  # 8 summaries of one process count once
    table = estimate.estimate(processes, ["mountaincar", "acrobot"], ["rfig"], 32, 1_007_616)["vm"]
    best = table["mountaincar", "rfig"]
    # independent arithmetic: S=1 -> 32 jobs of 1,007,616/20,000 s, the first compiling in 15 s and
    # the other 31 loading it from the cache in 1.5 s; S=8 -> 4 jobs of 8 x 1,007,616/24,000 s, 20 + 3 x 2 s
    cost = {1: 15 + 31 * 1.5 + 32 * 1_007_616 / 20_000, 8: 20 + 3 * 2.0 + 4 * 8 * 1_007_616 / 24_000}
    assert best.seeds_per_job == min(cost, key=cost.get) == 8
    assert math.isclose(best.total_hours, cost[8] / 3600) and best.jobs == 4
    assert table["acrobot", "rfig"] is None


def test_estimate_uses_medians_and_separates_hosts(tmp_path):
    res = tmp_path / "results"
    for i, sps in enumerate([10_000.0, 30_000.0, 12_000.0]):
        measured(res / f"e{i}", "acrobot", "none", [0], sps=sps, compile_s=10.0 + i)
    measured(res / "gpu", "acrobot", "none", [0, 1], sps=500_000.0, compile_s=30.0, host="gpu-node",
             machine={"device_kind": "H100"})
    processes, _ = estimate_throughput.collect_processes(res)
    table = estimate.estimate(processes, ["acrobot"], ["none"], 32, 1_007_616)
    assert set(table) == {"vm", "gpu-node"}
    assert table["vm"]["acrobot", "none"].steps_per_second == 12_000.0
    # the cold compile: the slowest of the three (the others may have loaded it from the cache)
    assert table["vm"]["acrobot", "none"].compile_s == 12.0 and table["vm"]["acrobot", "none"].processes == 3
    assert table["gpu-node"]["acrobot", "none"].jobs == 16


def test_estimate_leaves_out_other_variants_resumed_and_incomplete_runs(tmp_path):
    exp = tmp_path / "results" / "mixed"
    measured(exp, "acrobot", "none", [0], 10_000.0, 5.0, variant="agent.total_timesteps=98304",
             variant_yaml="agent.total_timesteps: 98304\n")                       # speed-neutral: counted
    measured(exp, "acrobot", "none", [1], 50_000.0, 5.0, variant="agent.num_envs=4",
             variant_yaml="agent.num_envs: 4\n")                                   # changes the speed
    measured(exp, "acrobot", "rfig", [0], 5_000.0, 5.0, resumed_from_windows=[3])  # resumed
    run_folder(exp, "acrobot", "rnd", "base", 0, windows=2)                          # partial, no summary
    processes, skipped = estimate_throughput.collect_processes(tmp_path / "results")
    assert [(p.env, p.bonus, p.variant) for p in processes] == [("acrobot", "none", "agent.total_timesteps=98304")]
    assert skipped == {"other variants (hyperparameters that change the speed)": 1, "resumed runs": 1}


def test_estimate_cli_states_its_basis_and_marks_unmeasured_pairs(tmp_path):
    res = tmp_path / "results"
    measured(res / "bench", "mountaincar", "none", [0, 1], sps=100_000.0, compile_s=12.0)
    out = subprocess.run([sys.executable, "-m", "campaign.estimate", "--results", str(res)], capture_output=True,
                         text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "12 envs x 5 bonuses x 32 seeds x 1,000,000 env steps (1,007,616" in text
    assert "## host vm" in text and "1 training processes from experiment(s) bench" in text
    assert "| mountaincar | none | 2 | 1 | 100,000 | 12.0 |" in text
    assert "| sparse_ant | rfig | not measured |" in text
    assert "Not measured: 59 pairs" in text
    hours = (12 + 15 * 1.2 + 16 * 2 * 1_007_616 / 100_000) / 3600  # one cold compile, 15 from the cache
    assert f"Total over the 1 measured pairs: {hours:.2f} job-hours" in text
    bad = subprocess.run([sys.executable, "-m", "campaign.estimate", "--results", str(res), "--seeds", "0"],
                         capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert bad.returncode == 2 and "--seeds=0 must be >= 1" in bad.stderr


# --- estimate --sweep: a preset's cost before it runs ----------------------------------------

TABLE = [
    {"device": "cpu", "env": "mountaincar", "bonus": "none", "seeds": 8, "env_steps_per_second": 240000.0,
     "compile_s": 6.0, "source": "t"},
    {"device": "cpu", "env": "mountaincar", "bonus": "rfig", "seeds": 8, "env_steps_per_second": 80000.0,
     "compile_s": 10.0, "source": "t"},
    {"device": "cpu", "env": "minatar_breakout", "bonus": "none", "seeds": 8, "env_steps_per_second": 100000.0,
     "compile_s": 7.0, "source": "t"},
    {"device": "cpu", "env": "minatar_breakout", "bonus": "none", "seeds": 1, "env_steps_per_second": 50000.0,
     "compile_s": 5.0, "source": "t"},
]


def test_table_rate_measured_scaled_extrapolated_and_guessed():
    exact = estimate_throughput.table_rate(TABLE, "cpu", "mountaincar", "rfig", 8)
    assert (exact.steps_per_second, exact.compile_s) == (80000.0, 10.0) and "extrapolated" not in exact.source
    # Another seed count: the nearest measured one, scaled as the device's measured seed scaling
    # (Breakout: 1 -> 8 seeds doubled the throughput, so S^(1/3)).
    assert estimate_throughput.seed_scaling(TABLE, "cpu") == pytest.approx(1 / 3)
    scaled = estimate_throughput.table_rate(TABLE, "cpu", "mountaincar", "rfig", 4)
    assert scaled.steps_per_second == pytest.approx(80000.0 * 0.5 ** (1 / 3)) and "seeds^0.33" in scaled.source
    assert estimate_throughput.seed_scaling(TABLE, "h100") == 1.0  # nothing measured there: per-seed speed held
    # A task (env + speed-relevant options) measured only with other options takes that row, said so.
    brax = TABLE + [{"device": "cpu", "env": "sparse_ant[backend=spring]", "bonus": "none", "seeds": 8,
                     "env_steps_per_second": 20000.0, "compile_s": 28.0, "source": "b"}]
    other = estimate_throughput.table_rate(brax, "cpu", "sparse_ant[backend=generalized]", "none", 8)
    assert other.steps_per_second == 20000.0 and "other env options" in other.source
    assert estimate_throughput.table_rate(brax, "cpu", "sparse_ant[backend=spring]", "none", 8).source == "cpu table: b"
    # Breakout has no RFIG row: its PPO speed times RFIG's slowdown on MountainCar (1/3).
    extra = estimate_throughput.table_rate(TABLE, "cpu", "minatar_breakout", "rfig", 8)
    assert extra.steps_per_second == pytest.approx(100000.0 / 3) and "extrapolated" in extra.source
    # An env never measured: the bonus's median per-seed speed over the measured envs of its family.
    guess = estimate_throughput.table_rate(TABLE, "cpu", "acrobot", "none", 8)
    assert guess.steps_per_second == pytest.approx(240000.0) and "guessed" in guess.source
    assert estimate_throughput.table_rate(TABLE, "cpu", "sparse_ant", "none", 8) is None  # no Brax env measured
    assert estimate_throughput.table_rate(TABLE, "h100", "mountaincar", "none", 8) is None
    # Another device: the env's speed there times the two devices' measured ratio.
    gpu = TABLE + [{"device": "h100", "env": "minatar_breakout", "bonus": "none", "seeds": 8,
                    "env_steps_per_second": 1000000.0, "compile_s": 15.0, "source": "g"}]
    cross = estimate_throughput.table_rate(gpu, "h100", "mountaincar", "none", 8)
    assert cross.steps_per_second == pytest.approx(240000.0 * 10) and "extrapolated from cpu" in cross.source


def test_wall_hours_spreads_the_longest_jobs_first():
    assert estimate_sweep.wall_hours([1.0, 2.0, 2.0, 3.0], 2) == 4.0
    assert estimate_sweep.wall_hours([1.0, 2.0, 2.0, 3.0], 1) == 8.0
    assert estimate_sweep.wall_hours([5.0, 1.0], 8) == 5.0


@pytest.mark.extended
def test_estimate_of_a_sweep_preset_costs_every_job_and_prefers_runs_measured_here(tmp_path, capsys):
    import socket

    assert estimate.main(["--sweep", "repro", "--results", str(tmp_path / "none"), "--slots", "2"]) == 0
    short = capsys.readouterr().out
    assert "30 compiled jobs, 240 runs, up to 8 per job" in short and "| env=" not in short and "--jobs" in short
    # the totals come first, then one line per env with its jobs and hours
    assert short.index("Total: ") < short.index("| env | jobs |")
    envs = [line for line in short.splitlines() if line.startswith("| ") and not line.startswith(("| env ", "|---"))]
    assert [line.split(" | ")[1] for line in envs] == ["5"] * 6  # 6 envs x 5 bonuses
    assert estimate.main(["--sweep", "repro", "--results", str(tmp_path / "none"), "--slots", "2", "--jobs"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(short.rsplit("\n\n", 1)[0]) and out.count("| env=") == 30
    table = estimate_throughput.read_throughput_table()
    want = estimate_throughput.table_rate(table, "cpu", "minatar_breakout", "rfig", 8)
    assert f"env=minatar_breakout bonus=rfig | 8 | 1,007,616 | {want.steps_per_second:,.0f} |" in out
    total = float(out.split("Total: ")[1].split(" job-hours")[0])
    wall = float(out.split("slot(s): ")[1].split(" h")[0])
    assert total / 2 <= wall < total
    # A complete run of this host replaces the table's number for that env x bonus.
    measured(tmp_path / "r" / "exp", "mountaincar", "rfig", list(range(8)), 12345.0, 3.0, host=socket.gethostname())
    assert estimate.main(["--sweep", "repro", "--results", str(tmp_path / "r"), "--jobs"]) == 0
    out = capsys.readouterr().out
    assert "env=mountaincar bonus=rfig | 8 | 1,007,616 | 12,345 | 3 |" in out and "measured here" in out
    (line,) = [line for line in out.splitlines() if line.startswith("| mountaincar | 5 | 40 |")]
    assert line.endswith("| 4 measured, 1 measured here |")


def test_estimate_of_ones_own_command_line_costs_its_jobs(tmp_path, capsys):
    """``-- env=... bonus=a,b 'seed=range(16)'``: the jobs launch.py -m would run, without a preset."""
    line = ["env=mountaincar", "bonus=rfig,rnd", "seed=range(16)"]
    assert estimate.main(["--results", str(tmp_path / "none"), "--jobs", "--", *line]) == 0
    out = capsys.readouterr().out
    assert "# Cost of `python launch.py -m env=mountaincar bonus=rfig,rnd 'seed=range(16)'` on cpu (4 compiled jobs, " \
           "32 runs, up to 8 per job" in out
    assert out.count("| env=mountaincar bonus=rfig seed=") == 2 and "compile, cold (s)" in out
    assert estimate.main(["--results", str(tmp_path), "--", "env=nosuch"]) == 2
    assert "nosuch" in capsys.readouterr().err
    # a launch line pasted whole costs the same jobs; a flag launch.py does not take is named
    assert estimate.main(["--results", str(tmp_path / "none"), "--", "python", "launch.py", "-m", *line]) == 0
    assert "4 compiled jobs, 32 runs" in capsys.readouterr().out
    assert estimate.main(["--results", str(tmp_path / "none"), "--", "-m", "--cfg", "job", *line]) == 2
    assert "LINE: '--cfg' is not a launch.py override" in capsys.readouterr().err


def test_measured_rates_cost_a_cold_compile_not_a_cache_hit(tmp_path):
    """Relaunched processes of one program load it from the persistent cache: the rate's compile is
    the slowest measured (a cold compile), not their median."""
    res = tmp_path / "results"
    for i, compile_s in enumerate([40.0, 2.0, 3.0]):
        measured(res / f"e{i}", "acrobot", "none", [0], sps=10_000.0, compile_s=compile_s)
    processes, _ = estimate_throughput.collect_processes(res)
    assert estimate_throughput.measured_rate(processes, "vm", "acrobot", "none", 1).compile_s == 40.0


def test_estimate_of_a_sweep_says_what_is_wrong(tmp_path, capsys):
    assert estimate.main(["--sweep", "nosuch", "--results", str(tmp_path)]) == 2
    assert "sweep=nosuch" in capsys.readouterr().err
    assert estimate.main(["--sweep", "repro", "--device", "tpu", "--results", str(tmp_path)]) == 2
    assert "valid: cpu, h100" in capsys.readouterr().err
    assert estimate.main(["--sweep", "repro", "--slots", "0", "--results", str(tmp_path)]) == 2


def test_recorded_rows_join_the_table_and_a_newer_measurement_wins(tmp_path, monkeypatch, capsys):
    table = tmp_path / "throughput.csv"
    table.write_text("# measured\ndevice,env,bonus,seeds,env_steps_per_second,compile_s,source\n"
                     "cpu,mountaincar,rfig,8,80000,10,bench\n")
    measured(tmp_path / "r" / "exp", "mountaincar", "rfig", list(range(8)), 40000.0, 30.0)
    measured(tmp_path / "r" / "exp", "mountaincar", "none", list(range(8)), 1000.0, 3.0, variant="agent.lr=0.1",
             variant_yaml="agent.lr: 0.1\n")  # another hyperparameter: not a speed measurement
    added = estimate_throughput.record_rows(tmp_path / "r", ["exp"], "cpu", "repro", path=table)
    assert [(r["env"], r["bonus"], r["env_steps_per_second"]) for r in added] == [("mountaincar", "rfig", 40000)]
    rows = estimate_throughput.read_throughput_table(table)
    assert table.read_text().startswith("# measured\n") and len(rows) == 2
    assert estimate_throughput.table_rate(rows, "cpu", "mountaincar", "rfig", 8).steps_per_second == 40000.0
    estimate_throughput.record_rows(tmp_path / "r", ["exp"], "cpu", "repro", path=table)  # again: replaced, not doubled
    assert len(estimate_throughput.read_throughput_table(table)) == 2


def test_the_estimate_counts_compiled_jobs_and_their_members(capsys):
    """Three values of bonus.beta x 2 of agent.lr x 8 seeds: 6 jobs of 8 seeds, one compiled job of 48
    runs on a CPU (launch/stacking.py), costed at 48 runs' speed."""
    plan = estimate_sweep.launch_plan("smoke", ["env=mountaincar", "bonus=rfig", "bonus.beta=0.25,0.5,1",
                                                "agent.lr=1e-4,3e-4", "seed=range(8)", "num_seeds=1"])
    jobs = estimate_sweep.sweep_jobs(plan)
    assert len(jobs) == 6 and {c["num_seeds"] for _, c in jobs} == {8}
    (compiled,) = estimate_sweep.stack_jobs(plan)
    assert compiled[1]["num_seeds"] == 48 and compiled[0][-1] == "(+5 settings stacked)"
    cost = estimate_sweep.cost_jobs([compiled], [], "", TABLE, "cpu")[0]
    assert cost.seeds == 48 and cost.rate.seeds == 48 or "seeds^" in cost.rate.source
    assert len(estimate_sweep.stack_jobs(estimate_sweep.launch_plan("smoke", ["env=mountaincar", "bonus=rfig,none",
                                                                              "seed=range(8)", "num_seeds=1"]))) == 2


def test_a_job_whose_program_compiled_before_pays_a_tenth_of_the_compile():
    from conftest import compose_config
    from omegaconf import OmegaConf

    def job(*overrides):
        cfg = compose_config("env=mountaincar", "bonus=rfig", "num_seeds=8", "eval_frequency=24576",
                             "agent.total_timesteps=24576", *overrides)
        return (overrides, OmegaConf.to_container(cfg, resolve=False))

    jobs = [job("bonus.reg=1.0"), job("bonus.reg=10.0"), job("bonus.reg=10.0", "seed=8"),
            job("agent.hidden=[32,32]"), job("num_seeds=4")]
    first, second, later_seeds, wider, fewer = estimate_sweep.cost_jobs(jobs, [], "", TABLE, "cpu")
    train = 8 * 24576 / 80000.0
    assert first.hours * 3600 == pytest.approx(10.0 + train)
    assert second.hours * 3600 == pytest.approx(1.0 + train)  # bonus.reg is an argument, not a shape
    assert later_seeds.hours * 3600 == pytest.approx(1.0 + train)  # other seeds, the same program
    assert wider.hours * 3600 == pytest.approx(10.0 + train)  # a static setting: another program
    # fewer vmapped seeds: another program, its compile paid in full
    assert fewer.hours * 3600 == pytest.approx(fewer.rate.compile_s + 4 * 24576 / fewer.rate.steps_per_second)


@pytest.mark.slow
def test_calibration_measures_only_the_pairs_the_table_lacks(tmp_path, capsys):
    """A real cold run of each missing env x bonus x seeds (here the smoke preset's cartpole
    with one bonus, one window), recorded in a copy of the table; a second call finds nothing to do."""
    table = tmp_path / "throughput.csv"
    table.write_text("# measured\ndevice,env,bonus,seeds,env_steps_per_second,compile_s,source\n"
                     "cpu,cartpole,rnd,2,50000,10,bench\n")
    jobs = estimate_sweep.sweep_jobs(estimate_sweep.launch_plan(
        "smoke", ["bonus=none,rnd", "agent.num_envs=4", "agent.num_steps=16", "agent.num_minibatches=2",
                  "agent.update_epochs=1", "eval_frequency=128", "agent.obs_norm_init_steps=8"]))
    rows = estimate_throughput.read_throughput_table(table)
    assert [(c["env"]["name"], c["bonus"]["name"]) for _, c in estimate_sweep.missing_pairs(jobs, rows, "cpu")] == [
        ("cartpole", "none")]
    added = estimate_sweep.calibrate(jobs, rows, "cpu", windows=2, path=table)
    assert [(r["env"], r["bonus"], r["seeds"]) for r in added] == [("cartpole", "none", 2)]
    assert added[0]["env_steps_per_second"] > 0 and added[0]["compile_s"] > 0
    assert "cold compile" in added[0]["source"]
    rows = estimate_throughput.read_throughput_table(table)
    assert len(rows) == 2 and estimate_sweep.missing_pairs(jobs, rows, "cpu") == []
    assert estimate_sweep.calibrate(jobs, rows, "cpu", windows=2, path=table) == []
    assert "has a cpu row already" in capsys.readouterr().out


def test_the_paper_grid_and_window_come_from_the_sweep_preset_and_config():
    paper = estimate_sweep.sweep_grid()
    assert paper.envs[:2] == ("acrobot", "mountaincar") and len(paper.envs) == 12
    assert paper.bonuses == ("none", "rfig", "rnd", "vime", "hashexplo")
    assert (paper.seeds, paper.steps, paper.eval_frequency) == (32, 1_000_000, 24_576)  # 4 jobs x 8 seeds
    assert estimate_sweep.sweep_grid("paper32").seeds == 32                                  # 1 job x 32 seeds
    assert estimate_sweep.sweep_grid("smoke").eval_frequency == 8192                         # the preset's own window


def test_a_sweep_grid_reads_seed_ranges_budgets_and_windows(tmp_path):
    import shutil

    conf = tmp_path / "conf"
    shutil.copytree(ROOT / "conf", conf)
    (conf / "sweep" / "mine.yaml").write_text(
        "# @package _global_\nnum_seeds: 2\neval_frequency: 1000\nagent:\n  total_timesteps: 5000\n"
        "hydra:\n  sweeper:\n    params:\n      env: acrobot,deepsea\n      bonus: rnd\n      seed: range(0,10,2)\n")
    want_grid = estimate_sweep.Grid(("acrobot", "deepsea"), ("rnd",), 10, 5000, 1000)
    assert estimate_sweep.sweep_grid("mine", conf) == want_grid
    (conf / "config.yaml").write_text((conf / "config.yaml").read_text().replace("eval_frequency: 24576",
                                                                                "eval_frequency: 4096"))
    assert estimate_sweep.default_eval_frequency(conf) == 4096
