"""A sweep job's console prefix (rfig_exp.config.variants.varying_keys, variant_tag)."""

from __future__ import annotations

from rfig_exp.config.variants import MAX_TAG, variant_tag, varying_keys


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


def test_variant_folder_names_are_pinned():
    """Variant folder names are part of the results layout: results written before a change must
    still be found (and resumed) after it. These names must never change."""
    from rfig_exp.config.variants import BASE, format_value, variant_name

    assert variant_name({}) == BASE == "base"
    assert variant_name({"bonus.lengthscale": 2.0, "agent.lr": 0.001}) == "agent.lr=0.001,bonus.lengthscale=2"
    assert variant_name({"agent.lr": 1e-5}) == "agent.lr=1e-05"
    assert variant_name({"agent.lr": 0.1 + 0.2}) == "agent.lr=0.30000000000000004"
    assert variant_name({"env.size": 30, "env.backend": "spring"}) == "env.backend=spring,env.size=30"
    assert variant_name({"agent.hidden": [64, 64], "bonus.inverse": True}) == "agent.hidden=64x64,bonus.inverse=true"
    assert variant_name({"agent.hidden": []}) == "agent.hidden=empty"
    assert variant_name({"bonus.table_sizes": None, "agent.total_timesteps": 1e20}) == \
        "agent.total_timesteps=1e+20,bonus.table_sizes=null"
    assert variant_name({"wandb.tags": "a/b c"}) == "wandb.tags=a_b_c"
    long = {f"bonus.key_{i}": 0.5 for i in range(12)}
    assert variant_name(long) == ("bonus.key_0=0.5,bonus.key_1=0.5,bonus.key_10=0.5,bonus.key_11=0.5,bonus.key_2=0.5,"
                                  "bonus~2d85b509")
    assert format_value(3.0) == "3" and format_value(float("inf")) == "inf"
