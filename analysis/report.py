"""Assemble a report folder: run every maker of :data:`MAKERS` in its order, write index.md."""

from __future__ import annotations

import datetime as _dt
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from rfig_exp.results import contract as results

from . import plots, tables
from .collect import Collection
from .maker import Maker, ReportContext, ReportOptions, Section
from .makers import coverage, hyperparameters, seeds, sensitivity
from .markdown import render_markdown
from .methods import format_overrides
from .names import describe_normalisation
from .tables import MIN_SEEDS_FOR_CI, few_seeds_note


@dataclass
class ReportResult:
    index: Path
    sections: list[Section]
    errors: list[str] = field(default_factory=list)  # "maker: exception" for makers that failed


# Every block of a report, in its order: a new figure or table is one entry here (its name is what
# ``python -m analysis --only`` takes).
MAKERS: tuple[tuple[str, Maker], ...] = (
    ("data", tables.data_maker),
    ("curves", plots.curves_maker),
    ("seed_curves", seeds.seed_curves_maker),
    ("coverage_curves", coverage.coverage_curves_maker),
    ("visit_maps", coverage.visit_maps_maker),
    ("final_scores", tables.final_scores_maker),
    ("final_coverage", coverage.final_coverage_maker),
    ("sensitivity", sensitivity.sensitivity_maker),
    ("hyperparameters", hyperparameters.hyperparameters_maker),
    ("aggregate_intervals", plots.aggregate_intervals_maker),
    ("aggregate_table", tables.aggregate_table_maker),
    ("aggregate_curve", plots.aggregate_curve_maker),
    ("probability_of_improvement", plots.poi_maker),
    ("performance_profiles", seeds.performance_profiles_maker),
    ("method_comparison", tables.method_comparison_maker),
    ("intrinsic_reward", plots.intrinsic_maker),
    ("env_metrics", coverage.env_metrics_maker),
    ("exports", tables.exports_maker),
)


def min_seeds(coll: Collection) -> int:
    """Fewest scored runs of any (env, method) cell that has at least one (0 if none)."""
    counts = [sum(c.scored for c in coll.env_data[e].curves.get(m, [])) for e in coll.envs for m in coll.methods]
    counts = [n for n in counts if n > 0]
    return min(counts, default=0)


def methods_markdown(coll: Collection) -> str:
    """The methods of the report: label, bonus, variant folder, its overrides beyond the common ones."""
    rows = []
    for k in coll.methods:
        m = coll.method_info.get(k)
        if m is None:
            continue
        own = {kk: v for kk, v in m.overrides if kk not in coll.common_overrides}
        rows.append([m.label, m.bonus, f"`{m.variant}`", format_overrides(own) or "—"])
    return render_markdown(["Method", "Bonus", "Variant", "Overrides (beyond the common ones)"], rows,
                           align="llll")


def results_as_of(coll: Collection) -> str:
    """When the collected runs last changed: the newest modification time (UTC) of their
    summary.json and metrics.csv. Not the wall-clock time of the build, so a report rebuilt
    from unchanged results is byte-identical."""
    times = [p.stat().st_mtime for r in coll.runs for p in (r.path / results.SUMMARY, r.path / results.METRICS)
             if p.is_file()]
    if not times:
        return "unknown (no run files)"
    newest = _dt.datetime.fromtimestamp(max(times), _dt.timezone.utc)
    return newest.strftime("%Y-%m-%dT%H:%M:%SZ") + " (the newest run file)"


def _header(coll: Collection, opts: ReportOptions) -> str:
    k = opts.last_k
    final = "the return of the last evaluation window" if k == 1 else f"the mean of the last {k} evaluation windows"
    filters = []
    for name, values in (("envs", coll.requested_envs), ("bonuses", coll.requested_bonuses),
                         ("variants", coll.requested_variants), ("methods", coll.requested_methods)):
        if values:
            filters.append(f"{name} = " + ", ".join(values))
    common = format_overrides(coll.common_overrides)
    n_min = min_seeds(coll)
    reference = coll.names.role_label("reference", {coll.bonus_of(m) for m in coll.methods})
    lines = [
        f"# Report: experiment `{coll.experiment}`",
        "",
        f"- Results: `{coll.results_dir}` ({len(coll.envs)} env(s): {', '.join(coll.envs)}; "
        f"{len(coll.methods)} method(s): {', '.join(coll.label(m) for m in coll.methods)})"
        + (f"; filters: {'; '.join(filters)}" if filters else ""),
        "- Overrides common to every method (not repeated in labels): " + (f"`{common}`" if common else "none")
        + ".",
        f"- Results as of: {opts.as_of or results_as_of(coll)}",
        f"- Final score of a run: {final} (episode return, mean over the episodes that finished in the window).",
        f"- Normalisation for cross-env aggregates: {describe_normalisation(opts.normalisation, reference)}.",
        f"- Uncertainty: stratified bootstrap over runs (seeds), never over episodes; {opts.reps} reps, "
        f"seed {opts.seed}, 95% percentile intervals (rliable).",
        "- Windows in which no episode finished carry the previous window's return (not a failure). Failed seeds "
        "(NaN returns in windows where episodes finished, or missing windows) are "
        + ("kept with those windows forward-filled." if coll.keep_failed else "excluded from all statistics.")
        + " Incomplete runs (no summary.json) are "
        + ("shown as partial curves, without final scores." if coll.include_incomplete else "excluded.")
        + " All of them are listed under *Data* below.",
    ]
    if 0 < n_min < MIN_SEEDS_FOR_CI:
        lines.append(f"- **Few seeds.** {few_seeds_note(n_min)}")
    if any(not coll.method_info[m].primary or coll.method_info[m].variant != "base" for m in coll.method_info):
        lines += ["", "**Methods** (a method is a bonus with one set of hyperparameter overrides, its *variant*):", "",
                  methods_markdown(coll)]
    lines.append("")
    return "\n".join(lines)


def build_report(coll: Collection, out_dir: str | Path, options: ReportOptions | None = None,
                 only: list[str] | None = None, strict: bool = False,
                 makers: tuple[tuple[str, Maker], ...] = MAKERS) -> ReportResult:
    """Run ``makers`` in order (all, or those named in ``only``) and write ``out_dir/index.md``.
    A maker that raises is reported in index.md and in ReportResult.errors (re-raised when
    ``strict``)."""
    options = options or ReportOptions()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    ctx = ReportContext(coll, options)
    sections: list[Section] = []
    errors: list[str] = []
    for name, fn in makers:
        if only is not None and name not in only:
            continue
        try:
            made = fn(ctx, out_dir)
        except Exception as exc:
            if strict:
                raise
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
            sections.append(Section(f"{name} (failed)", "```\n" + traceback.format_exc(limit=4) + "```"))
            continue
        if made is None:
            continue
        sections.extend(made if isinstance(made, list) else [made])
    body = [_header(coll, options)]
    for s in sections:
        body.append(f"## {s.title}\n\n{s.markdown.strip()}\n")
    index = out_dir / "index.md"
    index.write_text("\n".join(body))
    return ReportResult(index, sections, errors)
