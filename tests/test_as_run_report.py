"""The as-run report (campaign.repro.as_run_report): each run's method derived from what made it, the
claims judged on the panels present with the missing ones named, and the both-ways table."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from campaign.claims import verdicts as V
from campaign.claims.claim_rows import Claim
from campaign.claims.sensitivity_claims import SENSITIVITY_CLAIMS
from campaign.repro.as_run_methods import OWN_LABEL, declared, method_of, sort_runs
from campaign.repro.as_run_report import AS_WRITTEN, build_as_run
from campaign.repro.as_run_tables import NOT_YET, annotated, both_ways
from campaign.repro.as_run_view import report_runs
from campaign.repro.data import read_data, write_data
from campaign.repro.stage_parts import AS_RUN

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs/results/paper32_as_run/data"
ENV = "mountaincar"


@pytest.fixture(scope="module")
def stored():
    runs = {k: r for k, r in read_data(DATA).items() if k[1] == ENV}
    if not runs:
        pytest.skip("no as-run MountainCar runs in the committed data")
    return runs


def _with(run, **record):
    return replace(run, record={**run.record, **record})


def test_our_vime_is_told_from_theirs_by_its_overrides_not_its_folder(stored):
    assigned, refused = sort_runs(stored)
    assert not refused and len(assigned) == len(stored)
    vime = {d.key: {k[3] for k in assigned if assigned[k].key == d.key} for d in assigned.values() if d.bonus == "vime"}
    assert set(vime) == {"vime", "vime/own_settings"}
    ppo = {k[3] for k, d in assigned.items() if d.key == "none"}
    assert vime["vime/own_settings"] == ppo  # our VIME shares PPO's folder: only its overrides tell it apart
    assert vime["vime"] != ppo
    ours = next(d for d in declared(ENV) if d.own)
    assert ours.label == OWN_LABEL.format("VIME") and "," not in ours.label
    assert "bonus.bonus_per=transition" in ours.command
    theirs = next(d for d in declared(ENV) if d.bonus == "vime" and not d.own)
    assert theirs.overrides_dict["bonus.bonus_per"] == "batch"
    assert method_of(ENV, "vime", theirs.overrides_dict) == theirs
    assert method_of(ENV, "vime", ours.overrides_dict) == ours


def test_a_run_of_neither_method_is_listed_and_left_out(stored):
    key, run = next((k, r) for k, r in sorted(stored.items()) if k[2] == "vime")
    odd = {**run.record["variant_overrides"], "bonus.lr": 0.5}
    paper = {}  # a run of the paper's protocol filed in this experiment
    extra = {(AS_RUN, ENV, "vime", "odd", 0): _with(run, variant="odd", variant_overrides=odd),
             (AS_RUN, ENV, "rfig", "base", 0): _with(run, bonus="rfig", variant="base", variant_overrides=paper),
             (AS_RUN, "deepsea", "none", "base", 0): _with(run, env="deepsea", bonus="none", variant="base")}
    assigned, refused = sort_runs({**stored, **extra})
    assert set(assigned) == set(stored)
    why = dict(refused)
    assert set(why) == set(extra)
    assert "bonus.lr" in why[(AS_RUN, ENV, "vime", "odd", 0)]
    assert "match no command" in why[(AS_RUN, ENV, "rfig", "base", 0)]
    assert "not a panel" in why[(AS_RUN, "deepsea", "none", "base", 0)]


def test_the_report_scores_the_evaluation_episodes_and_files_each_method_apart(stored):
    assigned, _ = sort_runs(stored)
    runs, left = report_runs(stored, assigned, "eval")
    assert not left and len(runs) == len(stored)
    assert {k[3] for k in runs} == {"base", "own_settings"}
    key = next(k for k in runs if k[2] == "rfig")
    rows = runs[key].rows.splitlines()
    head = rows[0].split(",")
    last = dict(zip(head, rows[-1].split(",")))
    assert last["episode_return"] == last["eval/episode_return"] and last["episodes_finished"] == "128"
    assert "num_envs" not in runs[key].record["summary"]  # whole episodes: no window censored
    train, _ = report_runs(stored, assigned, "train")
    assert train[key].rows == stored[next(k for k in stored if k[2] == "rfig" and k[4] == key[4])].rows


def _claim(words: str) -> Claim:
    return Claim(words, "measured", "0.6 [0.5, 0.7]", "supported", kind=V.SUPPORTED)


def test_a_claim_whose_panels_are_missing_says_not_yet_run_with_their_names():
    present = ["mountaincar", "pointmaze_umaze"]
    seeds = {"mountaincar": {m: 8 for m in ("none", "rfig", "rnd", "vime", "hashexplo")},
             "pointmaze_umaze": {"none": 8, "rfig": 16, "rnd": 8, "vime": 8}}  # #Explo still to come there
    rows = {r.claim.claim: r for r in annotated(
        [_claim("VIME excels in ... sparse-ant"), _claim("RFIG competitively matches or exceeds RND's performance"),
         _claim("no significant execution time differences compared to NN approaches")], present, seeds)}
    peak = rows["VIME excels in ... sparse-ant"]
    assert peak.claim.verdict == f"{NOT_YET}: Sparse-Ant" and peak.claim.value == "—" and peak.status == NOT_YET
    pooled = rows["RFIG competitively matches or exceeds RND's performance"]
    assert pooled.status == "interim" and pooled.judged == present and pooled.seeds == "n = 8 to 16"
    assert pooled.claim.verdict.startswith("supported (interim; not yet run: Acrobot, Sparse-Ant")
    assert pooled.claim.verdict.endswith("; partly run: PointMaze-UMaze without #Explo)")
    assert "MountainCar" not in pooled.claim.verdict and len(pooled.missing) == 10
    # a second mark (the sensitivity campaign's) leaves the standing verdict readable under both
    assert pooled.claim.interim("`sensitivity32` still running").standing_verdict == "supported"
    timing = rows["no significant execution time differences compared to NN approaches"]
    assert timing.claim.kind == V.NOT_MEASURED and timing.needs is None


def test_the_both_ways_table_lists_every_claim_of_the_32_seed_report_once(tmp_path):
    written = json.loads(AS_WRITTEN.read_text())
    table = both_ways(annotated([_claim(w["claim"]) for w in written[:3]], ["mountaincar"], {}), AS_WRITTEN)
    firsts = [line.split(" | ")[0].lstrip("| ") for line in table.splitlines()[2:]]
    assert firsts == [w["claim"] for w in written]


def test_the_report_builds_from_the_data_with_every_claim_once(stored, tmp_path):
    key, run = next((k, r) for k, r in sorted(stored.items()) if k[2] == "none")
    odd = _with(run, variant="odd", variant_overrides={**run.record["variant_overrides"], "agent.lr": 1.0})
    data = tmp_path / "data"
    write_data({**stored, (AS_RUN, ENV, "none", "odd", 0): odd}, data)
    index = build_as_run(data, tmp_path / "out", reps=50, verdict_reps=50)
    text, summary = index.read_text(), (tmp_path / "out" / "summary.md").read_text()
    written = json.loads(AS_WRITTEN.read_text())
    lines = [line for line in summary.splitlines() if line.startswith("| ")
             and not line.startswith(("| The paper", "| :"))]
    assert sorted(line.split(" | ")[0].lstrip("| ") for line in lines) == sorted(w["claim"] for w in written)
    assert "**not yet run: Breakout**" in summary and "not yet run: Acrobot, Sparse-Ant" in summary
    assert "VIME (ours; as-run protocol)" in text and "`eval/episode_return`" in text
    assert f"`{AS_RUN}/{ENV}/none/odd/0`: its overrides match no command" in text
    claims = json.loads((tmp_path / "out" / "claims.json").read_text())
    # the as-run protocol has no sensitivity study: those claims are in the table, with no as-run verdict
    assert [c["claim"] for c in claims] == [w["claim"] for w in written if w["claim"] not in SENSITIVITY_CLAIMS]
    assert all(next(line for line in lines if line.startswith(f"| {words} |")).split(" | ")[1] == "—"
               for words in SENSITIVITY_CLAIMS if words in {w["claim"] for w in written})
    assert all(c["status"] == NOT_YET for c in claims if c["panels_needed"] and ENV not in c["panels_needed"])
    assert "(failed)" not in (tmp_path / "out" / "main" / "index.md").read_text()


def test_a_brax_panel_keeps_its_plain_name_the_protocols_env_options_are_the_protocols(stored):
    run = next(r for k, r in sorted(stored.items()) if k[2] == "rfig")
    ours = {d.key: d for d in declared("sparse_ant")}
    assert ours["none"].overrides_dict["env.milestone_distance"] == 5.0  # an env option of the protocol
    brax = {(AS_RUN, "sparse_ant", "vime", "x", 0): _with(run, env="sparse_ant", bonus="vime", variant="x",
                                                          variant_overrides=ours["vime/own_settings"].overrides_dict)}
    assigned, refused = sort_runs(brax)
    assert not refused and assigned[next(iter(brax))].key == "vime/own_settings"
    runs, _ = report_runs(brax, assigned)
    (key, filed), = runs.items()
    assert key == (AS_RUN, "sparse_ant", "vime", "own_settings", 0)
    assert not any(k.startswith("env.") for k in filed.record["variant_overrides"])
    assert filed.record["as_run_variant"] == "x"
