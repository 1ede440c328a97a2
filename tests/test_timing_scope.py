"""The execution-time claim says where it was measured (campaign.repro.timing.scoped_timing): its verdict
names the benchmark's hardware from ``timing.json``, and the campaign's accelerator jobs are shown beside
it as RFIG's time per env step over the median NN baseline's, computed here by hand."""

from __future__ import annotations

import json

from campaign.claims import verdicts as V
from campaign.claims.claim_rows import Claim
from campaign.repro.timing import scoped_timing

WORDS = "no significant execution time differences compared to NN approaches, even with full matrix inversion"


def _claims():
    timing = Claim.judged(WORDS, "a run's wall time", "1.5x", V.Verdict(V.CONTRADICTED), "MountainCar 1.53x.")
    other = Claim.judged("RFIG competitively matches or exceeds RND's performance", "P", "0.6", V.Verdict(V.SUPPORTED))
    return [timing, other]


def test_the_timing_verdict_names_its_hardware_and_shows_the_accelerator_jobs_beside_it(tmp_path):
    (tmp_path / "timing.json").write_text(json.dumps({"machine": "1 core of an Intel Xeon, jax 0.10.2 on the CPU"}))
    speed = {"cpu": {"mountaincar": {"rfig": 10.0, "rnd": 20.0}},
             "NVIDIA H200": {"mountaincar": {"none": 9.0, "rfig": 4.0, "rnd": 5.0, "vime": 7.0},
                             "minatar_breakout": {"rfig": 2.0, "rnd": 1.5},
                             "minatar_freeway": {"rnd": 3.0}}}   # no RFIG there: no ratio
    timing, other = scoped_timing(_claims(), tmp_path, speed)
    assert timing.kind == V.CONTRADICTED
    assert timing.verdict == "contradicted on the benchmark's hardware (1 core of an Intel Xeon, jax 0.10.2 on the CPU)"
    # time per step is 1 / rate: RFIG's over the median baseline's = median baseline rate / RFIG's rate
    assert "NVIDIA H200: MountainCar 1.50x, Breakout 0.75x" in timing.detail
    assert "Freeway" not in timing.detail and "cpu" not in timing.detail.lower().split("beside it")[1]
    assert other.verdict == "supported"


def test_an_unmeasured_timing_claim_is_left_as_it_is(tmp_path):
    blank = Claim.judged(WORDS, "a run's wall time", "—", V.Verdict(V.NOT_MEASURED), "needs the benchmark")
    (out,) = scoped_timing([blank], tmp_path, {"NVIDIA H200": {"mountaincar": {"rfig": 4.0, "rnd": 5.0}}})
    assert out.verdict == blank.verdict and out.detail == "needs the benchmark"
