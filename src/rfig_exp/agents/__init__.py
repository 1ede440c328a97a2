"""The agents, found by name as the bonuses and the env suites are: ``agent=<name>`` is the package
``rfig_exp.agents.<name>``, whose ``config.py`` declares its settings (one
:class:`~rfig_exp.agents.contract.AgentSettingsBase` subclass with that ``name``, without JAX) and whose
``train.py`` makes its trainer (``make_trainer``, ``as_arrays``: JAX, imported only to train).

Beside the agents, this package holds what any agent's side of a bonus is made of (``intrinsic``,
``replay``, ``normalization``, ``returns``, ``metrics``, ``seeds``, ``warmup``, ``shapes``,
``signal``). Nothing here imports JAX.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
from types import ModuleType

from rfig_exp.agents.contract import AgentSettingsBase
from rfig_exp.config import folders
from rfig_exp.config.errors import ConfigError

DEFAULT_AGENT = "ppo"  # conf/config.yaml's; a run of another agent names it in its variant


def agent_names() -> list[str]:
    """Every agent, sorted: the files of ``conf/agent/``; without the project's ``conf/`` (a wheel),
    the packages of this one that have a ``config.py``."""
    if folders.CONF_DIR.is_dir():
        return folders.group_options("agent")
    return sorted(m.name for m in pkgutil.iter_modules(__path__)
                  if m.ispkg and importlib.util.find_spec(f"{__name__}.{m.name}.config") is not None)


@functools.cache
def settings_class(name: str) -> type[AgentSettingsBase]:
    """The settings class agent ``name``'s ``config.py`` declares (imported; its top imports no JAX)."""
    module_name = f"{__name__}.{name}.config"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name not in (module_name, f"{__name__}.{name}"):
            raise
        raise ConfigError(f"agent={name} has conf/agent/{name}.yaml but no module {module_name}") from None
    found = [c for c in vars(module).values() if isinstance(c, type) and issubclass(c, AgentSettingsBase)
             and c.__module__ == module_name and c.name == name]
    if len(found) != 1:
        raise ConfigError(f"{module_name} must declare one AgentSettingsBase subclass with name = {name!r}; "
                          f"found {[c.__name__ for c in found]}")
    return found[0]


def trainer_module(settings: AgentSettingsBase) -> ModuleType:
    """The agent's ``train`` module (JAX): ``make_trainer(train_spec, env, bonus)`` and ``as_arrays``."""
    return importlib.import_module(f"{__name__}.{settings.name}.train")
