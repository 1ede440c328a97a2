"""What each seed of a job does, decided from the results tree alone, before anything is compiled.

Complete with the same config -> skipped; partial with the same config -> resumed from its last
checkpoint (or started afresh); saved with another config -> refused (``overwrite=true`` replaces
it). Preflight asks this of every job of a sweep and the job asks it again when it starts (the tree
may have changed in between). Nothing here imports JAX.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field
from pathlib import Path

from omegaconf import OmegaConf

from rfig_exp.results import contract as results
from rfig_exp.spec.run_spec import RunSpec
from rfig_exp.config.errors import ConfigError

log = logging.getLogger("rfig_exp")


@dataclass
class SeedPlan:
    seed: int
    path: Path
    spec: RunSpec = field(repr=False)
    action: str  # "skip" (complete), "run" (fresh or resumed from a checkpoint)
    config_damaged: bool = False  # its saved config.yaml is rewritten when the run resumes

    @functools.cached_property
    def config_yaml(self) -> str:
        """The config.yaml this seed's run writes. Rendered when first asked for: preflight plans
        every seed of a sweep (1,920 of sweep=paper) and needs the text only where a saved config
        is there to compare with."""
        return seed_config_yaml(self.spec, self.seed)


def seed_config_yaml(spec: RunSpec, seed: int) -> str:
    """The resolved config as this seed's run saw it (its own ``seed``, ``num_seeds: 1``)."""
    return OmegaConf.to_yaml(OmegaConf.create({**spec.resolved_config, "seed": seed, "num_seeds": 1}))


def seed_run_dir(spec: RunSpec, seed: int) -> Path:
    """The run folder of ``seed`` of ``spec``."""
    return results.run_dir(spec.results_dir, spec.experiment, spec.env_name, spec.bonus_name, spec.variant, seed)


def plan_seeds(spec: RunSpec) -> list[SeedPlan]:
    """Decide, from the results tree alone, what each seed of the job does.

    Raises ConfigError when a seed's directory holds a run with another config (the
    variant cannot express the difference, e.g. a changed default), unless ``overwrite``.
    """
    plans, conflicts = [], []
    for s in spec.seeds:
        path = seed_run_dir(spec, s)
        plan = SeedPlan(s, path, spec, "run")
        saved = path / results.CONFIG
        damaged = None if spec.overwrite else results.damaged_config(path)
        if damaged:
            # nothing to compare against: the run is redone (a partial one resumed), and the file rewritten
            log.warning("%s is damaged (%s): the run there is not taken as complete, and the file is rewritten "
                        "from this job's config", saved, damaged)
        elif saved.exists() and not spec.overwrite:
            diffs = results.config_differences(saved.read_text(), plan.config_yaml, spec.variant_overrides)
            if diffs:
                conflicts.append(f"{path}: {'; '.join(diffs)}")
        complete = not spec.overwrite and not damaged and results.is_complete(path)
        if not complete and not spec.overwrite and (path / results.SUMMARY).exists():
            log.warning("%s: its summary.json, metrics.csv or config.yaml is damaged or says it did not complete; "
                        "running it again", path)
        plan.action, plan.config_damaged = "skip" if complete else "run", bool(damaged)
        plans.append(plan)
    if conflicts:
        raise ConfigError("results with a different config already exist (" + " | ".join(conflicts)
                          + "); choose another experiment=, or overwrite=true to replace them")
    return plans
