"""The sensitivity study at the paper's 32 seeds (campaign ``sensitivity32``,
``docs/results/sensitivity32/``): the knobs of the 8-seed study (``SENSITIVITY`` in
:mod:`campaign.repro.stages`: bonus -> knob -> values, one knob at a time around each bonus's
defaults, 500k steps) on one panel of each of four suites, so that Table 1's sensitivity ordering
and the beta claim (campaign.claims.sensitivity_claims) are judged at 32 seeds. Its stages, the runs
each makes, which stage made a run, and the estimate before each. The functions take the knobs as
an argument (stages.py declares them once, for both studies). Nothing here imports JAX."""

from __future__ import annotations

import functools
import statistics

from .stage_parts import (
    MAIN,
    PAPER_SEEDS,
    SEED_BLOCK,
    SENS,
    SENS32,
    Stage,
    block_of,
    command,
    command_overrides,
    measured_minutes,
    panel_name,
    preset_envs,
    process_minutes,
)

Knobs = dict[str, dict[str, str]]  # bonus -> knob -> its values, comma-separated

# The panels (classic control, PointMaze, DeepSea, MinAtar), in the order the lanes take them within
# a block of 8 seeds: the cheapest first (``list --campaign sensitivity32 --estimate``). Every panel's
# seeds 0-7 come before any panel's 8-15, and so on, so the 4-panel study is whole at each block.
SENS32_ORDER = ("mountaincar", "pointmaze_medium", "deepsea", "minatar_breakout")
# The study's budget (sweep=sensitivity32: 500k steps) over the main grid's (1M) whose jobs price the
# panels the 8-seed study never ran
STEPS_RATIO = 0.5


@functools.lru_cache(maxsize=None)
def bonus_defaults(bonus: str) -> dict:
    """A bonus's own settings (conf/bonus/<bonus>.yaml), key -> value."""
    from omegaconf import OmegaConf

    from rfig_exp.config.folders import CONF_DIR

    tree = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "bonus" / f"{bonus}.yaml"))
    assert isinstance(tree, dict)
    return tree


def is_default(value: str, default) -> bool:
    """Whether a knob's value, as a command line writes it (``1e-4``), is the bonus's default
    (``0.0001``): the launcher names a run by the settings that differ from its defaults, so such a
    value makes the default run (its variant drops the override)."""
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        try:
            return float(value) == float(default)
        except ValueError:
            return False
    return value == str(default)


def sensitivity_runs(knobs: Knobs) -> dict[str, list[dict[str, str]]]:
    """bonus -> the distinct runs its knobs make (per env and seed), each as its one ``bonus.KNOB:
    value`` override, or ``{}`` for the run at the bonus's defaults, which a value equal to a
    default makes (:func:`is_default`); in the order the commands make them."""
    out: dict[str, list[dict[str, str]]] = {}
    for bonus, by_knob in knobs.items():
        runs: list[dict[str, str]] = []
        for knob, values in by_knob.items():
            for value in values.split(","):
                run = {} if is_default(value, bonus_defaults(bonus)[knob]) else {f"bonus.{knob}": value}
                if run not in runs:
                    runs.append(run)
        out[bonus] = runs
    return out


def sensitivity32_stages(knobs: Knobs) -> list[Stage]:
    """One stage per panel x block of 8 seeds (``s32-<panel>-<block>``), block 0 of every panel of
    :data:`SENS32_ORDER` first, then 8, 16 and 24: one sweep per bonus x knob of ``knobs``."""
    assert sorted(SENS32_ORDER) == sorted(preset_envs(SENS32)), "a panel of sweep=sensitivity32 has no place"

    def block(e: str, b: int) -> Stage:
        return Stage(f"s32-{panel_name(e)}-{b}",
                     tuple(command(f"sweep={SENS32} env={e} bonus={bonus} bonus.{knob}={values} seed={b} "
                                   f"num_seeds={SEED_BLOCK}")
                           for bonus, by_knob in knobs.items() for knob, values in by_knob.items()))

    return [block(e, b) for b in range(0, PAPER_SEEDS, SEED_BLOCK) for e in SENS32_ORDER]


def sensitivity32_stage(env: str, bonus: str, variant_overrides: dict, seed: int | None,
                        knobs: Knobs) -> str | None:
    """The stage that makes a run of the campaign: its panel and its seed's block, for a bonus of
    ``knobs`` whose bonus settings are at most one of its knobs; None for any other run."""
    own = [k for k in variant_overrides if k.startswith("bonus.")]
    if (seed is None or not 0 <= seed < PAPER_SEEDS or env not in SENS32_ORDER or bonus not in knobs
            or len(own) > 1 or any(k.removeprefix("bonus.") not in knobs[bonus] for k in own)):
        return None
    return f"s32-{panel_name(env)}-{block_of(seed)}"


def sensitivity32_sizes(knobs: Knobs) -> dict[str, int]:
    """stage -> the runs it makes: :data:`SEED_BLOCK` seeds of every distinct run of every bonus."""
    runs = SEED_BLOCK * sum(map(len, sensitivity_runs(knobs).values()))
    return {stage.name: runs for stage in sensitivity32_stages(knobs)}


def _sens_job_minutes(stored: dict, env: str, bonus: str) -> float | None:
    """The median minutes of the 8-seed study's jobs of ``bonus`` on ``env`` (one per variant), None
    where it ran none there."""
    variants = {key[3] for key in stored if key[:3] == (SENS, env, bonus) and key[4] < SEED_BLOCK}
    jobs = [process_minutes(stored, SENS, env, range(SEED_BLOCK), bonus, v) for v in sorted(variants)]
    jobs = [m for m in jobs if m]
    return statistics.median(jobs) if jobs else None


def sensitivity32_estimates(stored: dict, knobs: Knobs) -> dict[str, float | None]:
    """stage -> estimated minutes on one core of each stage, from ``stored`` (the reproduction's data):
    its jobs (one per distinct run of a bonus, :func:`sensitivity_runs`, 8 vmapped seeds each) priced
    per bonus. On a panel the 8-seed study ran (MountainCar), a job costs the median of that bonus's
    8-seed jobs there (the same budget and seeds per job); the median, because RND's, VIME's and
    #Explo's beta jobs, run later on another machine, took 3-12x their default's job for the same
    computation (beta only weighs the bonus). On the other panels (PointMaze-Medium, DeepSea, Breakout)
    a job costs the main grid's 1M-step job of the bonus there (the one that made seeds 0-7,
    :func:`measured_minutes`) times :data:`STEPS_RATIO`: a job's cost taken as proportional to its env
    steps (its compile, a small part, halved with it). Each knob value is priced as its own process,
    as the 8-seed study ran; the launcher now stacks a knob's traced values in one job, which saves
    their compiles, so the estimate errs high. Every block of a panel costs alike (seeds change no
    work). None where a bonus's job is not in ``stored``."""
    runs = sensitivity_runs(knobs)
    out: dict[str, float | None] = {}
    for stage in sensitivity32_stages(knobs):
        env = command_overrides(stage.commands[0])[1]["env"]
        main = measured_minutes(stored, env, MAIN)
        cost = {b: _sens_job_minutes(stored, env, b) or (main[b] * STEPS_RATIO if b in main else None) for b in runs}
        known = all(c is not None for c in cost.values())
        out[stage.name] = round(sum(len(runs[b]) * (c or 0.0) for b, c in cost.items()), 1) if known else None
    return out
