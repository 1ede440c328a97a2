"""What every campaign's stages are made of: a stage and its commands, the names of the
campaigns and experiments, the 32-seed panels, and what a stage's runs cost in stored data.
Nothing here imports JAX."""

from __future__ import annotations

from dataclasses import dataclass

from campaign.presets import SEARCHPATH, preset_values, with_searchpath

MAIN, SENS, PAPER32, BACKEND, BASELINES = "repro", "sensitivity", "paper32", "backend", "baselines"
SIGNAL = "signal"  # the experiment of the signal audit (below)
AS_RUN = "paper32_as_run"  # the grid as the authors' code ran it: campaign, experiment and preset (below)
ABLATION = "as_run_ablation"  # each difference of the authors' code alone (below)
# The sensitivity study at the paper's 32 seeds on four suites' panels: campaign, experiment and
# preset (campaign.repro.sensitivity_stages)
SENS32 = "sensitivity32"

# The 32-seed campaign: the seeds the reproduction lacks, in blocks of the jobs of sweep=paper
# ('seed=range(0,32,8)' num_seeds=8: a seed's numbers depend, to float32 rounding, on the seeds
# vmapped beside it, so the blocks are those a user rerunning sweep=paper gets), and the panels in
# the order the lanes take them: first those where a claim of the paper turned at 8 seeds (RFIG
# below PPO on Sparse-HalfCheetah, its best on Breakout, VIME's on Sparse-Ant and Sparse-Walker2d,
# the MountainCar flag, RFIG below PPO on Asterix), each to 16 seeds, then 24, then 32; then the
# other six panels alike.
PAPER_SEEDS, SEED_BLOCK = 32, 8
PAPER32_FIRST = ("sparse_halfcheetah", "minatar_breakout", "sparse_ant", "sparse_walker2d", "mountaincar",
                 "minatar_asterix")
PAPER32_PRESETS = ("paper32", "paper32_brax")

# A bonus the reproduction never ran is priced by the job of one that costs the same: the noise
# control draws one number per transition, so its job is PPO's (the second value head is the rest).
COST_STAND_IN = {"noise": "none"}


@dataclass(frozen=True)
class Stage:
    name: str
    # launch.py -m arguments, one sweep each, no spaces inside an argument; each names the campaign's
    # config folder first (command), where its presets are
    commands: tuple[str, ...]


def command(words: str) -> str:
    """A stage's ``launch.py -m`` arguments: the campaign's search path, then ``words`` (its preset
    ``sweep=NAME`` first)."""
    return f"{SEARCHPATH} {words}"


def split_command(line: str) -> tuple[str, list[str]]:
    """A stage's command as its preset's name and the other overrides (the search path aside)."""
    words = [w for w in line.split() if w != SEARCHPATH]
    preset = next(w.split("=", 1)[1] for w in words if w.startswith("sweep="))
    return preset, [w for w in words if not w.startswith("sweep=")]


def command_overrides(line: str) -> tuple[str, dict[str, str]]:
    """A stage's command as its preset's name and its other overrides, key -> value, in order."""
    preset, rest = split_command(line)
    return preset, dict(w.split("=", 1) for w in rest)


def with_extra(line: str, extra: list[str]) -> str:
    """A stage's command with ``extra`` overrides after its own. Hydra keeps only the last
    ``hydra.searchpath``, so a user's (``EXTRA="hydra.searchpath=[file://my_conf]"``) is merged with
    the campaign's folder, which stays first: the stage's presets still compose."""
    if not any(w.startswith("hydra.searchpath=") for w in extra):
        return " ".join([line, *extra]) if extra else line
    return " ".join(with_searchpath([*line.split(), *extra]))


def preset_envs(preset: str) -> list[str]:
    """The envs a sweep preset sweeps over (``hydra.sweeper.params.env``)."""
    return preset_values(preset, "env")


def panel_name(env: str) -> str:
    """A panel's short name in stage names: ``sparse_ant`` -> ``ant``, ``minatar_breakout`` -> ``breakout``."""
    return env.removeprefix("sparse_").removeprefix("minatar_")


def paper32_envs() -> list[str]:
    """The paper's 12 panels (the envs of the 32-seed presets), in the order the lanes take them."""
    envs = [e for preset in PAPER32_PRESETS for e in preset_envs(preset)]
    return [e for e in PAPER32_FIRST if e in envs] + [e for e in envs if e not in PAPER32_FIRST]


def _yaml_value(value) -> str:
    """A config value as a command-line override writes it (a list without spaces)."""
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_yaml_value(v) for v in value) + "]"
    return str(value)


def _flat(tree: dict, prefix: str = "") -> dict:
    """``{"agent": {"warmup": x}}`` -> ``{"agent.warmup": x}``."""
    out: dict = {}
    for k, v in tree.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def stage_bonuses(stage: Stage) -> tuple[str, ...]:
    """The bonuses a stage runs, from its commands: each sweep's ``bonus=`` override, else its
    preset's bonus values, in order, each once."""
    out: list[str] = []
    for line in stage.commands:
        preset, overrides = command_overrides(line)
        given = overrides["bonus"].split(",") if "bonus" in overrides else preset_values(preset, "bonus")
        out += [b for b in given if b not in out]
    return tuple(out)


def block_of(seed: int) -> int:
    """The first seed of ``seed``'s block of :data:`SEED_BLOCK` (the jobs of ``sweep=paper``)."""
    return seed - seed % SEED_BLOCK


def measured_minutes(stored: dict, env: str, experiment: str = MAIN, seed: int = 0) -> dict[str, float]:
    """bonus -> minutes of wall time of the job that made ``seed`` of ``env`` (its main-grid variant)
    in ``stored`` (campaign.repro.data.read_data): what a block of the same jobs cost on this
    machine kind, compile included."""
    out = {}
    for (exp, e, bonus, variant, s), run in stored.items():
        wall = (run.record.get("summary") or {}).get("wall_time_s")
        if exp == experiment and e == env and s == seed and variant in ("base", "env.backend=spring") and wall:
            out[bonus] = float(wall) / 60
    return out


def process_minutes(stored: dict, experiment: str, env: str, seeds: range, bonus: str | None = None,
                    variant: str | None = None) -> float:
    """Minutes of process wall time ``stored`` holds for ``seeds`` of ``env`` in ``experiment`` (of
    ``bonus``, else every bonus, and of ``variant``, else every variant): each run's share of its
    process (its wall time over the seeds vmapped in it), so a job of 8 vmapped seeds and 8 one-seed
    processes count alike."""
    total = 0.0
    for (exp, e, b, v, s), run in stored.items():
        summary = run.record.get("summary") or {}
        if (exp == experiment and e == env and s in seeds and bonus in (None, b) and variant in (None, v)
                and summary.get("wall_time_s")):
            total += float(summary["wall_time_s"]) / int(summary.get("num_seeds_in_process") or 1) / 60
    return total
