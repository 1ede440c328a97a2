"""The reproduction's stages: what each one runs, and which runs it made.

A stage is a unit of work that lands on its own (its data exported and committed when it
completes): the six core envs, one MinAtar game, one sparse Brax env, one DeepSea size, or one
bonus's sensitivity knobs. ``scripts/repro.sh`` runs them (two lanes each take the next stage)
by asking this module for the stage list and each stage's ``launch.py -m`` commands, and the
report attributes every run to its stage with :func:`stage_of` for the table of who made what.

    python -m analysis.repro.stages list               # the names, in the order the lanes take them
    python -m analysis.repro.stages commands brax-ant  # one line of launch.py -m arguments per sweep

The env lists come from the sweep presets (``conf/sweep/repro*.yaml``), so a preset is the one
place an env joins the reproduction. Nothing here imports JAX.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from omegaconf import OmegaConf

from rfig_exp.config.variants import CONF_DIR

MAIN, SENS = "repro", "sensitivity"
DEEPSEA_DEFAULT_SIZE = 20  # conf/env/deepsea.yaml: that size is the core grid's DeepSea
DEEPSEA_SIZES = (10, 30, 40)  # the scaling study's other sizes (sweep=deepsea_scaling)
# One knob at a time around each bonus's defaults (sweep=sensitivity): bonus -> knob -> values.
SENSITIVITY = {
    "rfig": {"lengthscale_scale": "0.25,0.5,1,2,4", "lengthscale_method": "valko_fixed_point,participation_ratio",
             "reg": "0.1,10", "beta": "0.25,1", "num_features": "256,512", "rho": "0.03125,0.125"},
    "rnd": {"lr": "1e-5,1e-4,1e-3", "update_proportion": "0.25,0.5"},
    "vime": {"lr": "1e-5,1e-4,1e-3", "step_size": "0.001,0.1"},
    "hashexplo": {"lr": "1e-5,1e-4,1e-3", "hash_bits": "16,64"},
}


@dataclass(frozen=True)
class Stage:
    name: str
    commands: tuple[str, ...]  # launch.py -m arguments, one sweep each, no spaces inside an argument


def preset_envs(preset: str) -> list[str]:
    """The envs a sweep preset sweeps over (``hydra.sweeper.params.env``)."""
    params = OmegaConf.select(OmegaConf.load(CONF_DIR / "sweep" / f"{preset}.yaml"), "hydra.sweeper.params") or {}
    return [e.strip() for e in str(params.get("env", "")).split(",") if e.strip()]


def stages() -> list[Stage]:
    """Every stage, in the order the lanes take them: the cheap panels first, the Brax envs
    interleaved so a long one starts early on the second lane, the sensitivity study last."""
    minatar = [Stage(f"minatar-{e.removeprefix('minatar_')}", (f"sweep=repro_minatar env={e}",))
               for e in preset_envs("repro_minatar")]
    brax = [Stage(f"brax-{e.removeprefix('sparse_')}", (f"sweep=repro_brax env={e}",))
            for e in preset_envs("repro_brax")]
    deepsea = [Stage(f"deepsea-{n}", (f"sweep=deepsea_scaling env=deepsea env.size={n}",)) for n in DEEPSEA_SIZES]
    sens = [Stage(f"sens-{b}", tuple(f"sweep=sensitivity bonus={b} bonus.{k}={v}" for k, v in knobs.items()))
            for b, knobs in SENSITIVITY.items()]
    order = [Stage("core", ("sweep=repro",)), *minatar[:1], *brax[:1], *minatar[1:], *brax[1:2], *deepsea,
             *brax[2:], *sens]
    return order


def stage_of(experiment: str, env: str, bonus: str, variant_overrides: dict) -> str | None:
    """The stage that makes a run (folder names and its variant's overrides); None for a run that
    no stage makes."""
    if experiment == SENS:
        return f"sens-{bonus}" if bonus in SENSITIVITY else None
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m analysis.repro.stages", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the stage names, in the order the lanes take them")
    c = sub.add_parser("commands", help="a stage's launch.py -m arguments, one sweep per line")
    c.add_argument("stage")
    args = p.parse_args(argv)
    known = {s.name: s for s in stages()}
    if args.command == "list":
        print(" ".join(known))
        return 0
    if args.stage not in known:
        print(f"error: unknown stage {args.stage!r}; valid: {', '.join(known)}", file=sys.stderr)
        return 2
    print("\n".join(known[args.stage].commands))
    return 0


if __name__ == "__main__":
    sys.exit(main())
