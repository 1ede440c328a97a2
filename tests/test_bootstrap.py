"""Named bootstrap seeds (analysis.bootstrap): an interval is drawn from the report's seed and the
names of what it resamples, so it is the same number whichever other panels and methods a report
holds, and it is rliable's own interval for that seed."""

from __future__ import annotations

import numpy as np
import pytest
from analysis_fixtures import SEEDS, STEPS, truth_returns, write_run

from analysis import collect
from analysis.aggregate import _per_env_func, compute_aggregates
from analysis.bootstrap import _seeded, bootstrap, stream_seed

REPS = 200


def _tree(root, experiment: str, envs, bonuses) -> None:
    for env in envs:
        for bonus in bonuses:
            r = truth_returns(env, bonus)
            for s in SEEDS:
                write_run(root, experiment, env, bonus, s, STEPS, r[s])


def test_stream_seeds_are_fixed_and_differ_by_name():
    # CRC-32 of "0|per-env|acrobot": the same number in every process (str hashes are salted)
    assert stream_seed(0, "per-env", "acrobot") == 4044263871
    seeds = {stream_seed(s, *names) for s in (0, 1) for names in
             (("per-env", "acrobot"), ("per-env", "mountaincar"), ("poi",), ("overall",), ("acrobot", "per-env"))}
    assert len(seeds) == 10 and all(0 <= s < 2 ** 32 for s in seeds)


def test_each_key_is_rliables_interval_for_its_own_seed_whatever_is_beside_it():
    from rliable import library

    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(9, 1)), rng.normal(1.0, 2.0, size=(7, 1))
    both = bootstrap({"a": a, "b": b}, _per_env_func, REPS, seed=5)
    alone = bootstrap({"a": a}, _per_env_func, REPS, seed=5)
    for got, want in zip(both, alone):
        np.testing.assert_array_equal(got["a"], want["a"])
    with _seeded(stream_seed(5, "b")):
        points, intervals = library.get_interval_estimates(
            {"b": b}, _per_env_func, reps=REPS, random_state=np.random.RandomState(stream_seed(5, "b")))
    np.testing.assert_array_equal(both[0]["b"], points["b"])
    np.testing.assert_array_equal(both[1]["b"], intervals["b"])
    assert not np.array_equal(both[1]["a"], bootstrap({"a": a}, _per_env_func, REPS, seed=6)[1]["a"])


def test_a_panels_intervals_do_not_move_when_other_panels_and_methods_join(tmp_path):
    _tree(tmp_path, "whole", ["acrobot", "mountaincar", "minatar_breakout"], ["none", "rnd", "rfig"])
    _tree(tmp_path, "part", ["mountaincar"], ["none", "rfig"])
    whole = compute_aggregates(collect(tmp_path, "whole"), reps=REPS)
    part = compute_aggregates(collect(tmp_path, "part"), reps=REPS)
    for b in ("none", "rfig"):
        for stat in ("mean", "iqm", "median"):
            assert whole.per_env["mountaincar"][b][stat] == part.per_env["mountaincar"][b][stat], (b, stat)
    other_seed = compute_aggregates(collect(tmp_path, "part"), reps=REPS, seed=1)
    assert other_seed.per_env["mountaincar"]["rfig"]["iqm"] != part.per_env["mountaincar"]["rfig"]["iqm"]
    assert other_seed.per_env["mountaincar"]["rfig"]["iqm"].point == pytest.approx(
        part.per_env["mountaincar"]["rfig"]["iqm"].point)
