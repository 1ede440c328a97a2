"""A committed block rerun here (campaign/scripts/rerun_block.py, campaign.repro.reproducible): the command
it reruns, the comparison on synthetic rows with known answers, and a tiny real block launched
twice, which must come back bit-identical."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from campaign.presets import SEARCHPATH
from campaign.repro.data import StoredRun, export_tree
from campaign.repro.reproducible import (
    EVIDENCE,
    block_command,
    compare_block,
    final_score,
    machine_kind,
    parse_seeds,
    reproducibility_md,
)

REPO = Path(__file__).resolve().parents[1]


def _rows(returns, episodes=None, extra: dict | None = None) -> str:
    """A canonical metrics CSV (as campaign.repro.data stores it) of one run."""
    episodes = [4] * len(returns) if episodes is None else episodes
    cols = {"env_steps": [1000 * (i + 1) for i in range(len(returns))], "episode_return": returns,
            "episodes_finished": episodes, "wall_time_s": [0.5 * i for i in range(len(returns))], **(extra or {})}
    lines = [",".join(cols)] + [",".join("" if isinstance(v, float) and np.isnan(v) else str(v)
                                         for v in (c[i] for c in cols.values())) for i in range(len(returns))]
    return "\n".join(lines) + "\n"


def test_parse_seeds():
    assert parse_seeds("8-15") == list(range(8, 16))
    assert parse_seeds("0,1,2") == [0, 1, 2] and parse_seeds("3") == [3]
    with pytest.raises(ValueError):
        parse_seeds("15-8")


def test_block_command_is_the_stage_s_own_for_its_whole_block():
    stage, args = block_command("paper32", "pointmaze_medium", "rfig", list(range(8, 16)))
    assert stage == "p32-pointmaze_medium-8"
    assert args == [SEARCHPATH, "sweep=paper32", "seed=8", "num_seeds=8", "env=pointmaze_medium", "bonus=rfig"]
    # the 32-seed grid's seeds 0-7 are the reproduction's runs: its command
    assert block_command("paper32", "acrobot", "none", list(range(8)))[1] == [
        SEARCHPATH, "sweep=repro", "env=acrobot", "bonus=none", "seed=0", "num_seeds=8"]
    # VIME and the control came from the baselines campaign, seeds 0-31 in blocks of 8
    assert block_command("paper32", "acrobot", "vime", list(range(16, 24)))[0] == "bl-acrobot-16"
    with pytest.raises(ValueError, match="whole block"):
        block_command("paper32", "acrobot", "none", [8, 9, 10, 11])


def test_final_score_carries_the_last_finished_window():
    assert final_score(_rows([1.0, 2.0, 3.0])) == 3.0
    assert final_score(_rows([1.0, 2.0, float("nan")], episodes=[4, 4, 0])) == 2.0
    assert np.isnan(final_score(_rows([float("nan")] * 2, episodes=[0, 0])))


def test_identical_blocks_whatever_the_wall_time():
    a = {s: _rows([s, s + 1.5, s + 2.25]) for s in range(8, 12)}
    b = {s: r.replace(",0.5\n", ",9.5\n") for s, r in a.items()}  # another wall time in window 2
    assert b != a
    res = compare_block(a, b)
    assert res.identical and res.windows == 3
    assert res.columns == ["env_steps", "episode_return", "episodes_finished"]
    assert res.verdict().startswith("BIT-IDENTICAL: 4 seeds x 3 windows")
    assert res.mann_whitney() == (8.0, 1.0)


def test_different_blocks_name_the_first_window_and_test_the_final_scores():
    committed = {s: _rows([0.0, 1.0, float(s)], episodes=[17, 4, 4]) for s in range(8, 16)}
    rerun = {s: _rows([0.0, 1.0, float(s + 100)], episodes=[19 if s == 8 else 17, 4, 4]) for s in range(8, 16)}
    res = compare_block(committed, rerun)
    assert not res.identical and [d.seed for d in res.differences] == list(range(8, 16))
    first = res.differences[0]
    assert (first.seed, first.window, first.column, first.committed, first.rerun) == (8, 1, "episodes_finished",
                                                                                     "17", "19")
    assert (res.differences[1].window, res.differences[1].column) == (3, "episode_return")
    u, p = res.mann_whitney()
    # every rerun score above every committed one: U = 0, exact two-sided p = 2 / C(16, 8)
    assert u == 0.0 and p == pytest.approx(2 / 12870)
    assert p == pytest.approx(scipy.stats.mannwhitneyu(np.arange(8, 16), np.arange(108, 116)).pvalue)
    assert "first at seed 8, window 1 (env_steps 1000): episodes_finished 17 (committed) vs 19 (rerun)" \
        in res.verdict()


def test_columns_only_one_side_records_are_left_out_and_missing_seeds_named():
    old = {0: _rows([1.0, 2.0]), 1: _rows([1.0, 2.0])}
    new = {0: _rows([1.0, 2.0], extra={"signal/cv": [0.5, 0.6]})}
    res = compare_block(old, new)
    assert res.differences == [] and res.missing == [1] and not res.identical
    shorter = compare_block({0: _rows([1.0, 2.0])}, {0: _rows([1.0])})
    assert shorter.differences[0].column is None and shorter.differences[0].window == 2


def test_machine_kind_tells_apart_what_the_old_record_did_not():
    old = {"backend": "cpu", "cores": 2, "cpu": "AMD EPYC", "device_kind": "cpu"}
    new = {**old, "cpu_id": {"vendor": "AuthenticAMD", "family": "26", "model": "2", "stepping": "1"},
           "isa": {"sha256_16": "25fc08b1fed3d885"}, "jax_build": {"jaxlib": "0.10.2"},
           "numerics_env": {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false"}}
    other = {**new, "cpu_id": {**new["cpu_id"], "family": "25", "model": "17"}}
    assert machine_kind(old) == "AMD EPYC, 2 cores (identity not recorded)"
    assert machine_kind(new) != machine_kind(other)
    assert "family 26 model 2 stepping 1" in machine_kind(new) and "ISA 25fc08b1fed3d885" in machine_kind(new)
    assert machine_kind({"backend": "gpu", "device_kind": "NVIDIA H200"}) == "NVIDIA H200 (gpu)"
    assert machine_kind(None) == "machine not recorded"


def test_origin_text_tells_apart_what_the_old_one_did_not():
    from campaign.repro.data import describe_machine

    old = {"backend": "cpu", "cores": 2, "cpu": "AMD EPYC", "memory_gib": 23.5}
    assert describe_machine(old) == "2 CPU cores (AMD EPYC), 24 GiB, no GPU"  # as the committed runs say
    new = {**old, "cpu_id": {"family": "26", "model": "2", "stepping": "1"}, "isa": {"sha256_16": "25fc08b1fed3d885"}}
    assert describe_machine(new) == "2 CPU cores (AMD EPYC; family 26 model 2 stepping 1, ISA 25fc08b1fed3d885), " \
                                    "24 GiB, no GPU"
    from analysis.devices import device_from_origin

    assert device_from_origin(describe_machine(new)) == "CPU"


def test_reproducibility_statement_names_the_evidence_and_the_kinds():
    runs = {("p", "e", "none", "base", s): StoredRun({"summary": {"machine": {"cpu": "AMD EPYC", "cores": 2}}}, "")
            for s in range(3)}
    md = reproducibility_md(runs)
    assert "bit-identical" in md and "statistically" in md
    assert "Mann-Whitney p = 1.0 for PPO, 0.72 for RFIG" in md and len(EVIDENCE) >= 1
    assert "| AMD EPYC, 2 cores (identity not recorded) | 3 |" in md


def test_the_signal_audit_s_reruns_against_the_grid_name_identical_parted_and_the_machines():
    """Four audit blocks with known answers: identical on one recorded kind (the grid's runs lack the
    signal column, which is left out), parted between a GPU and a CPU, parted where neither side
    records the CPU's identity, and parted on one recorded kind, which the sentence must flag."""
    from campaign.repro.reproducible import audit_reruns, audit_reruns_md

    old = {"backend": "cpu", "cores": 2, "cpu": "AMD EPYC"}
    new = {**old, "cpu_id": {"family": "26", "model": "2", "stepping": "1"}, "isa": {"sha256_16": "25fc08b1fed3d885"}}
    gpu = {"backend": "gpu", "device_kind": "NVIDIA H200"}

    def run(exp, env, bonus, seed, returns, machine, extra=None, status="complete"):
        record = {"experiment": exp, "env": env, "bonus": bonus, "variant": "base", "seed": seed,
                  "summary": {"status": status, "machine": machine}}
        return (exp, env, bonus, "base", seed), StoredRun(record, _rows(returns, extra=extra))

    signal = {"signal/cv": [0.5, 0.6, 0.7]}
    stored = dict([
        *(run("paper32", "acrobot", "rnd", s, [1.0, 2.0, 3.0], new) for s in range(2)),
        *(run("signal", "acrobot", "rnd", s, [1.0, 2.0, 3.0], new, signal) for s in range(2)),
        *(run("paper32", "minatar_freeway", "rnd", s, [1.0, 2.0, 3.0], old) for s in range(2)),
        *(run("signal", "minatar_freeway", "rnd", s, [1.0, 2.5, 3.0], gpu, signal) for s in range(2)),
        *(run("paper32", "minatar_asterix", "rfig", s, [1.0, 2.0, 3.0], old) for s in range(2)),
        *(run("signal", "minatar_asterix", "rfig", s, [1.0, 2.0, 3.5 + s], old) for s in range(2)),
        *(run("paper32", "mountaincar", "rfig", s, [1.0, 2.0, 3.0], new) for s in range(2)),
        *(run("signal", "mountaincar", "rfig", s, [1.5, 2.0, 3.0], new) for s in range(2)),
        run("signal", "pointmaze_umaze", "rnd", 0, [1.0], new),   # no grid runs of it: not compared
        # a second block of seeds (8-9) of the same cell: a block of its own
        *(run("paper32", "acrobot", "rnd", s, [1.0, 2.0, 3.0], new) for s in (8, 9)),
        *(run("signal", "acrobot", "rnd", s, [1.0, 2.0, 3.0], new, signal) for s in (8, 9)),
        run("paper32", "acrobot", "none", 0, [1.0], new),
        run("signal", "acrobot", "none", 0, [9.0], new, status="failed"),   # incomplete: not compared
    ])
    reruns = audit_reruns(stored)
    later = [r for r in reruns if r.comparison.seeds == [8, 9]]
    assert len(later) == 1 and later[0].comparison.identical and (later[0].env, later[0].bonus) == ("acrobot", "rnd")
    by = {(r.env, r.bonus): r for r in reruns if r not in later}
    assert set(by) == {("acrobot", "rnd"), ("minatar_freeway", "rnd"), ("minatar_asterix", "rfig"),
                       ("mountaincar", "rfig")} and by[("acrobot", "rnd")].comparison.seeds == [0, 1]
    assert "in 2 of 5 blocks" in audit_reruns_md(reruns)[0] and "| Acrobot | RND | 8-9 |" in audit_reruns_md(reruns)[1]
    assert by[("acrobot", "rnd")].comparison.identical and by[("acrobot", "rnd")].machines == "same kind"
    assert "signal/cv" not in by[("acrobot", "rnd")].comparison.columns
    freeway = by[("minatar_freeway", "rnd")]
    assert not freeway.comparison.identical and freeway.machines == "different kinds"
    assert min(d.window for d in freeway.comparison.differences) == 2
    assert by[("minatar_asterix", "rfig")].machines == "not told apart"
    # older records that name two CPU models, an Intel against an AMD, do tell the machines apart
    intel = {**old, "cpu": "Intel(R) Xeon(R) Processor"}
    pair = [*(run("paper32", "minatar_breakout", "rnd", s, [1.0, 2.0, 3.0], intel) for s in range(2)),
            *(run("signal", "minatar_breakout", "rnd", s, [1.0, 2.0, 3.5], old) for s in range(2))]
    vendors = audit_reruns(dict(pair))
    assert [r.machines for r in vendors] == ["different kinds"]
    unrecorded = [*(run("paper32", "minatar_breakout", "rnd", s, [1.0, 2.0, 3.0], None) for s in range(2)),
                  *(run("signal", "minatar_breakout", "rnd", s, [1.0, 2.0, 3.5], old) for s in range(2))]
    assert [r.machines for r in audit_reruns(dict(unrecorded))] == ["not told apart"]
    assert by[("mountaincar", "rfig")].machines == "same kind" and not by[("mountaincar", "rfig")].comparison.identical
    sentence, table = audit_reruns_md(list(by.values()))
    assert "**bit-identical** (every metrics column both record, to the stored digit) in 1 of 4 blocks" in sentence
    assert "Of the 3 that part, 1 came from machine kinds their records tell apart" in sentence
    assert "1 from machines whose records cannot tell" in sentence
    assert "**1 part on one recorded machine kind**" in sentence
    assert ("| Freeway | RND | 0-1 | AMD EPYC, 2 cores (identity not recorded) | NVIDIA H200 (gpu) | different kinds "
            "| part from window 2 (episode_return), 2 of 2 seeds") in table
    assert audit_reruns_md([]) == ("", "")
    # without the parted block on one kind, the sentence says none parts there
    assert "none parts where both sides record the same machine kind" in audit_reruns_md(
        [r for r in by.values() if r.env != "mountaincar"])[0]


TINY = ["agent.num_envs=8", "agent.num_steps=64", "agent.num_minibatches=4", "eval_frequency=2048"]


@pytest.mark.extended
@pytest.mark.timeout(900)
def test_a_tiny_block_launched_twice_is_bit_identical(tmp_path):
    block = ["env=cartpole", "bonus=none", "seed=0", "num_seeds=2", "experiment=tiny"]
    first = tmp_path / "first"
    cmd = [sys.executable, "launch.py", "-m", *block, "agent.total_timesteps=8192", *TINY, f"results_dir={first}",
           "wandb.mode=disabled", "stall_timeout_s=300"]
    made = subprocess.run(cmd, cwd=REPO, env=dict(os.environ, WANDB_MODE="disabled"), capture_output=True,
                          text=True, timeout=480)
    assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    data = tmp_path / "data"
    assert export_tree(first, data)["runs"] == 2  # the committed-like data folder
    script = [sys.executable, "campaign/scripts/rerun_block.py", "--env", "cartpole", "--bonus", "none",
              "--seeds", "0-1",
              "--experiment", "tiny", "--data", str(data), "--command", " ".join(block), "--total-timesteps", "8192",
              *(f"--set={s}" for s in TINY)]
    again = subprocess.run(script, cwd=REPO, capture_output=True, text=True, timeout=480)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert "BIT-IDENTICAL: 2 seeds x 4 windows" in again.stdout
