"""Stacked sweep jobs: runs that differ in seed and traced settings, trained as one compiled job.

Each member must be the run it would be alone: the same folder, variant, config, summary fields and
(to float32 rounding, as a vmapped seed against the seed alone) the same metrics; a member complete on
disk is skipped and the others train; resume is per member.
"""

from __future__ import annotations

import csv
import json
import logging
import signal

import pytest
from conftest import assert_same_to_float32_rounding

from rfig_exp.config.errors import Interrupted, RunFailed
from rfig_exp.run.experiment import run_experiment, run_job
from rfig_exp.spec.run_spec import build_run_spec
from rfig_exp.spec.stack import Job, JobPart, program_key


def read_metrics(path):
    with open(path / "metrics.csv") as f:
        return [{k: v for k, v in row.items() if k != "wall_time_s"} for row in csv.DictReader(f)]


def _job(tiny_config, common, values, results, seeds="num_seeds=2"):
    parts = []
    for value in values:
        overrides = (*common, value, seeds, f"results_dir={results}")
        parts.append(JobPart(build_run_spec(tiny_config(*overrides)), tuple(overrides)))
    return Job(tuple(parts))


def _alone(tiny_config, common, values, results, seeds="num_seeds=2"):
    for value in values:
        overrides = (*common, value, seeds, f"results_dir={results}")
        run_experiment(tiny_config(*overrides), command_line=overrides)


def _runs(results):
    return sorted(p.relative_to(results) for p in results.glob("*/*/*/*/seed_*"))


@pytest.mark.extended
@pytest.mark.parametrize("common, values", [
    (("env=cartpole", "bonus=none"), ("agent.lr=0.0001", "agent.lr=0.001")),          # the agent's traced setting
    (("env=mountaincar", "bonus=rnd", "bonus.hidden=[16,16]", "bonus.embedding_dim=8"),
     ("bonus.lr=0.0001", "bonus.lr=0.01")),                                           # a bonus's traced setting
], ids=["agent.lr", "bonus.lr"])
def test_each_member_of_a_stacked_job_is_the_run_it_would_be_alone(tiny_config, tmp_path, common, values):
    job = _job(tiny_config, common, values, tmp_path / "stacked")
    assert job.members == 4 and job.stacked
    summaries = run_job(job)
    assert len(summaries) == 4 and {s.num_seeds_in_process for s in summaries} == {4}
    _alone(tiny_config, common, values, tmp_path / "alone")
    assert _runs(tmp_path / "stacked") == _runs(tmp_path / "alone") and len(_runs(tmp_path / "alone")) == 4
    for run in _runs(tmp_path / "alone"):
        stacked, alone = tmp_path / "stacked" / run, tmp_path / "alone" / run
        here, there = str(tmp_path / "stacked"), str(tmp_path / "alone")  # each in its own results_dir
        assert (stacked / "config.yaml").read_text().replace(here, there) == (alone / "config.yaml").read_text()
        assert (stacked.parent / "variant.yaml").read_text() == (alone.parent / "variant.yaml").read_text()
        a, b = (json.loads((d / "summary.json").read_text()) for d in (stacked, alone))
        for key in ("status", "variant", "variant_overrides", "seed", "env_steps", "num_windows"):
            assert a[key] == b[key], key
        assert [o.replace(here, there) for o in a["overrides"]] == b["overrides"]  # its own job's command line
        assert_same_to_float32_rounding(read_metrics(stacked), read_metrics(alone))
    lrs = {run.parent.name: read_metrics(tmp_path / "stacked" / run)[-1]["policy_loss"]
           for run in _runs(tmp_path / "stacked") if run.name == "seed_0"}
    assert len(set(lrs.values())) == 2, "the two settings trained differently"


def test_a_complete_member_is_skipped_and_the_others_train(tiny_config, tmp_path):
    common, values = ("env=cartpole", "bonus=none"), ("agent.lr=0.0001", "agent.lr=0.001")
    run_experiment(tiny_config(*common, values[0], "num_seeds=2", f"results_dir={tmp_path}"))
    done = {p: (p / "summary.json").read_text() for p in (tmp_path / r for r in _runs(tmp_path))}
    summaries = run_job(_job(tiny_config, common, values, tmp_path))
    assert sorted((s.variant.split(",")[0], s.seed) for s in summaries) == [("agent.lr=0.001", 0),
                                                                             ("agent.lr=0.001", 1)]
    assert {p: (p / "summary.json").read_text() for p in done} == done, "a complete run is left as it was"
    assert run_job(_job(tiny_config, common, values, tmp_path)) == []


def test_program_key_splits_on_static_settings_only(tiny_config, tmp_path):
    def key(*overrides):
        return program_key(build_run_spec(tiny_config("env=cartpole", "bonus=rnd", f"results_dir={tmp_path}",
                                                      *overrides)))

    assert key("agent.lr=1e-3", "bonus.beta=1", "bonus.lr=1e-3", "seed=3") == key()
    assert key("agent.num_envs=8") != key()
    assert key("bonus.hidden=[8,8]") != key()
    assert key("env=acrobot") != key()
    with pytest.raises(ValueError, match="one compiled program"):
        Job((JobPart(build_run_spec(tiny_config("env=cartpole", f"results_dir={tmp_path}"))),
             JobPart(build_run_spec(tiny_config("env=acrobot", f"results_dir={tmp_path}")))))


@pytest.mark.extended
def test_members_that_do_not_fit_in_memory_train_in_equal_turns(tiny_config, tmp_path, monkeypatch, caplog):
    from rfig_exp.run import memory

    caplog.set_level(logging.INFO, logger="rfig_exp")
    monkeypatch.setattr(memory, "budget", lambda device=None: 1)  # room for one member at a time
    common, values = ("env=cartpole", "bonus=none"), ("agent.lr=0.0001", "agent.lr=0.001", "agent.lr=0.01")
    summaries = run_job(_job(tiny_config, common, values, tmp_path / "turns", seeds="num_seeds=1"))
    assert len(summaries) == 3 and {s.num_seeds_in_process for s in summaries} == {1}
    assert "3 turns of up to 1" in caplog.text
    _alone(tiny_config, common, values, tmp_path / "alone", seeds="num_seeds=1")
    for run in _runs(tmp_path / "alone"):
        assert read_metrics(tmp_path / "turns" / run) == read_metrics(tmp_path / "alone" / run)  # one run: same program


def test_a_diverging_member_fails_alone_and_the_others_complete(tiny_config, tmp_path):
    common, values = ("env=cartpole", "bonus=none", "agent.max_grad_norm=1e30"), ("agent.lr=1e30", "agent.lr=0.0003")
    with pytest.raises(RunFailed, match="diverged"):
        run_job(_job(tiny_config, common, values, tmp_path, seeds="num_seeds=1"))
    status = {run.parent.name.split(",")[0]: json.loads((tmp_path / run / "summary.json").read_text())["status"]
              for run in _runs(tmp_path)}
    assert status == {"agent.lr=1e+30": "failed", "agent.max_grad_norm=1e+30": "complete"}  # lr 3e-4: the default


class _StopAfterFirstWindow:
    """The stop signals of a job that got SIGTERM before its first window: it checkpoints that
    window and stops (rfig_exp.run.observers.StopSignals, as the run loop reads it)."""

    received = signal.SIGTERM

    def hand_over(self, tag, window, stopping):
        pass


@pytest.mark.extended
def test_a_sweep_extended_by_a_setting_resumes_the_others_from_their_checkpoints(tiny_config, tmp_path, caplog):
    """A stacked job stopped after window 1, relaunched with one setting more: the two old members
    resume from their own checkpoints, the new one starts, in turns; each is the run it is alone."""
    caplog.set_level(logging.INFO, logger="rfig_exp")
    common = ("env=cartpole", "bonus=none", "agent.total_timesteps=512")
    old, new = ("agent.lr=0.0001", "agent.lr=0.001"), ("agent.lr=0.01",)
    with pytest.raises(Interrupted):
        run_job(_job(tiny_config, common, old, tmp_path / "stacked", seeds="num_seeds=1"),
                signals=_StopAfterFirstWindow())
    summaries = run_job(_job(tiny_config, common, old + new, tmp_path / "stacked", seeds="num_seeds=1"))
    assert len(summaries) == 3 and "resume from different windows (1 from 0, 2 from 1)" in caplog.text
    assert sorted(s.resumed_from_windows for s in summaries) == [(), (1,), (1,)]
    _alone(tiny_config, common, old + new, tmp_path / "alone", seeds="num_seeds=1")
    for run in _runs(tmp_path / "alone"):
        stacked, alone = (read_metrics(tmp_path / d / run) for d in ("stacked", "alone"))
        assert_same_to_float32_rounding(stacked, alone)
