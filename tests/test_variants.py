"""A sweep job's console prefix (rfig_exp.variants.varying_keys, variant_tag)."""

from __future__ import annotations

from rfig_exp.variants import MAX_TAG, variant_tag, varying_keys


def test_the_keys_a_sweep_varies_leave_out_what_the_prefix_already_says():
    jobs = [["env=cartpole", "bonus=rfig", f"bonus.lengthscale={ls}", "agent.total_timesteps=49152", f"seed={s}",
             "hydra/launcher=slurm"] for ls in (1, 2) for s in (0, 8)]
    assert varying_keys(jobs) == ["bonus.lengthscale"]
    assert varying_keys([["env=a", "agent.lr=1"], ["env=b", "+agent.lr=2"], ["env=b"]]) == ["agent.lr"]
    assert varying_keys([["bonus=rfig", "wandb.mode=disabled"], ["bonus=rnd", "wandb.mode=offline"]]) == []
    assert varying_keys([]) == []


def test_the_swept_key_comes_first_and_is_never_cut():
    overrides = {"agent.total_timesteps": 49152, "bonus.lengthscale": 2.0}
    assert variant_tag(overrides, {"bonus.lengthscale": 2.0}) == "lengthscale=2,agent.total_timesteps=49152"
    assert variant_tag(overrides, {}) == "agent.total_timesteps=49152,bonus.lengthscale=2"
    many = {**overrides, **{f"agent.k{i}": 10 ** 6 for i in range(6)}}
    tag = variant_tag(many, {"bonus.lengthscale": 2.0})
    assert tag.startswith("lengthscale=2,") and tag.endswith(" more") and len(tag) <= MAX_TAG + len(",+9 more")
    swept = {f"bonus.knob_{i}": 0.123456789 for i in range(6)}  # longer than MAX_TAG: shown anyway
    assert variant_tag(swept, swept) == ",".join(f"knob_{i}=0.123456789" for i in range(6))


def test_a_swept_value_equal_to_the_default_is_shown_and_ambiguous_leaves_keep_their_key():
    assert variant_tag({}, {"bonus.lengthscale": "auto"}) == "lengthscale=auto"
    assert variant_tag({"agent.lr": 1e-4}, {"agent.lr": 1e-4, "bonus.lr": 1e-3}) == "agent.lr=0.0001,bonus.lr=0.001"
    assert variant_tag({}, {}) == ""
