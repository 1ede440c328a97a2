"""The campaigns' stages: what each one runs, and which runs it made.

A stage is a unit of work that lands on its own (its data exported and committed when it
completes). Among the campaigns declared here:

- ``repro``, the 8-seed reproduction (``docs/results/repro/``): the six core envs, one MinAtar
  game, one sparse Brax env, one DeepSea size, or one bonus's sensitivity knobs;
- ``paper32``, the paper's 12 panels at its 32 seeds (``docs/results/paper32/``): one panel x one
  block of 8 seeds (5 jobs of 8 vmapped seeds, one per bonus: the jobs of ``sweep=paper``), seeds
  8-31; seeds 0-7 are the reproduction's own runs, taken into the 32-seed data as they are
  (``python -m campaign.repro merge --relabel repro:paper32``);
- ``sensitivity32``, the sensitivity knobs at 32 seeds on four panels of four suites
  (``docs/results/sensitivity32/``, :mod:`campaign.repro.sensitivity_stages`): one panel x one block
  of 8 seeds, one sweep per bonus x knob of :data:`SENSITIVITY`.

``campaign/scripts/repro.sh`` runs a campaign (two lanes each take the next stage) by asking this module
for the stage list and each stage's ``launch.py -m`` commands, and the report attributes every run
to its stage with :func:`stage_of` for the table of who made what.

    python -m campaign.repro.stages list                        # the names, in the order the lanes take them
    python -m campaign.repro.stages list --campaign paper32 --estimate   # with each stage's cost before it runs
    python -m campaign.repro.stages list --campaign paper32 --left docs/results/paper32/data   # those not in the data
    python -m campaign.repro.stages commands brax-ant           # one line of launch.py -m arguments per sweep
    python -m campaign.repro.stages gpu-parts --left docs/results/paper32/data   # what a GPU runs of the rest

The env lists come from the campaign's sweep presets (``campaign/conf/sweep/repro*.yaml``,
``paper32*.yaml``: campaign.presets), so a preset is the one place an env joins a campaign; each
command names the campaign's config folder (``hydra.searchpath``), where ``launch.py`` finds them.
Nothing here imports JAX.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

from campaign.presets import SEARCHPATH

# The parts every campaign's stages are made of, the authors' protocol's campaigns and the 32-seed
# sensitivity study are their own modules; their names are this module's too (the lanes, the report and
# the tests read them here).
from .protocol_stages import (  # noqa: F401
    ABLATION_DIFFERENCES,
    ABLATION_ORDER,
    ABLATION_PRESETS,
    ABLATION_SEEDS,
    AS_RUN_ORDER,
    AS_RUN_OWN_BONUSES,
    ablation_difference,
    ablation_estimates,
    ablation_preset,
    ablation_stages,
    as_run_budget_ratio,
    as_run_estimates,
    as_run_stages,
    backend_cost_ratio,
    difference_overrides,
    own_bonus_overrides,
)
from .sensitivity_stages import (  # noqa: F401
    SENS32_ORDER,
    sensitivity32_estimates,
    sensitivity32_sizes,
    sensitivity32_stage,
    sensitivity32_stages,
    sensitivity_runs,
)
from .stage_parts import (  # noqa: F401
    ABLATION,
    AS_RUN,
    BACKEND,
    BASELINES,
    COST_STAND_IN,
    MAIN,
    PAPER32,
    PAPER32_FIRST,
    PAPER32_PRESETS,
    PAPER_SEEDS,
    SEED_BLOCK,
    SENS,
    SENS32,
    SIGNAL,
    Stage,
    block_of,
    command,
    command_overrides,
    measured_minutes,
    panel_name,
    paper32_envs,
    preset_envs,
    process_minutes,
    split_command,
    stage_bonuses,
    with_extra,
)

CAMPAIGNS = (MAIN, PAPER32, BASELINES, AS_RUN, ABLATION, SENS32)
# The data folder each campaign's runs go into (campaign/scripts/repro.sh puts its complete runs back first).
CAMPAIGN_DATA = {MAIN: "docs/results/repro/data", PAPER32: "docs/results/paper32/data",
                 BASELINES: "docs/results/paper32/data", AS_RUN: "docs/results/paper32_as_run/data",
                 ABLATION: "docs/results/as_run_ablation/data", SENS32: "docs/results/sensitivity32/data"}
DEEPSEA_DEFAULT_SIZE = 20  # conf/env/deepsea.yaml: that size is the core grid's DeepSea
DEEPSEA_SIZES = (10, 30, 40)  # the scaling study's other sizes (sweep=deepsea_scaling)
# One knob at a time around each bonus's defaults (sweep=sensitivity, and at 32 seeds sweep=sensitivity32):
# bonus -> knob -> values. beta (0.5 by default) for every bonus: the paper says it does not change the
# comparison; the runs at beta 0.5, its reference, are each bonus's default run, which a value equal
# to a default of another knob makes (lengthscale_scale 1, lr 1e-4: sensitivity_runs).
SENSITIVITY = {
    "rfig": {"lengthscale_scale": "0.25,0.5,1,2,4", "lengthscale_method": "valko_fixed_point,participation_ratio",
             "reg": "0.1,10", "beta": "0.25,1", "num_features": "256,512", "rho": "0.03125,0.125"},
    "rnd": {"lr": "1e-5,1e-4,1e-3", "update_proportion": "0.25,0.5", "beta": "0.25,1"},
    "vime": {"lr": "1e-5,1e-4,1e-3", "step_size": "0.001,0.1", "beta": "0.25,1"},
    "hashexplo": {"lr": "1e-5,1e-4,1e-3", "hash_bits": "16,64", "beta": "0.25,1"},
}
# Whether brax's backend matters where a verdict turns on it: Sparse-HalfCheetah, PPO and RFIG,
# seeds 0-7 on brax's default `generalized` (the main grid runs `spring`), in an experiment of its own.
BACKEND_CHECK = (f"{SEARCHPATH} sweep=repro_brax env=sparse_halfcheetah env.backend=generalized bonus=none,rfig "
                 "experiment=backend")


# The working-baselines campaign, in the 32-seed grid (experiment paper32): VIME at its new defaults
# (docs/bonuses/vime.md; its runs at the old ones are filed under their own variant) and the noise
# control, all 32 seeds of the 12 panels. A stage is one panel x one block of 8 seeds: two jobs of 8
# vmapped seeds, the blocks of sweep=paper. Panels complete one after another, so each reaches 32
# seeds (and a verdict) as soon as it can: the cheap ones first, then those whose claims involve
# VIME (Breakout's peak, VIME on Sparse-Walker2d and Sparse-Ant), then the MinAtar panels where the
# old VIME was a constant, then the rest.
# After Breakout, the signal audit: the other three bonuses, seeds 0-7 of each panel again, in an
# experiment of their own (``signal``; the grid's own runs of them predate the signal statistics), one
# stage per panel of three jobs: the check's verdict on every bonus of every panel, and the sign of
# any other bonus that would need a rerun.
BASELINE_BONUSES = ("vime", "noise")
# #Explo at its fixed defaults (bin_penalty 0.1: at 10 its code collapsed to one bucket on MinAtar,
# docs/bonuses/hashexplo.md), 32 seeds of the 12 panels, after every stage above: one job of 8
# vmapped seeds per stage (hx-<panel>-<block>), run from the commit that fixed it. Its runs at the
# old defaults are filed under their own variant (bonus.bin_penalty=10).
FIXED_BONUS = "hashexplo"
AUDITED_BONUSES = ("rfig", "rnd", "hashexplo")
# Then the audit's other blocks: RFIG's and RND's seeds 8-31 of each panel again in experiment
# ``signal`` (sig-<panel>-<block>, two jobs of 8 vmapped seeds), so every seed of the two bonuses the
# verdicts use carries the signal statistics (#Explo's grid runs at its fixed default already do), the
# cheapest panels first (the reproduction's cost of the two jobs).
AUDIT_BLOCK_BONUSES = ("rfig", "rnd")
AUDIT_BLOCK_ORDER = ("pointmaze_medium", "pointmaze_umaze", "acrobot", "mountaincar", "minatar_breakout",
                     "sparse_hopper", "sparse_walker2d", "minatar_asterix", "minatar_space_invaders", "sparse_ant",
                     "sparse_halfcheetah", "minatar_freeway")
AUDIT_AFTER = "minatar_breakout"  # the audit's stages go in after this panel's baselines stages
BASELINES_ORDER = ("mountaincar", "acrobot", "pointmaze_umaze", "pointmaze_medium", "minatar_breakout",
                   "sparse_walker2d", "sparse_ant", "minatar_asterix", "minatar_space_invaders", "minatar_freeway",
                   "sparse_hopper", "sparse_halfcheetah")


def stages(campaign: str = MAIN) -> list[Stage]:
    """Every stage of ``campaign``, in the order the lanes take them."""
    if campaign == PAPER32:
        return paper32_stages()
    if campaign == BASELINES:
        return baselines_stages()
    if campaign == AS_RUN:
        return as_run_stages()
    if campaign == ABLATION:
        return ablation_stages()
    if campaign == SENS32:
        return sensitivity32_stages(SENSITIVITY)
    if campaign != MAIN:
        raise ValueError(f"unknown campaign {campaign!r}; valid: {', '.join(CAMPAIGNS)}")
    return repro_stages()


def paper32_stages() -> list[Stage]:
    """One stage per panel x block of 8 seeds beyond the reproduction's 0-7: the decisive panels
    (:data:`PAPER32_FIRST`) block by block, then the others block by block."""
    brax = set(preset_envs("paper32_brax"))
    envs = paper32_envs()
    first, rest = [e for e in envs if e in PAPER32_FIRST], [e for e in envs if e not in PAPER32_FIRST]
    blocks = range(SEED_BLOCK, PAPER_SEEDS, SEED_BLOCK)
    return [Stage(f"p32-{panel_name(e)}-{b}",
                  (command(f"sweep={'paper32_brax' if e in brax else 'paper32'} env={e} seed={b} "
                           f"num_seeds={SEED_BLOCK}"),))
            for group in (first, rest) for b in blocks for e in group]


def baselines_stages() -> list[Stage]:
    """One stage per panel x block of 8 seeds (0-31) of :data:`BASELINE_BONUSES`, panel by panel in
    :data:`BASELINES_ORDER`, the signal audit's stages (one per panel, seeds 0-7) after
    :data:`AUDIT_AFTER`, then :data:`FIXED_BONUS`'s blocks in the same order, and last the audit's
    blocks of seeds 8-31 (:data:`AUDIT_BLOCK_BONUSES`) in :data:`AUDIT_BLOCK_ORDER`."""
    brax = set(preset_envs("paper32_brax"))
    for order in (BASELINES_ORDER, AUDIT_BLOCK_ORDER):
        assert sorted(order) == sorted(paper32_envs()), "a panel of the 32-seed presets has no place in an order"

    def sweep(e: str) -> str:
        return command(f"sweep={'paper32_brax' if e in brax else 'paper32'} env={e}")

    blocks = [Stage(f"bl-{panel_name(e)}-{b}", (f"{sweep(e)} bonus={','.join(BASELINE_BONUSES)} seed={b} "
                                                 f"num_seeds={SEED_BLOCK}",))
              for e in BASELINES_ORDER for b in range(0, PAPER_SEEDS, SEED_BLOCK)]
    audit = [Stage(f"sig-{panel_name(e)}", (f"{sweep(e)} bonus={','.join(AUDITED_BONUSES)} seed=0 "
                                            f"num_seeds={SEED_BLOCK} experiment={SIGNAL}",)) for e in BASELINES_ORDER]
    fixed = [Stage(f"hx-{panel_name(e)}-{b}", (f"{sweep(e)} bonus={FIXED_BONUS} seed={b} num_seeds={SEED_BLOCK}",))
             for e in BASELINES_ORDER for b in range(0, PAPER_SEEDS, SEED_BLOCK)]
    audit_blocks = [Stage(f"sig-{panel_name(e)}-{b}", (f"{sweep(e)} bonus={','.join(AUDIT_BLOCK_BONUSES)} seed={b} "
                                                       f"num_seeds={SEED_BLOCK} experiment={SIGNAL}",))
                    for e in AUDIT_BLOCK_ORDER for b in range(SEED_BLOCK, PAPER_SEEDS, SEED_BLOCK)]
    cut = (BASELINES_ORDER.index(AUDIT_AFTER) + 1) * PAPER_SEEDS // SEED_BLOCK
    return blocks[:cut] + audit + blocks[cut:] + fixed + audit_blocks


def stage_sizes() -> dict[str, int]:
    """stage -> how many runs it makes, where that is fixed by its commands: a block stage makes
    :data:`SEED_BLOCK` seeds of each bonus of each of its sweeps. (A reproduction stage's size
    depends on its presets' full grids; it is not listed.) Computed once per process: the plans are
    fixed by the checkout's configs, and composing them all takes seconds."""
    return dict(_stage_sizes())


@functools.cache
def _stage_sizes() -> dict[str, int]:
    sizes = {stage.name: SEED_BLOCK * sum(len(stage_bonuses(Stage(stage.name, (line,)))) for line in stage.commands)
             for stage in paper32_stages() + baselines_stages() + as_run_stages()}
    return {**sizes, **{stage.name: ABLATION_SEEDS * len(stage_bonuses(stage)) for stage in ablation_stages()},
            **sensitivity32_sizes(SENSITIVITY)}


def repro_stages() -> list[Stage]:
    """The reproduction's stages: the cheap panels first, the Brax envs interleaved so a long one
    starts early on the second lane, the sensitivity study last."""
    minatar = [Stage(f"minatar-{e.removeprefix('minatar_')}", (command(f"sweep=repro_minatar env={e}"),))
               for e in preset_envs("repro_minatar")]
    brax = [Stage(f"brax-{e.removeprefix('sparse_')}", (command(f"sweep=repro_brax env={e}"),))
            for e in preset_envs("repro_brax")]
    deepsea = [Stage(f"deepsea-{n}", (command(f"sweep=deepsea_scaling env=deepsea env.size={n}"),))
               for n in DEEPSEA_SIZES]
    sens = [Stage(f"sens-{b}", tuple(command(f"sweep=sensitivity bonus={b} bonus.{k}={v}") for k, v in knobs.items()))
            for b, knobs in SENSITIVITY.items()]
    order = [Stage("core", (command("sweep=repro"),)), *minatar[:1], *brax[:1], *minatar[1:], *brax[1:2], *deepsea,
             *brax[2:], *sens, Stage("backend-halfcheetah", (BACKEND_CHECK,))]
    return order


def stage_of(experiment: str, env: str, bonus: str, variant_overrides: dict, seed: int | None = None) -> str | None:
    """The stage that makes a run (folder names, its variant's overrides and its seed); None for a
    run that no stage makes (a 32-seed run of seeds 0-7 is the reproduction's)."""
    if experiment == PAPER32:
        if seed is None or not 0 <= seed < PAPER_SEEDS or env not in paper32_envs():
            return None
        if bonus in (*BASELINE_BONUSES, FIXED_BONUS) and not any(k.startswith("bonus.") for k in variant_overrides):
            return f"{'hx' if bonus == FIXED_BONUS else 'bl'}-{panel_name(env)}-{block_of(seed)}"
        if seed < SEED_BLOCK:
            return None
        return f"p32-{panel_name(env)}-{block_of(seed)}"
    if experiment == ABLATION:
        if env not in ABLATION_ORDER or (seed is not None and not 0 <= seed < ABLATION_SEEDS):
            return None
        name = ablation_difference(env, bonus, variant_overrides)
        return f"abl-{name}-{panel_name(env)}" if name else None
    if experiment == AS_RUN:
        if seed is None or not 0 <= seed < PAPER_SEEDS or env not in paper32_envs():
            return None
        return f"ar-{panel_name(env)}-{block_of(seed)}"
    if experiment == SIGNAL:
        if env not in paper32_envs() or (seed is not None and not 0 <= seed < PAPER_SEEDS):
            return None
        block = 0 if seed is None else block_of(seed)
        return f"sig-{panel_name(env)}" + (f"-{block}" if block else "")
    if experiment == SENS:
        return f"sens-{bonus}" if bonus in SENSITIVITY else None
    if experiment == SENS32:
        return sensitivity32_stage(env, bonus, variant_overrides, seed, SENSITIVITY)
    if experiment == BACKEND:
        return "backend-halfcheetah" if env == "sparse_halfcheetah" else None
    if experiment != MAIN:
        return None
    if env == "deepsea":
        size = int(variant_overrides.get("env.size", DEEPSEA_DEFAULT_SIZE))
        return "core" if size == DEEPSEA_DEFAULT_SIZE else f"deepsea-{size}"
    if env in preset_envs("repro"):
        return "core"
    if env in preset_envs("repro_minatar"):
        return f"minatar-{env.removeprefix('minatar_')}"
    if env in preset_envs("repro_brax"):
        return f"brax-{env.removeprefix('sparse_')}"
    return None


def stage_estimates(campaign: str, stored: dict, held: dict | None = None) -> dict[str, float | None]:
    """stage -> its estimated minutes on one core before it runs: for a 32-seed block, the sum of
    what the same five jobs cost for seeds 0-7 in the reproduction (``stored``: its data); for a
    baselines block, VIME's job there (the fix changes none of its work) and PPO's for the noise
    control (its bonus is free; the second value head is the rest); for an audit stage, the jobs
    there of the bonuses it reruns; for a #Explo block, its job there (nor does its fix); for the
    32-seed sensitivity study, :func:`sensitivity32_estimates`. None where that is not known (the
    reproduction's own stages are estimated by campaign/scripts/repro_meta.py)."""
    if campaign == SENS32:
        return sensitivity32_estimates(stored, SENSITIVITY)
    if campaign == AS_RUN:
        return as_run_estimates(stored, held or {})
    if campaign == ABLATION:
        return ablation_estimates(stored)
    out: dict[str, float | None] = {}
    for stage in stages(campaign):
        env = next((o["env"] for _, o in map(command_overrides, stage.commands) if "env" in o), None)
        cost = measured_minutes(stored, env) if campaign in (PAPER32, BASELINES) and env else {}
        if campaign == BASELINES:
            bonuses = tuple(COST_STAND_IN.get(b, b) for b in stage_bonuses(stage))
            cost = {b: cost[b] for b in bonuses if b in cost}
            out[stage.name] = round(sum(cost.values()), 1) if len(cost) == len(bonuses) else None
        else:
            out[stage.name] = round(sum(cost.values()), 1) if len(cost) == 5 else None
    return out


def block_stage(rec: dict) -> str | None:
    """The CPU block stage that makes a run's seed (``stage_of`` on its stored record)."""
    return stage_of(rec["experiment"], rec["env"], rec["bonus"], rec.get("variant_overrides") or {}, rec["seed"])


def stage_coverage(stored: dict) -> dict[str, int]:
    """stage -> complete runs of its cells in ``stored``, whichever machine made them (a run made
    on a GPU counts for the CPU block stage of its seed)."""
    out: dict[str, int] = {}
    for run in stored.values():
        stage = block_stage(run.record)
        if stage is not None and run.complete:
            out[stage] = out.get(stage, 0) + 1
    return out


def stages_left(stored: dict, campaign: str = PAPER32) -> list[str]:
    """The stages of a campaign of fixed-size stages (the 32-seed grid, the baselines) whose runs
    ``stored`` (a data folder's runs, campaign.repro.data.read_data) does not hold in full, whichever
    machine made those it holds, in the order the lanes take them: what a fresh machine's lanes still
    have to run."""
    return stages_not_whole(stage_coverage(stored), campaign)


def stages_not_whole(held: dict[str, int], campaign: str = PAPER32) -> list[str]:
    """:func:`stages_left` from the coverage :func:`stage_coverage` counted (for a caller that needs both)."""
    sizes = stage_sizes()
    return [s.name for s in stages(campaign) if held.get(s.name, 0) < sizes[s.name]]


def gpu_parts(names: list[str], sweep: str, campaign: str = BASELINES) -> list[str]:
    """The stages ``names`` of ``campaign`` that run ``sweep`` (the baselines: ``paper32``, the non-Brax
    panels, or ``paper32_brax``; the grid as run: ``paper32_as_run``), as the sweeps one GPU runs side by
    side: one line each, ``EXPERIMENT OVERRIDES...``. A baselines block stage becomes its whole cells
    (the GPU script puts the committed runs back first, so each job is one cell's missing seeds
    vmapped); the grid as run keeps its blocks of 8 seeds and runs only the first block any of
    ``names`` is in (the 8-seed grid of every panel before any panel's next seeds). Stages whose
    arguments differ only in their env are one sweep over those envs, in the order the lanes take them."""
    if campaign not in (BASELINES, AS_RUN):
        raise ValueError(f"gpu parts are made for the {BASELINES} and {AS_RUN} campaigns, not {campaign}")
    known = {s.name: s for s in stages(campaign)}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"not stages of the {campaign} campaign: {', '.join(unknown)}")
    if campaign == AS_RUN and names:
        first = min(int(command_overrides(known[n].commands[0])[1]["seed"]) for n in names)
        names = [n for n in names if int(command_overrides(known[n].commands[0])[1]["seed"]) == first]
    groups: dict[tuple[str, str], list[str]] = {}
    for name in names:
        for line in known[name].commands:
            preset, words = command_overrides(line)
            if preset != sweep:
                continue
            env = words.pop("env")
            experiment = words.pop("experiment", AS_RUN if campaign == AS_RUN else PAPER32)
            if campaign == BASELINES and experiment != SIGNAL:  # its cells, all 32 seeds (the audit keeps its seeds)
                del words["seed"], words["num_seeds"]
            envs = groups.setdefault((experiment, " ".join(f"{k}={v}" for k, v in words.items())), [])
            if env not in envs:
                envs.append(env)
    return [f"{experiment} env={','.join(envs)} {rest}".rstrip() for (experiment, rest), envs in groups.items()]


def _print_gpu_parts(args: argparse.Namespace) -> int:
    """``gpu-parts``: the sweeps of the stages ``args.left`` lacks (of ``args.envs`` only, if given)."""
    from .data import read_data

    if not Path(args.left).is_dir():
        print(f"error: --left: no data folder {args.left}", file=sys.stderr)
        return 2
    sweep = args.sweep or (AS_RUN if args.campaign == AS_RUN else PAPER32)
    wanted = [e for e in args.envs.split(",") if e]
    made = {s.name: s for s in stages(args.campaign)}
    left = [n for n in stages_left(read_data(args.left), args.campaign)
            if not wanted or any(f" env={e} " in f" {line} " for e in wanted for line in made[n].commands)]
    try:
        print("\n".join(gpu_parts(left, sweep, args.campaign)))
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m campaign.repro.stages", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", help="the stage names, in the order the lanes take them")
    ls.add_argument("--campaign", choices=CAMPAIGNS, default=MAIN)
    ls.add_argument("--estimate", action="store_true",
                    help="one line per stage with its estimated minutes on one core (from the reproduction's data)")
    ls.add_argument("--data", default="docs/results/repro/data", help="the reproduction's data, for --estimate")
    ls.add_argument("--left", metavar="DATA",
                    help="only the stages whose runs DATA (the campaign's data folder) does not hold in full "
                         "(any --campaign but repro)")
    d = sub.add_parser("data", help="the data folder a campaign's runs go into")
    d.add_argument("--campaign", choices=CAMPAIGNS, default=MAIN)
    c = sub.add_parser("commands", help="a stage's launch.py -m arguments, one sweep per line")
    c.add_argument("stage")
    c.add_argument("--extra", default="", metavar="WORDS",
                   help="overrides put after each sweep's own (repro.sh's COMMON and EXTRA); a hydra.searchpath "
                        "among them joins the campaign's folder instead of replacing it")
    g = sub.add_parser("gpu-parts", help="the stages a data folder lacks, as one GPU's sweeps: "
                                         "EXPERIMENT OVERRIDES... per line")
    g.add_argument("--left", metavar="DATA", required=True, help="the campaign's data folder")
    g.add_argument("--campaign", choices=(BASELINES, AS_RUN), default=BASELINES,
                   help=f"{BASELINES} (default) or {AS_RUN}: the first block of 8 seeds any panel lacks")
    g.add_argument("--sweep", choices=(*PAPER32_PRESETS, AS_RUN), default=None,
                   help=f"the baselines: paper32 (the non-Brax panels, default) or paper32_brax; {AS_RUN}: "
                        f"{AS_RUN} (its only preset, the default)")
    g.add_argument("--envs", default="", help="comma-separated: only these panels (e.g. the sparse Brax ones)")
    args = p.parse_args(argv)
    if args.command == "gpu-parts":
        return _print_gpu_parts(args)
    if args.command == "data":
        print(CAMPAIGN_DATA[args.campaign])
        return 0
    if args.command == "list":
        from .data import read_data

        if args.left:
            if args.campaign == MAIN:
                fixed = [c for c in CAMPAIGNS if c != MAIN]
                print(f"error: --left needs --campaign {', '.join(fixed[:-1])} or {fixed[-1]} (their stages have "
                      "a fixed size)", file=sys.stderr)
                return 2
            if not Path(args.left).is_dir():
                print(f"error: --left: no data folder {args.left}", file=sys.stderr)
                return 2
            print(" ".join(stages_left(read_data(args.left), args.campaign)))
            return 0
        if not args.estimate:
            print(" ".join(s.name for s in stages(args.campaign)))
            return 0

        own = Path(CAMPAIGN_DATA[args.campaign])
        held = read_data(own) if args.campaign == AS_RUN and (own / "runs.json.gz").is_file() else {}
        estimates = stage_estimates(args.campaign, read_data(args.data), held)
        total = 0.0
        for stage in stages(args.campaign):
            est = estimates[stage.name]
            total += est or 0.0
            print(f"{stage.name:24s} {'?' if est is None else f'{est:6.1f}'} min  "
                  + " ; ".join(f"launch.py -m {cmd}" for cmd in stage.commands))
        print(f"{'total':24s} {total:6.1f} min on one core ({total / 60:.1f} core-hours; two lanes: "
              f"{total / 120:.1f} h)")
        return 0
    known = {s.name: s for campaign in CAMPAIGNS for s in stages(campaign)}
    if args.stage not in known:
        print(f"error: unknown stage {args.stage!r}; valid: {', '.join(known)}", file=sys.stderr)
        return 2
    print("\n".join(with_extra(line, args.extra.split()) for line in known[args.stage].commands))
    return 0


if __name__ == "__main__":
    sys.exit(main())
