"""What "reproducible" means for the committed runs: a block rerun here against the data.

A block is the seeds of one env x bonus that one process trained side by side (a seed's numbers
depend, to float32 rounding, on the seeds vmapped beside it, so only a whole block reruns to the
digit). ``campaign/scripts/rerun_block.py`` reruns one with the command its campaign stage used
(:func:`block_command`) into a temporary results folder; :func:`compare_block` then says which it
is: *bit-identical* (every metrics column both record, as :mod:`campaign.repro.data` stores them,
wall time aside) or, failing that, where the runs first part (seed, window, column) and whether
their final scores differ (Mann-Whitney U, two-sided).

:func:`reproducibility_md` is the report's statement of what is identical where, with the measured
evidence (:data:`EVIDENCE`) and the machine kinds the data records (:func:`machine_kind`: what a
run's summary says of its CPU, instruction-set features, jaxlib and accelerator). Nothing here
imports JAX."""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass

import numpy as np
import scipy.stats

from analysis.markdown import render_markdown
from analysis.names import BUILT_IN, env_label
from rfig_exp.results.status import seed_ranges

from .stages import CAMPAIGNS, MAIN, PAPER32, SEED_BLOCK, SIGNAL, command_overrides, stage_of, stages

IGNORED_COLUMNS = ("wall_time_s",)  # the one column that is a time, not a number of the run
RETURN = "episode_return"


# --------------------------------------------------------------------------- the command


def parse_seeds(text: str) -> list[int]:
    """``"8-15"`` -> [8, ..., 15]; ``"8,9,10"`` and ``"8"`` alike. ValueError for anything else."""
    seeds: list[int] = []
    for part in text.split(","):
        lo, dash, hi = part.strip().partition("-")
        seeds += list(range(int(lo), int(hi) + 1)) if dash else [int(lo)]
    if not seeds or sorted(set(seeds)) != seeds:
        raise ValueError(f"seeds {text!r}: give ascending seeds, e.g. 8-15")
    return seeds


def _command_of(stage, bonus: str, variant_overrides: dict) -> str:
    """The sweep of ``stage`` that makes a run of ``bonus`` with these variant overrides: of the sweeps
    that can run ``bonus`` (those whose ``bonus=`` names it, and those without one: their preset's),
    the one that sets the same bonus settings (a stage may run a bonus twice, as two variants), else
    the first (a run at a bonus's defaults in a sensitivity stage: that bonus's first knob, whose
    values in stages.SENSITIVITY hold its default)."""
    keys = {k for k in variant_overrides if k.startswith("bonus.")}
    runs_it = [line for line in stage.commands if bonus in command_overrides(line)[1].get("bonus", bonus).split(",")]
    for line in runs_it or stage.commands:
        if {w.split("=", 1)[0] for w in line.split() if w.startswith("bonus.")} == keys:
            return line
    return (runs_it or stage.commands)[0]


def block_command(experiment: str, env: str, bonus: str, seeds: list[int], variant_overrides: dict | None = None
                  ) -> tuple[str, list[str]]:
    """(stage, launch.py -m arguments) that made ``seeds`` of ``env`` x ``bonus`` in ``experiment``:
    the stage's own command (:mod:`campaign.repro.stages`) restricted to this env and bonus. The
    32-seed grid's seeds 0-7 are the reproduction's runs, so their command is the reproduction's.
    ValueError when no stage makes them, or when ``seeds`` are not the block that command trains
    together (then the numbers could not be the same)."""
    stage = stage_of(experiment, env, bonus, variant_overrides or {}, seeds[0])
    if stage is None and experiment in CAMPAIGNS:
        stage = stage_of(MAIN, env, bonus, variant_overrides or {}, seeds[0])
    known = {s.name: s for campaign in CAMPAIGNS for s in stages(campaign)}
    if stage not in known:
        raise ValueError(f"no campaign stage makes {experiment}/{env}/{bonus} seed {seeds[0]}")
    words = _command_of(known[stage], bonus, variant_overrides or {}).split()
    args = [w for w in words if not w.startswith(("env=", "bonus="))] + [f"env={env}", f"bonus={bonus}"]
    named = {w.split("=", 1)[0]: w.split("=", 1)[1] for w in args if "=" in w}
    if "seed" in named or "num_seeds" in named:
        first, n = int(named.get("seed", 0)), int(named.get("num_seeds", 1))
        if seeds != list(range(first, first + n)):
            raise ValueError(f"stage {stage} trains seeds {first}-{first + n - 1} together ({' '.join(words)}); "
                             f"rerun that whole block, not {seeds[0]}-{seeds[-1]}")
    else:  # the preset's own block: the reproduction's presets train seeds 0-7 in one process
        args += [f"seed={seeds[0]}", f"num_seeds={len(seeds)}"]
    return stage, args


# --------------------------------------------------------------------------- the comparison


def _table(rows: str) -> tuple[list[str], list[list[str]]]:
    """A run's canonical metrics CSV (campaign.repro.data) as header and rows of text cells."""
    table = list(csv.reader(io.StringIO(rows)))
    return (table[0], table[1:]) if table else ([], [])


def final_score(rows: str) -> float:
    """The run's final score as the reports take it: the last window's return, carried from the
    last window that finished an episode (NaN when none did)."""
    header, body = _table(rows)
    if RETURN not in header:
        return float("nan")
    col = header.index(RETURN)
    values = [float(r[col]) for r in body if col < len(r) and r[col] not in ("", "nan")]
    return values[-1] if values else float("nan")


@dataclass(frozen=True)
class Difference:
    """Where two runs of one seed first part: ``window`` counts from 1; ``column`` is None when one
    run has fewer windows."""

    seed: int
    window: int
    env_steps: str
    column: str | None
    committed: str
    rerun: str

    def text(self) -> str:
        what = (f"{self.column} {self.committed} (committed) vs {self.rerun} (rerun)" if self.column else
                f"{self.committed} windows (committed) vs {self.rerun} (rerun)")
        return f"seed {self.seed}, window {self.window} (env_steps {self.env_steps}): {what}"


def first_difference(seed: int, committed: str, rerun: str) -> tuple[Difference | None, list[str]]:
    """The first window (then column, in the committed file's order) where the two runs' metrics
    differ, over the columns both record (wall time aside), and those columns."""
    h1, b1 = _table(committed)
    h2, b2 = _table(rerun)
    columns = [c for c in h1 if c in h2 and c not in IGNORED_COLUMNS]
    i1, i2 = {c: h1.index(c) for c in columns}, {c: h2.index(c) for c in columns}
    steps = "env_steps"
    for w in range(min(len(b1), len(b2))):
        for c in columns:
            a, b = b1[w][i1[c]], b2[w][i2[c]]
            if a != b:
                at = b1[w][i1[steps]] if steps in i1 else "?"
                return Difference(seed, w + 1, at, c, a, b), columns
    if len(b1) != len(b2):
        w = min(len(b1), len(b2))
        return Difference(seed, w + 1, "-", None, str(len(b1)), str(len(b2))), columns
    return None, columns


@dataclass(frozen=True)
class BlockComparison:
    """A rerun block against the committed one: seeds compared, the columns compared, the first
    difference of each seed that differs, and the two samples of final scores with their
    Mann-Whitney U test (two-sided)."""

    seeds: list[int]
    columns: list[str]
    windows: int
    differences: list[Difference]
    committed_final: np.ndarray
    rerun_final: np.ndarray
    missing: list[int]  # seeds the committed block has and the rerun lacks, or the other way

    @property
    def identical(self) -> bool:
        return not self.differences and not self.missing and bool(self.seeds)

    @property
    def first(self) -> Difference | None:
        """The earliest difference over the seeds (by window, then seed)."""
        return min(self.differences, key=lambda d: (d.window, d.seed)) if self.differences else None

    def mann_whitney(self) -> tuple[float, float]:
        """(U, p) of the final scores, committed against rerun (p = 1 when they are equal)."""
        a, b = self.committed_final, self.rerun_final
        if len(a) == 0 or len(b) == 0:
            return float("nan"), float("nan")
        if np.array_equal(np.sort(a), np.sort(b)):
            return float(len(a) * len(b) / 2), 1.0
        res = scipy.stats.mannwhitneyu(a, b, alternative="two-sided")
        return float(res.statistic), float(res.pvalue)

    def verdict(self) -> str:
        """One line: bit-identical, or where they part and what the final scores say."""
        if not self.seeds:
            return "NOTHING TO COMPARE: no seed is in both the committed data and the rerun"
        if self.identical:
            return (f"BIT-IDENTICAL: {len(self.seeds)} seeds x {self.windows} windows, every one of "
                    f"{len(self.columns)} columns equal (wall time aside)")
        u, p = self.mann_whitney()
        first = self.first
        where = f"first at {first.text()}" if first else "seeds missing: " + ", ".join(map(str, self.missing))
        return (f"DIFFERENT: {len(self.differences)} of {len(self.seeds)} seeds differ, {where}; final scores "
                f"median {np.median(self.committed_final):.4g} (committed) vs {np.median(self.rerun_final):.4g} "
                f"(rerun), Mann-Whitney U = {u:.1f}, p = {p:.3g} (two-sided)")


def compare_block(committed: dict[int, str], rerun: dict[int, str]) -> BlockComparison:
    """Compare two blocks, seed -> canonical metrics rows (:class:`campaign.repro.data.StoredRun`'s
    ``rows``). The final scores are those of the seeds both have."""
    seeds = sorted(committed.keys() & rerun.keys())
    missing = sorted(committed.keys() ^ rerun.keys())
    diffs, columns, windows = [], [], 0
    for s in seeds:
        d, columns = first_difference(s, committed[s], rerun[s])
        windows = max(windows, len(_table(rerun[s])[1]))
        if d is not None:
            diffs.append(d)
    finals = (np.array([final_score(committed[s]) for s in seeds]), np.array([final_score(rerun[s]) for s in seeds]))
    return BlockComparison(seeds, columns, windows, diffs, *finals, missing)


# --------------------------------------------------------------------------- machine kinds and the statement


def cpu_identified(machine: dict | None) -> bool:
    """Whether a CPU machine record holds what tells two CPUs apart (its family/model/stepping or
    its instruction-set hash), not only the model name and cores that older runs recorded."""
    m = machine or {}
    return bool(m.get("cpu_id") or m.get("isa"))


def machine_kind(machine: dict | None) -> str:
    """What decides a run's rounding, as its summary's ``machine`` records it: the accelerator, or
    the CPU with its family/model/stepping and a hash of its instruction-set features (XLA
    compiles for the host's features), the cores, jaxlib and XLA_FLAGS. Runs made before these
    were recorded read as their CPU model and cores only ("identity not recorded"): such runs
    cannot be told apart by what they record."""
    m = machine or {}
    if not m:
        return "machine not recorded"
    if m.get("backend") not in (None, "cpu"):
        build = (m.get("jax_build") or {}).get("platform_version")
        return f"{m.get('device_kind')} ({m['backend']}" + (f", {build.splitlines()[-1]}" if build else "") + ")"
    ident, isa = m.get("cpu_id") or {}, m.get("isa") or {}
    cpu = f"{m.get('cpu') or 'CPU'}, {m.get('cores')} cores"
    if not cpu_identified(m):
        return f"{cpu} (identity not recorded)"
    fam = " ".join(f"{k} {ident[k]}" for k in ("family", "model", "stepping", "part") if k in ident)
    jaxlib = (m.get("jax_build") or {}).get("jaxlib")
    flags = (m.get("numerics_env") or {}).get("XLA_FLAGS")
    return (f"{cpu} ({fam}; ISA {isa.get('sha256_16', '?')}" + (f"; jaxlib {jaxlib}" if jaxlib else "")
            + (f"; XLA_FLAGS {flags}" if flags else "") + ")")


@dataclass(frozen=True)
class Evidence:
    """One measured comparison of a rerun block with committed runs: when, what, how, what it gave."""

    date: str
    block: str
    where: str
    command: str
    result: str
    identical: bool


# Measured, not computed by the build: each row is a rerun of a committed block.
# The committed blocks were made at 76a9300 on a VM recorded as "2 CPU cores (AMD EPYC)", one core
# per job; "here" is such a VM too (family 26 model 2 stepping 1, ISA hash 25fc08b1fed3d885, jaxlib
# 0.10.2), at a commit whose training program is main's (6afc77c).
_HERE = ("this project's 2-core AMD EPYC VM (family 26 model 2 stepping 1, ISA 25fc08b1fed3d885, jaxlib 0.10.2), "
         "recorded alike, at 6afc77c with the later provenance fields (the same training program), one core")
_STAGE = "`python campaign/scripts/rerun_block.py --env {env} --bonus {bonus} --seeds 8-15` (the stage's own command)"
EVIDENCE: tuple[Evidence, ...] = (
    Evidence("2026-11-28", "PointMaze-UMaze, PPO, seeds 8-15 (stage p32-pointmaze_umaze-8)", _HERE,
             _STAGE.format(env="pointmaze_umaze", bonus="none"),
             "8 seeds x 41 windows, every one of 7 columns equal (wall time aside); 74 s", True),
    Evidence("2026-11-28", "PointMaze-Medium, PPO, seeds 8-15 (stage p32-pointmaze_medium-8)", _HERE,
             _STAGE.format(env="pointmaze_medium", bonus="none"),
             "8 seeds x 41 windows, every one of 7 columns equal (wall time aside); 103 s", True),
    Evidence("2026-11-28", "PointMaze-Medium, RFIG, seeds 8-15 (stage p32-pointmaze_medium-8)", _HERE,
             _STAGE.format(env="pointmaze_medium", bonus="rfig"),
             "8 seeds x 41 windows, every one of 7 columns equal (wall time aside); 371 s beside other work", True),
    Evidence("2026-11-28 (a second VM)",
             "PointMaze-Medium, PPO and RFIG, seeds 8-15 (stage p32-pointmaze_medium-8)",
             "another 2-core AMD EPYC VM (recorded as \"2 CPU cores (AMD EPYC)\", like the one that made them), "
             "at main and at 76a9300 (the commit that made them)",
             "the stage's own command (`launch.py -m sweep=paper32 env=pointmaze_medium seed=8 num_seeds=8`)",
             "different from the first window (seed 8, window 1: 17 vs 19 episodes finished), at both commits; "
             "main and 76a9300 give each other bit-identical runs there; final scores not distinguishable "
             "(Mann-Whitney p = 1.0 for PPO, 0.72 for RFIG)", False),
)


def machine_kinds(stored: dict) -> Counter:
    """machine kind (:func:`machine_kind`) -> runs of ``stored`` (a data folder's runs) made on it."""
    return Counter(machine_kind((run.record.get("summary") or {}).get("machine")) for run in stored.values())


def reproducibility_md(stored: dict | None = None, evidence: tuple[Evidence, ...] = EVIDENCE) -> str:
    """The report's statement of what is identical where, the measured reruns behind it, and the
    machine kinds the data's runs record (``stored``: campaign.repro.data.read_data)."""
    lines = [
        "**What is identical where.** A run is one compiled program of its seed block (the seeds vmapped in "
        "one process: a seed's numbers depend, to float32 rounding, on the seeds beside it). On the same "
        "machine kind (the same CPU microarchitecture and instruction-set features, which XLA compiles for; "
        "the same jaxlib, XLA flags and cores), the same command gives **bit-identical** runs: every "
        "metrics column to the digit, across commits that leave the program alone. On another machine kind, "
        "a GPU or another CPU, even one whose runs record it alike (\"2 CPU cores (AMD EPYC)\"), the compiled "
        "program rounds differently: runs part (from the first window, on the VM measured below) and are the same "
        "only **statistically** "
        "(their final scores not distinguishable). Runs now record what tells machine kinds apart (CPU "
        "family, model and stepping, a hash of its instruction-set features, caches, jaxlib's build, "
        "XLA_FLAGS); runs made before record only the CPU's model name and cores, which is how the same "
        "committed block can be bit-identical on one VM recorded \"2 CPU cores (AMD EPYC)\" and not on another. "
        "`python campaign/scripts/rerun_block.py --env ENV --bonus BONUS --seeds 8-15` reruns a committed block here "
        "and says which it is.",
        "",
        render_markdown(["Measured", "block", "where", "command", "result"],
                        [[e.date, e.block, e.where, e.command, ("**bit-identical**: " if e.identical else "")
                          + e.result] for e in evidence], align="lllll"),
    ]
    if stored:
        kinds = machine_kinds(stored)
        lines += ["", "Machine kinds of the runs in the data (as their summaries record them):", "",
                  render_markdown(["machine kind", "runs"], [[k, str(n)] for k, n in kinds.most_common()],
                                  align="lr")]
    return "\n".join(lines)


# --------------------------------------------------------------------------- the signal audit's reruns


@dataclass(frozen=True)
class AuditRerun:
    """One block of the signal audit (experiment ``signal``: a block of 8 seeds of a panel x bonus x
    variant rerun so that they record the signal statistics) against the grid's own runs of those seeds:
    the comparison, the machine kinds each side's runs record, and whether those records tell the
    two sides' machines apart (``machines``: "same kind", "different kinds" or "not told apart",
    where a side records no more than a CPU's model name and cores)."""

    env: str
    bonus: str
    variant: str
    comparison: BlockComparison
    grid_kinds: tuple[str, ...]
    audit_kinds: tuple[str, ...]
    machines: str


def _machines(grid: list[dict | None], audit: list[dict | None]) -> str:
    """Whether two blocks' ``machine`` records name one machine kind, tell two apart (both record the
    CPU's identity, or one side trained on an accelerator and the other on a CPU, or the two sides'
    CPUs record model names they share none of), or cannot tell."""
    def accelerator(m: dict | None) -> bool | None:
        return None if not m else m.get("backend") not in (None, "cpu")

    def identified(m: dict | None) -> bool:
        return bool(m) and (bool(accelerator(m)) or cpu_identified(m))

    kinds = ({machine_kind(m) for m in grid}, {machine_kind(m) for m in audit})
    if all(identified(m) for m in grid + audit):
        return "same kind" if kinds[0] == kinds[1] and len(kinds[0]) == 1 else "different kinds"
    acc = ({accelerator(m) for m in grid}, {accelerator(m) for m in audit})
    if None not in acc[0] | acc[1] and len(acc[0]) == len(acc[1]) == 1 and acc[0] != acc[1]:
        return "different kinds"
    # an older record names the CPU's model but not its identity: two sides on CPUs whose recorded
    # model names share none (an Intel Xeon against an AMD EPYC) are still told apart
    names = ({(m or {}).get("cpu") for m in grid}, {(m or {}).get("cpu") for m in audit})
    if acc == ({False}, {False}) and None not in names[0] | names[1] and not names[0] & names[1]:
        return "different kinds"
    return "not told apart"


def audit_reruns(stored: dict, grid: str = PAPER32, audit: str = SIGNAL) -> list[AuditRerun]:
    """Every block of 8 seeds (the jobs of ``sweep=paper``) of ``audit`` in ``stored``
    (campaign.repro.data.read_data) compared with ``grid``'s runs of the same env, bonus, variant and
    seeds (:func:`compare_block`: the columns both record, so the grid's runs made before the signal
    statistics are compared on the columns they have)."""
    blocks: dict[tuple[str, str, str, int], dict[int, object]] = {}
    for (exp, env, bonus, variant, seed), run in stored.items():
        if exp == audit and run.complete:
            blocks.setdefault((env, bonus, variant, seed // SEED_BLOCK), {})[seed] = run
    out = []
    for (env, bonus, variant, _), runs in sorted(blocks.items()):
        theirs = {s: stored.get((grid, env, bonus, variant, s)) for s in runs}
        theirs = {s: r for s, r in theirs.items() if r is not None and r.complete}
        if not theirs:
            continue
        machines = [[(r.record.get("summary") or {}).get("machine") for r in side.values()] for side in (theirs, runs)]
        compared = compare_block({s: r.rows for s, r in theirs.items()}, {s: r.rows for s, r in runs.items()})
        out.append(AuditRerun(env, bonus, variant, compared,
                              *(tuple(sorted({machine_kind(m) for m in side})) for side in machines),
                              _machines(*machines)))
    return out


def audit_reruns_md(reruns: list[AuditRerun], names=BUILT_IN) -> tuple[str, str]:
    """(one sentence for the signal check's section, the table for the provenance section): in how
    many of the audit's blocks its runs are the grid's own to the stored digit, and on which
    machines the others were made. ('', '') without audit blocks."""
    if not reruns:
        return "", ""
    same = sum(r.comparison.identical for r in reruns)
    parted = [r for r in reruns if not r.comparison.identical]
    count = {m: sum(r.machines == m for r in parted) for m in ("different kinds", "not told apart", "same kind")}
    sentence = (f"*The signal audit's runs are the grid's own seeds rerun at the same settings: **bit-identical** "
                f"(every metrics column both record, to the stored digit) in {same} of {len(reruns)} blocks. Of the "
                f"{len(parted)} that part, {count['different kinds']} came from machine kinds their records tell "
                f"apart (a GPU and a CPU, or two CPU families) and {count['not told apart']} from machines whose "
                f"records cannot tell (the same CPU model name, made before runs recorded the CPU's identity); "
                + (f"**{count['same kind']} part on one recorded machine kind**" if count["same kind"] else
                   "none parts where both sides record the same machine kind")
                + ". Those that part are the same runs only statistically (Provenance: the signal audit's reruns).*")
    rows = []
    for r in reruns:
        c = r.comparison
        if c.identical:
            result = f"**bit-identical**: {len(c.seeds)} seeds x {c.windows} windows, {len(c.columns)} columns"
        else:
            first = c.first
            result = ((f"part from window {first.window} ({first.column or 'windows'}), {len(c.differences)} of "
                       f"{len(c.seeds)} seeds" if first else f"seeds missing: {c.missing}")
                      + f"; final scores Mann-Whitney p = {c.mann_whitney()[1]:.2g}")
        own = ",".join(p for p in r.variant.split(",") if p != "base" and not p.startswith("env."))
        rows.append([env_label(r.env), names.label(r.bonus) + (f" ({own})" if own else ""),
                     seed_ranges(r.comparison.seeds), "; ".join(r.grid_kinds),
                     "same" if r.audit_kinds == r.grid_kinds else "; ".join(r.audit_kinds), r.machines, result])
    table = ("**The signal audit's reruns against the grid's own runs** (each block of 8 seeds; the columns both "
             "record, wall time aside, as the data stores them; `campaign.repro.reproducible.audit_reruns`):\n\n"
             + render_markdown(["Panel", "bonus", "seeds", "grid's machine kind", "audit's", "machines", "result"],
                               rows, align="lllllll"))
    return sentence, table
