"""Settings declared once: each is a field of a frozen dataclass that says its default, its rule
(the check of its value, whose error names its config key), its kind and its one-line doc, read by
one parser; the YAML files of ``conf/``, ``launch.py --help`` and ``docs/configuration.md`` are
written from these declarations (``rfig_exp.spec.reference``).

    @dataclass(frozen=True)
    class RNDSettings(BonusSettings):
        hidden: tuple[int, ...] = static((256, 256), Widths(), doc="hidden widths of both MLPs")
        lr: float = traced(1e-4, ABOVE_ZERO, doc="predictor Adam learning rate")

- :func:`static`: a shape or a structural choice, fixed when the compiled function is made;
- :func:`traced`: a numeric hyperparameter, an argument of the compiled function (a leaf of the
  settings as a JAX pytree: :meth:`Settings.pytree_fields`);
- :func:`setting`: read by the run but not by the compiled core (the budget, where results go);
  ``hyperparameter=False`` keeps it out of a run's variant name (``rfig_exp.config.variants``);
- :func:`group`: a nested group of settings (``checkpoint.*``).

``Settings.parse(node, prefix)`` reads every declared field of a config node in declaration order
(a missing key is an error naming it): its rule checks and converts the value, given the settings
read before it (a bound may name an earlier setting), then its ``check``, if any, tests what it
derives from them. The compiled function takes a settings object itself as its hyperparameters,
its traced settings the pytree's leaves, in declaration order. The defaults are the user-facing
ones of ``conf/`` (a test holds the YAML files to them).
Nothing here imports JAX.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping

from rfig_exp.config.validation import select

STATIC, TRACED, RUN = "static", "traced", "run"

# (value, full config key, the settings read before it) -> the checked value; raises ConfigError
Rule = Callable[[Any, str, Mapping[str, Any]], Any]
# (the settings read so far, the group's key prefix) -> None; raises ConfigError
Check = Callable[[Mapping[str, Any], str], None]


@dataclass(frozen=True)
class Declared:
    """One setting's declaration (a dataclass field's metadata)."""

    default: Any            # as a config writes it (a list as a tuple); the rule makes it the field's type
    rule: Rule
    kind: str               # STATIC | TRACED | RUN
    hyperparameter: bool = True
    check: Check | None = None
    doc: str = ""           # one line: what it is (conf/'s comments, --help and docs/configuration.md)
    group: type[Settings] | None = None  # a nested group's settings class (checkpoint.*)


def _field(default: Any, rule: Rule, kind: str, hyperparameter: bool = True, check: Check | None = None,
           doc: str = "", group: type[Settings] | None = None) -> Any:
    return dataclasses.field(metadata={"setting": Declared(default, rule, kind, hyperparameter, check, doc, group)})


def static(default: Any, rule: Rule, check: Check | None = None, doc: str = "") -> Any:
    """A setting that fixes a shape or a structure of the compiled function."""
    return _field(default, rule, STATIC, check=check, doc=doc)


def traced(default: Any, rule: Rule, check: Check | None = None, doc: str = "") -> Any:
    """A numeric hyperparameter: a float32 argument of the compiled function (a pytree leaf of its
    settings object, :meth:`Settings.pytree_fields`)."""
    return _field(default, rule, TRACED, check=check, doc=doc)


def setting(default: Any, rule: Rule, check: Check | None = None, hyperparameter: bool = True, doc: str = "") -> Any:
    """A setting of the run that the compiled function never sees."""
    return _field(default, rule, RUN, hyperparameter, check, doc)


def group(cls: type[Settings], hyperparameter: bool = True, doc: str = "") -> Any:
    """A nested group of settings (``checkpoint.*``), parsed by ``cls``."""
    def rule(node: Any, key: str, earlier: Mapping[str, Any]) -> Settings:
        return cls.parse(node, key + ".")

    return _field(cls.defaults(), rule, RUN, hyperparameter, doc=doc, group=cls)


def declared(cls: type) -> list[tuple[str, Declared]]:
    """``(name, declaration)`` of every declared field of ``cls``, in declaration order (a base
    class's first)."""
    return [(f.name, f.metadata["setting"]) for f in dataclasses.fields(cls) if "setting" in f.metadata]


@dataclass(frozen=True)
class Settings:
    """A group of declared settings (subclasses are frozen dataclasses of :func:`static`,
    :func:`traced`, :func:`setting` and :func:`group` fields, and plain fields given to ``parse``)."""

    PREFIX: ClassVar[str] = ""  # the key prefix of the config node it is read from ("agent.")
    # traced settings that another part's hyperparameters carry (bonus.beta: the agent's)
    HPARAMS_ELSEWHERE: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def parse(cls, node: Any, prefix: str | None = None, **given: Any) -> Any:
        """The settings of config node ``node``, its keys named ``prefix + name`` in errors
        (default ``PREFIX``); ``given``: the plain fields, known already (the rollout's batch size)."""
        prefix = cls.PREFIX if prefix is None else prefix
        values = dict(given)
        for name, d in declared(cls):
            values[name] = d.rule(select(node, name, prefix), prefix + name, values)
            if d.check is not None:
                d.check(values, prefix)
        return cls(**values)

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """Every declared setting's default, as written in ``conf/`` (a nested group as a dict)."""
        return {name: d.default for name, d in declared(cls)}

    @classmethod
    def pytree_fields(cls) -> tuple[list[str], list[str]]:
        """``(leaves, static)``: the fields of a settings object as a JAX pytree, the compiled
        function's hyperparameters (as flax.struct marks them): its traced settings (those of
        :attr:`HPARAMS_ELSEWHERE` aside) are the leaves, float32 scalars once the part is made
        (``rfig_exp.bonuses.base.float32_hparams``); every other field is static, fixed when the
        function is compiled."""
        leaves = [name for name, d in declared(cls) if d.kind == TRACED and name not in cls.HPARAMS_ELSEWHERE]
        return leaves, [f.name for f in dataclasses.fields(cls) if f.name not in leaves]
