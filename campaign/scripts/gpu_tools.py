"""Helpers of campaign/scripts/paper32_gpu.sh on a GPU box without a package index.

    python campaign/scripts/gpu_tools.py missing WHEEL...             # the wheels whose package is not installed
    python campaign/scripts/gpu_tools.py device [--allow-cpu]         # jax's version and devices; exit 3 without a GPU
    python campaign/scripts/gpu_tools.py brax-probe [--env sparse_hopper] [--seeds 32] [--steps 200]
    python campaign/scripts/gpu_tools.py jobs --results R --experiment paper32 [--since ISO_TIME] [--csv jobs.csv]

``missing`` runs before anything is installed (standard library only): a box that has a package
keeps its own version (its jax, numpy or cloudpickle), and only what it lacks is installed from
the wheels that travel with the tree. ``brax-probe`` makes a sparse Brax env and times a jitted
rollout of random actions over vmapped seeds, so a box says whether brax, MuJoCo and MJX work
beside its jax before a sweep spends minutes on them. ``jobs`` lists each training process of an
experiment that ended after ``--since`` (restored cells ended before) from its summaries (when it
ran, compile and training time, speed, the share of the machine it had), and how many ran at once
on average.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import re
import sys
import time
from importlib import metadata
from pathlib import Path

GPU_PLATFORMS = ("gpu", "cuda", "rocm")


def wheel_name(path: str | Path) -> str:
    """The distribution a wheel file holds, normalized (PEP 427 file name, PEP 503 name)."""
    return re.sub(r"[-_.]+", "-", Path(path).name.split("-", 1)[0]).lower()


def installed(name: str) -> bool:
    try:
        metadata.version(name)
        return True
    except metadata.PackageNotFoundError:
        return False


def _cpu_flags() -> None:
    """The CPU flags of a dry run on a CPU (``--allow-cpu``), before jax is imported; ``missing``
    runs before anything is installed, so rfig_exp is imported only here."""
    import rfig_exp

    rfig_exp.set_cpu_flags()


def missing(wheels: list[str]) -> list[str]:
    """The wheels (paths) whose distribution this interpreter does not have, in the order given."""
    return [w for w in wheels if not installed(wheel_name(w))]


def device(allow_cpu: bool) -> int:
    """Print jax's version and devices; 3 when no GPU is there (0 with ``allow_cpu``)."""
    _cpu_flags()
    import jax

    devices = jax.devices()
    platform = devices[0].platform
    print(f"jax {jax.__version__} on {len(devices)} {platform} device(s): {devices[0].device_kind}")
    if platform not in GPU_PLATFORMS and not allow_cpu:
        print("error: JAX sees no GPU here (ALLOW_CPU=1 runs on the CPU, for a dry run)", file=sys.stderr)
        return 3
    return 0


def brax_probe(env_name: str, seeds: int, steps: int) -> int:
    """Reset ``seeds`` copies of a sparse Brax env and step them ``steps`` times with random actions
    in one jitted scan; print versions, compile time and env steps/s. 0 when it ran."""
    _cpu_flags()
    import jax
    import jax.numpy as jnp

    from rfig_exp.envs import make_env

    versions = {name: _version(name) for name in ("jax", "brax", "mujoco-core", "mujoco", "mujoco-mjx")}
    print("brax probe: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v))
    env = make_env(env_name)
    dim = env.action_space.dim

    def rollout(key):
        key, reset_key = jax.random.split(key)
        _, state = env.reset(reset_key)

        def one(carry, k):
            state, total = carry
            a_key, s_key = jax.random.split(k)
            action = jax.random.uniform(a_key, (dim,), minval=-1.0, maxval=1.0)
            out = env.step(s_key, state, action)
            return (out.state, total + out.reward), None

        (_, total), _ = jax.lax.scan(one, (state, jnp.float32(0)), jax.random.split(key, steps))
        return total

    run = jax.jit(jax.vmap(rollout))
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)
    t0 = time.perf_counter()
    run(keys).block_until_ready()
    compiled = time.perf_counter() - t0
    t0 = time.perf_counter()
    totals = run(keys).block_until_ready()
    ran = time.perf_counter() - t0
    print(f"brax probe: {env_name} on {jax.devices()[0].platform}: {seeds} seeds x {steps} steps compiled and ran in "
          f"{compiled:.1f} s, then {seeds * steps / ran:,.0f} env steps/s; milestone reward per seed: mean "
          f"{float(totals.mean()):.2f}")
    return 0


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def job_rows(results: Path, experiment: str, since: str | None = None) -> list[dict]:
    """One row per training process of ``experiment`` (its complete seeds share one summary time)
    that finished at ``since`` (UTC, ``%Y-%m-%dT%H:%M:%SZ``) or later."""
    from rfig_exp.results import contract

    jobs: dict[tuple, dict] = {}
    for run in contract.iter_runs(results, experiment):
        summary, _ = contract.read_summary(run.path)
        if not summary or summary.status != "complete" or (since and (summary.finished_at or "") < since):
            continue
        # One process: its seeds share the wall and compile times; their finish times (whole
        # seconds) may straddle a second's edge, so they do not identify it.
        key = (run.env, run.bonus, run.variant, summary.wall_time_s, summary.compile_time_s)
        placed = summary.placement or {}
        row = jobs.setdefault(key, {
            "env": run.env, "bonus": run.bonus, "variant": run.variant, "seeds": 0,
            "started": _started(summary), "finished_at": summary.finished_at,
            "wall_s": _round(summary.wall_time_s, 1), "compile_s": _round(summary.compile_time_s, 1),
            "train_s": _round(summary.train_time_s, 1), "env_steps_per_s": _round(summary.env_steps_per_second),
            "device_memory_peak_gib": _gib(placed.get("device_memory_peak_bytes")),
            "device_memory_limit_gib": _gib(placed.get("device_memory_limit_bytes")),
            "cores": placed.get("cores"), "resumed": bool(summary.resumed_from_windows),
            "inverse_recoveries": None, "inverse_refreshes": None, "max_inverse_residual": None,
        })
        row["seeds"] += 1
        if (summary.finished_at or "") > (row["finished_at"] or ""):
            row["finished_at"], row["started"] = summary.finished_at, _started(summary)
        # RFIG's inverse in float32 (bonus.matmul_precision): recoveries and refreshes summed over
        # the job's seeds, its largest residual
        values = summary.bonus_values
        for name, column in (("recoveries", "inverse_recoveries"), ("refreshes", "inverse_refreshes")):
            if name in values:
                row[column] = (row[column] or 0) + values[name]
        if "max_inverse_residual" in values:
            row["max_inverse_residual"] = max(row["max_inverse_residual"] or 0.0, values["max_inverse_residual"])
    return sorted(jobs.values(), key=lambda r: (r["started"] or "", r["env"], r["bonus"]))


def _started(summary) -> str | None:
    """When the job started: its finish less its wall time (None when either is missing)."""
    if summary.finished_at is None or summary.wall_time_s is None:
        return None
    try:
        end = datetime.datetime.strptime(summary.finished_at, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return None
    return (end - datetime.timedelta(seconds=summary.wall_time_s)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _round(value: float | None, digits: int | None = None) -> float | None:
    return None if value is None else round(value, digits)


def _gib(value) -> float | None:
    return None if value is None else round(value / 2**30, 2)


def overlap(rows: list[dict]) -> tuple[float, float]:
    """``(span_s, mean jobs at once)``: first start to last end, and the jobs' wall time over it."""
    spans = [(_seconds(r["started"]), _seconds(r["finished_at"])) for r in rows]
    spans = [(a, b) for a, b in spans if a is not None and b is not None]
    if not spans:
        return 0.0, 0.0
    span = max(b for _, b in spans) - min(a for a, _ in spans)
    return span, (sum(b - a for a, b in spans) / span if span else float(len(spans)))


def _seconds(stamp: str | None) -> float | None:
    if not stamp:
        return None
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()


def jobs(results: Path, experiment: str, csv_path: Path | None, since: str | None = None) -> int:
    rows = job_rows(results, experiment, since)
    if csv_path is not None and rows:
        with open(csv_path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    for r in rows:
        memory = "" if r["device_memory_peak_gib"] is None else \
            f", GPU memory peak {r['device_memory_peak_gib']} of {r['device_memory_limit_gib']} GiB"
        print(f"  {r['env']}/{r['bonus']} ({r['seeds']} seeds) {r['started']}: {r['wall_s']} s "
              f"(compile {r['compile_s']}, train {r['train_s']}), {r['env_steps_per_s']:,} env steps/s"
              f"{memory}, cores {r['cores']}" + ("" if r["max_inverse_residual"] is None else
                                                 f"; RFIG inverse: {r['inverse_recoveries']:.0f} recoveries, "
                                                 f"largest residual {r['max_inverse_residual']:.2g}"))
    span, at_once = overlap(rows)
    print(f"{len(rows)} training process(es) of {experiment} in {results}{f' since {since}' if since else ''}: "
          f"{span:.0f} s from the first start to the "
          f"last end, {at_once:.1f} at once on average" + (f"; table: {csv_path}" if csv_path and rows else ""))
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("missing")
    m.add_argument("wheels", nargs="*")
    d = sub.add_parser("device")
    d.add_argument("--allow-cpu", action="store_true")
    b = sub.add_parser("brax-probe")
    b.add_argument("--env", default="sparse_hopper")
    b.add_argument("--seeds", type=int, default=32)
    b.add_argument("--steps", type=int, default=200)
    j = sub.add_parser("jobs")
    j.add_argument("--results", type=Path, required=True)
    j.add_argument("--experiment", required=True)
    j.add_argument("--csv", type=Path, default=None)
    j.add_argument("--since", default=None, help="only jobs that ended at this UTC time or later")
    args = p.parse_args(argv)
    if args.command == "missing":
        print("\n".join(missing(args.wheels)))
        return 0
    if args.command == "device":
        return device(args.allow_cpu)
    if args.command == "brax-probe":
        return brax_probe(args.env, args.seeds, args.steps)
    return jobs(args.results, args.experiment, args.csv, args.since)


if __name__ == "__main__":
    sys.exit(main())
