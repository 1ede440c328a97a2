"""Hydra entry point: one experiment, or a sweep with ``-m``.

    python launch.py                                   # mountaincar + rfig, 1 seed, 1M steps
    python launch.py env=minatar_breakout bonus=none num_seeds=4
    python launch.py -m env=minatar_breakout bonus=rfig,none 'seed=range(4)'
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))  # runs from a plain checkout too

import rfig_exp  # noqa: E402,F401  (sets the XLA CPU flag before jax is imported)
import hydra  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from rfig_exp.errors import ConfigError  # noqa: E402

log = logging.getLogger("rfig_exp")


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> None:
    logging.getLogger("jax").setLevel(logging.WARNING)  # hides "Unable to initialize backend 'tpu'"
    from rfig_exp.experiment import run_experiment

    try:
        run_experiment(cfg)
    except ConfigError as err:
        log.error("config error: %s", err)
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
