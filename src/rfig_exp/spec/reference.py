"""``conf/``'s YAML and ``docs/configuration.md``, written from the declared settings.

Every setting is declared once, with its default, rule, kind and one-line doc (``rfig_exp.config.settings``):
the run's (``rfig_exp.config.run_settings.RunSettings``), the agent's, each bonus's and each env's,
named by ``rfig_exp.spec.registry``. From these, this module writes

- each group file of ``conf/`` (``agent/ppo.yaml``, ``bonus/<name>.yaml``, ``env/<name>.yaml``):
  its header comment as it stands, then ``name`` and every setting with its default and doc;
- the run's settings in ``conf/config.yaml``, between its two marker lines;
- ``docs/configuration.md``, a table per group.

``python -m rfig_exp.spec.reference`` rewrites them; ``--check`` says which are out of date (a
test runs it). A tool of the checkout, outside the runtime path: no run imports it (the run reads
the declarations themselves, through the registry), so nothing at run time reads ``docs/``.
Nothing here imports JAX.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Iterator, Mapping

from rfig_exp.agents import DEFAULT_AGENT
from rfig_exp.config.run_settings import RunSettings
from rfig_exp.config.settings import RUN, STATIC, TRACED, Settings, declared
from rfig_exp.envs.settings import declared_envs
from rfig_exp.spec.registry import as_written, fields, group_settings

ROOT = Path(__file__).resolve().parents[3]
CONF = ROOT / "conf"
PAGE = ROOT / "docs" / "configuration.md"
BEGIN = "# -- the run's settings, written from their declarations (python -m rfig_exp.spec.reference) --"
END = "# -- end of the run's settings --"
COMMENT_COLUMN = 30  # where a setting's doc starts in conf/'s files


def _scalar(value: Any) -> str:
    import yaml  # here: the bonuses' library use has no PyYAML

    return yaml.safe_dump(value, default_flow_style=True, width=10_000).removesuffix("\n...\n").strip()


def _settings_lines(written: Mapping[str, Any], docs: Mapping[str, str], indent: str = "") -> Iterator[str]:
    """``key: value  # doc`` per field, a long list as a block, a group as a nested block."""
    for key, value in written.items():
        doc = docs.get(key, "")
        if isinstance(value, dict):
            yield _commented(f"{indent}{key}:", doc)
            yield from _settings_lines(value, docs.get(f"{key}.*", {}), indent + "  ")  # type: ignore[arg-type]
        elif isinstance(value, list) and len(_scalar(value)) > COMMENT_COLUMN:
            yield _commented(f"{indent}{key}:", doc)
            yield from (f"{indent}  - {_scalar(v)}" for v in value)
        else:
            yield _commented(f"{indent}{key}: {_scalar(value)}", doc)


def _commented(line: str, doc: str) -> str:
    return f"{line:<{COMMENT_COLUMN}}  # {doc}".rstrip() if doc else line


def _header(path: Path) -> list[str]:
    """The comment lines at the top of a file (what it is, by hand), kept when it is rewritten."""
    lines = path.read_text().splitlines() if path.exists() else []
    return [line for line in lines[:next((i for i, x in enumerate(lines) if not x.startswith("#")), len(lines))]]


def group_yaml(path: Path, name: str, cls: type[Settings], values: Mapping[str, Any] | None = None) -> str:
    """A group file: its header, ``name``, then every declared setting (``values``: the defaults)."""
    written, docs = fields(cls, values)
    return "\n".join([*_header(path), f"name: {name}", *_settings_lines(written, docs)]) + "\n"


def config_yaml(path: Path) -> str:
    """``conf/config.yaml`` with the run's settings between its markers written anew."""
    text = path.read_text()
    start, end = text.index(BEGIN), text.index(END)
    written, docs = fields(RunSettings)
    return text[:start] + "\n".join([BEGIN, *_settings_lines(written, docs), ""]) + text[end:]


def written_files() -> dict[Path, str]:
    """Each file written from the declarations, and its text."""
    files = {CONF / "config.yaml": config_yaml(CONF / "config.yaml")}
    for group, choices in group_settings().items():
        for name, (cls, values) in choices.items():
            path = CONF / group / f"{name}.yaml"
            files[path] = group_yaml(path, name, cls, values)
    files[PAGE] = configuration_page()
    return files


# -- docs/configuration.md ----------------------------------------------------------------------

KINDS = {STATIC: "static", TRACED: "traced", RUN: "run"}


def _table(cls: type[Settings], prefix: str, values: Mapping[str, Any] | None = None) -> list[str]:
    values = cls.defaults() if values is None else values
    rows = ["| key | default | kind | what it is |", "|---|---|---|---|"]
    for name, d in declared(cls):
        if d.group is not None:
            rows += [row for row in _table(d.group, f"{prefix}{name}.")[2:]]
            continue
        kind = KINDS[d.kind] + ("" if d.hyperparameter else ", not in the variant")
        default = _scalar(as_written(values[name])).replace("|", "\\|")
        rows.append(f"| `{prefix}{name}` | `{default}` | {kind} | {d.doc.replace('|', chr(92) + '|')} |")
    return rows


def configuration_page() -> str:
    groups = group_settings()
    lines = [
        "# Configuration",
        "",
        "Every setting a run reads, with its default and what it is, as the code declares it (each",
        "setting once: its default, the rule that checks it, its kind and this line; `rfig_exp.config.settings`).",
        "The YAML files of `conf/` are written from the same declarations, and so is this page:",
        "`python -m rfig_exp.spec.reference` rewrites them, and a test fails when one is out of date.",
        "",
        "Kinds: *static* settings fix a shape or a structure of the compiled training function (a new",
        "value compiles anew); *traced* ones are its arguments (numbers, float32); *run* settings are",
        "read by the run around it (the budget, where results go). A run's variant, the folder its",
        "results go to, names every setting that differs from its default, except those marked",
        "*not in the variant*. A bad value is refused before anything starts, one line naming its key.",
        "",
        "## The run: `conf/config.yaml`",
        "",
        *_table(RunSettings, ""),
        "",
        "## The agent: `agent.*`, `conf/agent/ppo.yaml`",
        "",
        *_table(*groups["agent"][DEFAULT_AGENT][:1], "agent."),
    ]
    for name, (cls, _) in groups["agent"].items():  # the other agents, agent=<name>: a section each
        if name != DEFAULT_AGENT:
            lines += ["", f"## The agent `agent={name}` ({getattr(cls, 'label', name)}): `agent.*`, "
                          f"`conf/agent/{name}.yaml`", "", *_table(cls, "agent.")]
    lines += [
        "",
        "## The bonuses: `bonus.*`, `conf/bonus/<name>.yaml`",
        "",
        "Every bonus has `bonus.beta`; the rest are its own.",
    ]
    for name, (cls, _) in groups["bonus"].items():
        lines += ["", f"### `bonus={name}`", "", *_table(cls, "bonus.")]
    # a section per settings class that titles one (its suite's declaration), in the order of the envs
    sections = list(dict.fromkeys(env.settings for env in declared_envs().values() if env.settings.section))
    lines += ["", "## The environments: `env.*`, `conf/env/<name>.yaml`", "",
              "Envs that no section below names take no options."]
    for cls in sections:
        lines += ["", f"### {cls.section}", "", *_table(cls, "env.")]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only say which files are out of date (exit 1)")
    args = parser.parse_args(argv)
    stale = [path for path, text in written_files().items() if not path.exists() or path.read_text() != text]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is not what its declarations write: python -m rfig_exp.spec.reference")
        return 1 if stale else 0
    for path, text in written_files().items():
        if path in stale:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
