"""The campaigns of the RFIG authors' protocol (docs/fidelity.md): the grid as their code ran it
(``paper32_as_run``) and each difference of their code alone (``as_run_ablation``), their stages
and the estimate before each. Nothing here imports JAX."""

from __future__ import annotations

import functools

from campaign.presets import CONF_DIR as CAMPAIGN_CONF
from campaign.presets import preset_file, yaml_tree
from rfig_exp.config.folders import CONF_DIR

from .stage_parts import (
    ABLATION,
    AS_RUN,
    BACKEND,
    COST_STAND_IN,
    MAIN,
    PAPER_SEEDS,
    SEED_BLOCK,
    Stage,
    _flat,
    _yaml_value,
    command,
    command_overrides,
    panel_name,
    paper32_envs,
    preset_envs,
    process_minutes,
    stage_bonuses,
)

# The grid as the authors' code ran it (sweep=paper32_as_run: protocol=as_run, docs/fidelity.md), in an
# experiment of its own: the 12 panels x PPO, RFIG, RND, VIME, #Explo and the noise control (VIME and
# #Explo the authors' variants, as the protocol selects them), and beside them our own VIME under the
# same protocol (its bonus settings the protocol changes set back to ours: :func:`own_bonus_overrides`).
# A stage is one panel x one block of 8 seeds, two sweeps; the 8-seed grid of every panel first
# (block 0), then blocks 8, 16 and 24 alike, so the 8-seed grid is whole before any panel has more;
# within a block the cheapest panels first (``list --campaign paper32_as_run --estimate``: on a CPU
# the Brax panels run brax's generalized backend one seed per process, 3-10x a MinAtar panel).
AS_RUN_OWN_BONUSES = ("vime",)  # run a second time with their own settings under the protocol
AS_RUN_ORDER = ("pointmaze_medium", "pointmaze_umaze", "mountaincar", "acrobot", "minatar_breakout",
                "minatar_space_invaders", "minatar_asterix", "minatar_freeway", "sparse_hopper", "sparse_walker2d",
                "sparse_ant", "sparse_halfcheetah")

# Each difference alone (experiment ``as_run_ablation``, sweep=as_run_ablation): from the paper's text
# (protocol=paper, the as-written grid's settings), one difference of the authors' code switched on
# at a time, 16 seeds, on the panels it changes and with the bonuses it changes, every run
# evaluating 128 fresh episodes per window (evaluation changes no training number, so the as-written
# runs here carry both scores: the evaluation difference needs no runs of its own). A difference
# (:data:`ABLATION_DIFFERENCES`) is keys that conf/protocol/ sets: of the agent's part (as_run.yaml),
# the env's (protocol/env/as_run_<env>.yaml; ``brax``: the milestone distance and the backend) or a
# bonus's (protocol/bonus/as_run_<bonus>.yaml); its values are read from there
# (:func:`difference_overrides`), so the ablation toggles what the protocol sets. Stages: the
# as-written runs of a panel, then each difference on it, the cheapest panels first; the Brax panels
# from the as-written grid's `spring` backend (:data:`ABLATION_PRESETS`).
ABLATION_SEEDS = 16
AS_WRITTEN = "paper"  # the setting of a panel's as-written runs, in its stage's name (abl-paper-<panel>)
# difference -> (where its keys are: "agent", "env" or "bonus", the keys, the bonuses it changes)
ABLATION_DIFFERENCES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "episodic": ("agent", ("agent.intrinsic_return", "agent.intrinsic_scale"), ("rfig", "rnd", "vime", "hashexplo")),
    "mix": ("agent", ("agent.advantage_mix", "agent.ext_coef", "bonus.beta"), ("rfig", "rnd", "vime", "hashexplo")),
    "details": ("agent", ("agent.warmup", "agent.time_limit", "agent.obs_clip", "agent.networks",
                          "agent.weight_init"), ("none", "rfig", "rnd", "vime", "hashexplo")),
    "budget": ("env", ("agent.total_timesteps",), ("none", "rfig", "rnd", "vime", "hashexplo")),
    "brax": ("env", ("env.milestone_distance", "env.backend"), ("none", "rfig", "rnd", "vime", "hashexplo")),
    "rfig": ("bonus", (), ("rfig",)),
    "vime": ("bonus", (), ("vime",)),
    "hashexplo": ("bonus", (), ("hashexplo",)),
}
ABLATION_PRESETS = (ABLATION, "ablation_brax")  # the Brax panels from the as-written grid's spring backend
ABLATION_ORDER = AS_RUN_ORDER


def own_bonus_overrides(bonus: str, protocol: str = "as_run") -> list[str]:
    """``bonus.KEY=VALUE`` for every key ``protocol``'s file for ``bonus`` changes
    (conf/protocol/bonus/<protocol>_<bonus>.yaml), its value in the bonus's own config
    (conf/bonus/<bonus>.yaml): the bonus as we define it, under the protocol's agent and budget."""
    theirs = yaml_tree(CONF_DIR / "protocol" / "bonus" / f"{protocol}_{bonus}.yaml")
    ours = yaml_tree(CONF_DIR / "bonus" / f"{bonus}.yaml")
    return [f"bonus.{k}={_yaml_value(ours[k])}" for k, v in theirs.items() if ours[k] != v]


def ablation_preset(env: str) -> str:
    """The ablation's sweep preset of a panel (:data:`ABLATION_PRESETS`)."""
    return next(p for p in ABLATION_PRESETS if env in preset_envs(p))


@functools.lru_cache(maxsize=None)
def _as_written_values(env: str, bonus: str) -> dict:
    """Every key of the composed config of ``env`` x ``bonus`` in the ablation's as-written runs, flat."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(str(CONF_DIR), version_base=None):
        cfg = compose("config", [f"hydra.searchpath=[file://{CAMPAIGN_CONF}]", f"sweep={ablation_preset(env)}",
                                 f"env={env}", f"bonus={bonus}"])
        return _flat(OmegaConf.to_container(cfg))


def difference_overrides(difference: str, env: str) -> list[str]:
    """The overrides that switch ``difference`` on for ``env``, with the values conf/protocol/ sets
    for ``protocol=as_run`` there: empty where it changes nothing (a panel whose protocol file lacks
    the key, a value equal to the paper's)."""
    where, keys, bonuses = ABLATION_DIFFERENCES[difference]
    folder = CONF_DIR / "protocol"
    file = {"agent": folder / "as_run.yaml", "env": folder / "env" / f"as_run_{env}.yaml",
            "bonus": folder / "bonus" / f"as_run_{bonuses[0]}.yaml"}[where]
    if not file.is_file():
        return []
    theirs = _flat(yaml_tree(file), "bonus." if where == "bonus" else "")
    paper = _as_written_values(env, bonuses[0])
    return [f"{k}={_yaml_value(theirs[k])}" for k in (keys or tuple(theirs))
            if k in theirs and theirs[k] != paper.get(k)]


@functools.cache
def _changes_something(difference: str, env: str) -> bool:
    """Whether ``difference`` switches anything on for ``env`` (a stage of it exists there)."""
    return bool(difference_overrides(difference, env))


def ablation_stages() -> list[Stage]:
    """Per panel of :data:`ABLATION_ORDER`: its as-written runs (``abl-paper-<panel>``), then each
    difference of :data:`ABLATION_DIFFERENCES` that changes something there (``abl-<difference>-<panel>``),
    one sweep of :data:`ABLATION_SEEDS` vmapped seeds of the bonuses it changes."""
    return list(_ablation_stages())


@functools.cache
def _ablation_stages() -> tuple[Stage, ...]:
    seeds = f"seed=0 num_seeds={ABLATION_SEEDS}"
    out = []
    for e in ABLATION_ORDER:
        head = f"sweep={ablation_preset(e)} env={e}"
        out.append(Stage(f"abl-{AS_WRITTEN}-{panel_name(e)}", (command(f"{head} {seeds}"),)))
        for name, (_, _, bonuses) in ABLATION_DIFFERENCES.items():
            words = difference_overrides(name, e)
            if words:
                out.append(Stage(f"abl-{name}-{panel_name(e)}",
                                 (command(" ".join([head, f"bonus={','.join(bonuses)}", *words, seeds])),)))
    return tuple(out)


@functools.cache
def planned_differences(env: str) -> tuple[str, ...]:
    """The differences the ablation runs on ``env``, in its stage order: those that change something
    there, each a stage of :func:`ablation_stages`."""
    return tuple(d for d in ABLATION_DIFFERENCES if _changes_something(d, env))


@functools.cache
def ablation_shared(env: str) -> dict[str, str]:
    """The settings ``env``'s ablation preset (:func:`ablation_preset`,
    ``campaign/conf/sweep/<preset>.yaml``) gives every run it makes, beyond its seeds, experiment and
    sweep lists: the evaluation episodes, the Brax panels' backend, as ``key -> value`` text. They are
    in every run's variant overrides and switch on no difference. Read per preset, so that two presets
    may give one key different values."""
    tree = yaml_tree(preset_file(ablation_preset(env)))
    settings = {k: v for k, v in tree.items() if k not in ("hydra", "num_seeds", "experiment")}
    return {k: _yaml_value(v) for k, v in _flat(settings).items()}


def ablation_difference(env: str, bonus: str, variant_overrides: dict) -> str | None:
    """The difference a run of the ablation on ``env`` switched on, from its bonus and its variant's
    overrides (those its preset gives every run, :func:`ablation_shared`, at their preset's value,
    read past): ``paper`` for none, a bonus's own difference by its name, None for overrides no
    difference of that panel sets (the Brax backend on a MinAtar panel)."""
    shared = ablation_shared(env)
    keys = {k for k, v in variant_overrides.items() if shared.get(k) != _yaml_value(v)}
    if not keys:
        return AS_WRITTEN
    for name, (where, own, _) in ABLATION_DIFFERENCES.items():
        if where != "bonus" and keys <= set(own) and _changes_something(name, env):
            return name
    if bonus in ABLATION_DIFFERENCES and all(k.startswith("bonus.") for k in keys) and _changes_something(bonus, env):
        return bonus
    return None


def as_run_stages() -> list[Stage]:
    """One stage per panel x block of 8 seeds of :data:`AS_RUN`: every panel's seeds 0-7 first (in
    :data:`AS_RUN_ORDER`), then seeds 8-15 of every panel, and so on. Each stage is the preset's
    sweep (its six bonuses) and :data:`AS_RUN_OWN_BONUSES` with their own settings."""
    assert sorted(AS_RUN_ORDER) == sorted(preset_envs(AS_RUN)) == sorted(paper32_envs())

    def block(e: str, b: int) -> Stage:
        head = f"sweep={AS_RUN} env={e}"
        seeds = f"seed={b} num_seeds={SEED_BLOCK}"
        own = [command(" ".join([head, f"bonus={bonus}", *own_bonus_overrides(bonus), seeds]))
               for bonus in AS_RUN_OWN_BONUSES]
        return Stage(f"ar-{panel_name(e)}-{b}", (command(f"{head} {seeds}"), *own))

    return [block(e, b) for b in range(0, PAPER_SEEDS, SEED_BLOCK) for e in AS_RUN_ORDER]


def as_run_sizes() -> dict[str, int]:
    """stage -> the runs an :data:`AS_RUN` stage makes: :data:`SEED_BLOCK` seeds of each bonus of each
    of its sweeps."""
    return {stage.name: SEED_BLOCK * sum(len(stage_bonuses(Stage(stage.name, (line,)))) for line in stage.commands)
            for stage in as_run_stages()}


@functools.lru_cache(maxsize=None)
def as_run_budget_ratio(env: str) -> float:
    """``agent.total_timesteps`` of ``protocol=as_run`` on ``env`` over the paper protocol's."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(str(CONF_DIR), version_base=None):
        budget = {p: int(compose("config", [f"env={env}", f"protocol={p}"]).agent.total_timesteps)
                  for p in ("paper", "as_run")}
    return budget["as_run"] / budget["paper"]


def backend_cost_ratio(stored: dict) -> float | None:
    """What Sparse-HalfCheetah's backend check (``generalized``, one seed per process on a CPU) cost
    over the grid's vmapped ``spring`` jobs of the same seeds and bonuses, in ``stored`` (the
    reproduction's data); None where either is missing."""
    first = range(SEED_BLOCK)
    check = [(process_minutes(stored, BACKEND, "sparse_halfcheetah", first, b),
              process_minutes(stored, MAIN, "sparse_halfcheetah", first, b)) for b in ("none", "rfig")]
    return sum(c for c, _ in check) / sum(m for _, m in check) if all(c and m for c, m in check) else None


def ablation_estimates(stored: dict) -> dict[str, float | None]:
    """stage -> estimated minutes on one core of each :data:`ABLATION` stage: the reproduction's jobs
    of its bonuses on the panel (seeds 0-7, ``stored``) twice over (16 seeds), times the budget's
    ratio for ``budget`` and :func:`backend_cost_ratio` for ``brax``; without the evaluation episodes."""
    backend = backend_cost_ratio(stored)
    out: dict[str, float | None] = {}
    for stage in ablation_stages():
        words = command_overrides(stage.commands[0])[1]
        env, difference = words["env"], stage.name.split("-")[1]
        cost = [process_minutes(stored, MAIN, env, range(SEED_BLOCK), b) for b in stage_bonuses(stage)]
        factor = ABLATION_SEEDS / SEED_BLOCK * (as_run_budget_ratio(env) if difference == "budget" else 1.0)
        if difference == "brax":
            factor = factor * backend if backend is not None else None
        out[stage.name] = round(sum(cost) * factor, 1) if all(cost) and factor is not None else None
    return out


def as_run_estimates(stored: dict, held: dict) -> dict[str, float | None]:
    """stage -> estimated minutes on one core of each :data:`AS_RUN` stage. Where ``held`` (the
    campaign's own data) has the panel's seeds 0-7 in full, what that stage cost: the blocks after
    the first are its jobs again. Otherwise the reproduction's jobs of the same bonuses (``stored``;
    the noise control priced as PPO, :data:`COST_STAND_IN`) scaled by the budget's ratio
    (:func:`as_run_budget_ratio`) and, on a Brax panel, by what Sparse-HalfCheetah's backend check
    cost on ``generalized`` (one seed per process on a CPU) over the grid's vmapped ``spring`` jobs:
    a lower bound, as the 128 evaluation episodes per window are not in it."""
    first = range(SEED_BLOCK)
    backend = backend_cost_ratio(stored)
    sizes = as_run_sizes()
    out: dict[str, float | None] = {}
    for stage in as_run_stages():
        env = command_overrides(stage.commands[0])[1]["env"]
        done = [run for key, run in held.items() if key[0] == AS_RUN and key[1] == env and key[4] in first]
        if len(done) >= sizes[stage.name] and all(run.complete for run in done):
            out[stage.name] = round(process_minutes(held, AS_RUN, env, first), 1)
            continue
        jobs = [COST_STAND_IN.get(b, b) for line in stage.commands for b in stage_bonuses(Stage(stage.name, (line,)))]
        cost = [process_minutes(stored, MAIN, env, first, b) for b in jobs]
        factor = as_run_budget_ratio(env) * (backend if env.startswith("sparse_") else 1.0)
        known = all(cost) and (backend is not None or not env.startswith("sparse_"))
        out[stage.name] = round(sum(cost) * factor, 1) if known else None
    return out
