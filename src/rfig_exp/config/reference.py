"""What the declared settings say to a reader, written from the declarations: conf/'s YAML, the
configuration page, ``launch.py --help``'s list of keys, and the defaults a variant is named against.

Every setting is declared once, with its default, rule, kind and one-line doc (``rfig_exp.config.settings``):
the run's (``rfig_exp.config.run_spec.RunSettings``), the agent's, each bonus's and each env's. From
these, this module writes

- each group file of ``conf/`` (``agent/ppo.yaml``, ``bonus/<name>.yaml``, ``env/<name>.yaml``):
  its header comment as it stands, then ``name`` and every setting with its default and doc;
- the run's settings in ``conf/config.yaml``, between its two marker lines;
- ``docs/configuration.md``, a table per group.

``python -m rfig_exp.config.reference`` rewrites them; ``--check`` says which are out of date (a
test runs it). :func:`written_defaults` is the same defaults as a composed config holds them, which
``rfig_exp.config.variants`` names a run's variant against. Nothing here imports JAX.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import Any, Iterator, Mapping

from rfig_exp.config.settings import RUN, STATIC, TRACED, Declared, Settings, declared

ROOT = Path(__file__).resolve().parents[3]
CONF = ROOT / "conf"
PAGE = ROOT / "docs" / "configuration.md"
BEGIN = "# -- the run's settings, written from their declarations (python -m rfig_exp.config.reference) --"
END = "# -- end of the run's settings --"
COMMENT_COLUMN = 30  # where a setting's doc starts in conf/'s files


def as_written(value: Any) -> Any:
    """A declared default as a config holds it: tuples as lists."""
    if isinstance(value, (tuple, list)):
        return [as_written(v) for v in value]
    if isinstance(value, dict):
        return {k: as_written(v) for k, v in value.items()}
    return value


def _scalar(value: Any) -> str:
    import yaml  # here: the bonuses' library use has no PyYAML

    return yaml.safe_dump(value, default_flow_style=True, width=10_000).removesuffix("\n...\n").strip()


def _settings_lines(fields: Mapping[str, Any], docs: Mapping[str, str], indent: str = "") -> Iterator[str]:
    """``key: value  # doc`` per field, a long list as a block, a group as a nested block."""
    for key, value in fields.items():
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


def _fields(cls: type[Settings], values: Mapping[str, Any] | None = None) -> tuple[dict, dict]:
    """``(values as written, docs)`` of ``cls``'s declared settings, a group's nested."""
    values = cls.defaults() if values is None else values
    out: dict[str, Any] = {}
    docs: dict[str, Any] = {}
    for name, d in declared(cls):
        group = _group(d)
        if group is not None:
            out[name], docs[f"{name}.*"] = _fields(group)
        else:
            out[name] = as_written(values[name])
        docs[name] = d.doc
    return out, docs


def _group(d: Declared) -> type[Settings] | None:
    """The settings class of a nested group (``checkpoint``), None for a plain setting."""
    return d.group


def _header(path: Path) -> list[str]:
    """The comment lines at the top of a file (what it is, by hand), kept when it is rewritten."""
    lines = path.read_text().splitlines() if path.exists() else []
    return [line for line in lines[:next((i for i, x in enumerate(lines) if not x.startswith("#")), len(lines))]]


def group_yaml(path: Path, name: str, cls: type[Settings], values: Mapping[str, Any] | None = None) -> str:
    """A group file: its header, ``name``, then every declared setting (``values``: the defaults)."""
    fields, docs = _fields(cls, values)
    return "\n".join([*_header(path), f"name: {name}", *_settings_lines(fields, docs)]) + "\n"


def config_yaml(path: Path) -> str:
    """``conf/config.yaml`` with the run's settings between its markers written anew."""
    from rfig_exp.config.run_spec import RunSettings

    text = path.read_text()
    start, end = text.index(BEGIN), text.index(END)
    fields, docs = _fields(RunSettings)
    return text[:start] + "\n".join([BEGIN, *_settings_lines(fields, docs), ""]) + text[end:]


def choice_settings(group: str, choice: str) -> tuple[type[Settings], dict] | None:
    """The settings class of built-in choice ``group=choice`` and its values as its file writes
    them; None for a choice that is not built in. Only that choice's declaration is imported."""
    if group == "agent":
        from rfig_exp.agents.ppo.config import AgentSettings

        return (AgentSettings, AgentSettings.defaults()) if choice == "ppo" else None
    if group == "bonus":
        from rfig_exp.bonuses import bonus_names, settings_class

        if choice not in bonus_names():
            return None
        cls = settings_class(choice)
        return cls, cls.defaults()
    from rfig_exp.envs import REGISTRY
    from rfig_exp.envs.settings import settings_class as env_settings_class

    if choice not in REGISTRY:
        return None
    suite, suite_id = REGISTRY[choice]
    env_class = env_settings_class(suite, suite_id)
    return env_class, env_class.written(choice, suite_id)


@functools.cache
def group_settings() -> dict[str, dict[str, tuple[type[Settings], dict]]]:
    """Every built-in choice of each group: ``{group: {choice: (settings class, its values)}}``."""
    from rfig_exp.bonuses import bonus_names
    from rfig_exp.envs import REGISTRY

    names = {"agent": ["ppo"], "bonus": bonus_names(), "env": list(REGISTRY)}
    return {group: {choice: found for choice in choices if (found := choice_settings(group, choice))}
            for group, choices in names.items()}


@functools.cache
def written_defaults(group: str, choice: str) -> dict | None:
    """The defaults of built-in choice ``group=choice`` as its composed config node holds them
    (``name`` first), from the declarations; None for a choice that is not built in."""
    found = choice_settings(group, choice)
    if found is None:
        return None
    cls, values = found
    return {"name": choice, **_fields(cls, values)[0]}


def run_defaults() -> dict:
    """The run's top-level settings (the groups' nested) as ``conf/config.yaml`` holds them."""
    from rfig_exp.config.run_spec import RunSettings

    return _fields(RunSettings)[0]


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
        group = _group(d)
        if group is not None:
            rows += [row for row in _table(group, f"{prefix}{name}.")[2:]]
            continue
        kind = KINDS[d.kind] + ("" if d.hyperparameter else ", not in the variant")
        default = _scalar(as_written(values[name])).replace("|", "\\|")
        rows.append(f"| `{prefix}{name}` | `{default}` | {kind} | {d.doc.replace('|', chr(92) + '|')} |")
    return rows


def configuration_page() -> str:
    from rfig_exp.config.run_spec import RunSettings
    from rfig_exp.envs.settings import BraxSettings, DeepSeaSettings, PointMazeSettings

    groups = group_settings()
    lines = [
        "# Configuration",
        "",
        "Every setting a run reads, with its default and what it is, as the code declares it (each",
        "setting once: its default, the rule that checks it, its kind and this line; `rfig_exp.config.settings`).",
        "The YAML files of `conf/` are written from the same declarations, and so is this page:",
        "`python -m rfig_exp.config.reference` rewrites them, and a test fails when one is out of date.",
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
        *_table(*groups["agent"]["ppo"][:1], "agent."),
        "",
        "## The bonuses: `bonus.*`, `conf/bonus/<name>.yaml`",
        "",
        "Every bonus has `bonus.beta`; the rest are its own.",
    ]
    for name, (cls, _) in groups["bonus"].items():
        lines += ["", f"### `bonus={name}`", "", *_table(cls, "bonus.")]
    suites = [("DeepSea: `env=deepsea`", DeepSeaSettings, None),
              ("sparse Brax: `env=sparse_*`", BraxSettings, None),
              ("PointMaze: `env=pointmaze_*`", PointMazeSettings, None)]
    lines += ["", "## The environments: `env.*`, `conf/env/<name>.yaml`", "",
              "The other gymnax envs (classic control, MinAtar) take no options."]
    for title, cls, values in suites:
        lines += ["", f"### {title}", "", *_table(cls, "env.", values)]
    return "\n".join(lines) + "\n"


def help_lines(width: int = 100) -> list[str]:
    """``launch.py --help``'s list of keys: every declared setting's name, by group."""
    import textwrap

    from rfig_exp.config.run_spec import RunSettings

    def names(cls: type[Settings], prefix: str = "") -> list[str]:
        out = []
        for name, d in declared(cls):
            group = _group(d)
            out += names(group, f"{prefix}{name}.") if group is not None else [f"{prefix}{name}"]
        return out

    groups = group_settings()
    entries = [("the run", names(RunSettings)), ("agent=ppo", names(groups["agent"]["ppo"][0], "agent."))]
    entries += [(f"bonus={b}", names(cls, "bonus.")) for b, (cls, _) in groups["bonus"].items()]
    seen: dict[tuple[str, ...], list[str]] = {}
    for env, (cls, _) in groups["env"].items():
        seen.setdefault(tuple(names(cls, "env.")), []).append(env)
    entries += [(f"env={_common_name(envs)}", list(keys)) for keys, envs in seen.items() if keys]
    lines = []
    for label, keys in entries:
        lines += textwrap.wrap(", ".join(keys), width, initial_indent=f"  {label:<17}", subsequent_indent=" " * 19)
    return lines


def _common_name(envs: list[str]) -> str:
    if len(envs) == 1:
        return envs[0]
    prefix = envs[0][:next((i for i in range(len(envs[0])) if any(e[:i + 1] != envs[0][:i + 1] for e in envs)),
                           len(envs[0]))]
    return f"{prefix}*"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only say which files are out of date (exit 1)")
    args = parser.parse_args(argv)
    stale = [path for path, text in written_files().items() if not path.exists() or path.read_text() != text]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is not what its declarations write: python -m rfig_exp.config.reference")
        return 1 if stale else 0
    for path, text in written_files().items():
        if path in stale:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
