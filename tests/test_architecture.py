"""The layer boundaries of docs/architecture.md, checked on the code itself."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rfig_exp.bonuses import bonus_names

ROOT = Path(__file__).resolve().parents[1]

SRC = ROOT / "src"

# The layers of rfig_exp, bottom first: a module imports only modules of its own layer and of the
# layers before it. Each layer is one package; a new module is checked by being in its package, and
# a module outside every package fails test_every_module_is_in_a_layer.
LAYERS = ("config", "results", "envs", "bonuses", "agents", "run", "launch")
# Every module of these packages imports no JAX, directly or not: a config is checked, a results tree
# read and a sweep planned without a compiler or an accelerator.
JAX_FREE_LAYERS = ("config", "results", "launch")
# The core's declarations: where an env suite, a bonus or the agent declares its settings, beside its
# code and without JAX (a bonus's module imports what it computes with only when the bonus is made).
# The config layer reads them to build a RunSpec, so they are the one way it may import upwards.
DECLARATIONS = ("rfig_exp.envs", "rfig_exp.envs.settings", "rfig_exp.envs.mazes", "rfig_exp.bonuses",
                "rfig_exp.bonuses.settings", *(f"rfig_exp.bonuses.{b}" for b in bonus_names()),
                "rfig_exp.agents", "rfig_exp.agents.ppo", "rfig_exp.agents.ppo.config")
# analysis reads the results tree through the results layer; these modules of it load no JAX either.
ANALYSIS_JAX_FREE = ("analysis.collect", "analysis.names")


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted((SRC / "rfig_exp").rglob("*.py"))}


def _layer(module: str) -> str | None:
    """The layer of a module of rfig_exp: its top-level package under rfig_exp (None: rfig_exp itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _imported(path: Path) -> list[tuple[int, str]]:
    """(line, module) of each rfig_exp module that ``path`` imports, at its top or inside a function:
    ``from rfig_exp.x import y`` counts as ``rfig_exp.x.y`` when that is a module, else ``rfig_exp.x``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "rfig_exp"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "rfig_exp":
            base = node.module or ""
            out += [(node.lineno, f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base) for a in node.names]
    return out


def test_every_module_is_in_a_layer():
    loose = [m for m in MODULES if m != "rfig_exp" and _layer(m) not in LAYERS]
    assert not loose, f"modules outside the layers {LAYERS}: {loose}"


def test_no_layer_imports_a_layer_above_it():
    upward = []
    for module, path in MODULES.items():
        here = LAYERS.index(_layer(module)) if _layer(module) else -1
        for line, target in _imported(path):
            there = LAYERS.index(_layer(target)) if _layer(target) else -1
            if there > here and not (_layer(module) == "config" and target in DECLARATIONS):
                upward.append(f"{path.relative_to(ROOT)}:{line} ({_layer(module)}) imports {target} ({_layer(target)})")
    assert not upward, "imports of a layer above: " + "; ".join(upward)


def test_the_check_sees_an_upward_import():
    """The layer check reads imports inside functions too, and resolves a ``from`` import to the module."""
    found = _imported(MODULES["rfig_exp.config.variants"])
    assert any(t == "rfig_exp.config.run_spec" for _, t in found), found  # imported inside not_hyperparameters


def test_the_docs_name_every_module_and_layer():
    """docs/architecture.md's layout names every module (a bonus's own module aside: a new bonus
    touches no other file), and the page every layer."""
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    layout = architecture[architecture.index("\n## Layout"):].split("\n## ")[1]  # up to the next section, if any
    unnamed = [str(p.relative_to(ROOT)) for p in [*MODULES.values(), *ROOT.joinpath("analysis").rglob("*.py")]
               if p.stem not in ("__init__", "__main__", *bonus_names()) and p.name not in layout]
    assert not unnamed, f"modules docs/architecture.md's Layout section does not name: {unnamed}"
    assert [layer for layer in LAYERS if f"{layer}/" not in architecture] == []


JAX_FREE = [*(m for m in MODULES if _layer(m) in JAX_FREE_LAYERS), *DECLARATIONS, *ANALYSIS_JAX_FREE]


def _python(code: str) -> list[str]:
    """Run ``code`` in a fresh interpreter from the repository root (src/ first on the path); its
    stdout lines. A non-zero exit fails the test with the interpreter's stderr."""
    out = subprocess.run([sys.executable, "-c", "import sys; sys.path[:0] = ['src', '.']\n" + code],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.splitlines()


def _build_specs(jobs: list[list[str]]) -> str:
    """Code that builds the run spec of each job (a list of overrides), printing each ConfigError,
    then whether JAX got imported."""
    return ("from hydra import compose, initialize_config_dir\n"
            "from rfig_exp.config.run_spec import build_run_spec\n"
            "from rfig_exp.config.errors import ConfigError\n"
            f"with initialize_config_dir(config_dir={str(ROOT / 'conf')!r}, version_base='1.3'):\n"
            f"    for job in {jobs!r}:\n"
            "        try:\n"
            "            build_run_spec(compose('config', overrides=job))\n"
            "        except ConfigError as err:\n"
            "            print(err)\n"
            "print('jax' in sys.modules)")


@pytest.mark.parametrize("module", JAX_FREE)
def test_config_and_results_modules_import_no_jax(module):
    heavy = _python(f"import {module}\n"
                    "print(','.join(sorted(m for m in ('jax', 'jaxlib', 'flax', 'optax') if m in sys.modules)))")
    assert heavy == [""], f"importing {module} imports {heavy}"


def test_a_full_config_validates_without_jax():
    jobs = [[f"bonus={bonus}", "env=minatar_breakout"] for bonus in bonus_names()]
    assert _python(_build_specs(jobs)) == ["False"]  # no ConfigError printed, and no JAX


def test_a_bad_env_option_is_refused_without_jax():
    jobs = [["env=sparse_ant", "env.backend=nope"], ["env=deepsea", "env.size=0"],
            ["env=pointmaze_umaze", "env.dynamics=x"]]
    assert _python(_build_specs(jobs)) == ["env.backend='nope' must be one of generalized, positional, spring, mjx",
                                           "env.size=0 must be an integer >= 2",
                                           "env.dynamics='x' is not known; valid: pointax, mujoco", "False"]


def test_no_code_reaches_into_hydra_and_only_the_adapter_into_submitit():
    """Hydra through its public API only: no ``hydra._internal`` (nor a private attribute of its
    objects) anywhere; submitit's three internals only in rfig_exp/launch/hydra_adapter.py."""
    sources = [*ROOT.joinpath("src").rglob("*.py"), ROOT / "launch.py"]
    hydra_private = re.compile(r"hydra\._internal|\._return_value|core_plugins")
    offenders = [f"{p.relative_to(ROOT)}:{i}" for p in sources
                 for i, line in enumerate(p.read_text().splitlines(), 1) if hydra_private.search(line)]
    assert not offenders, f"Hydra internals: {offenders}"
    submitit_private = re.compile(r"_make_command|\._requeue\(|cloudpickle_dump")
    offenders = [f"{p.relative_to(ROOT)}:{i}" for p in sources if p.name != "hydra_adapter.py"
                 for i, line in enumerate(p.read_text().splitlines(), 1) if submitit_private.search(line)]
    assert not offenders, f"submitit internals outside rfig_exp/launch/hydra_adapter.py: {offenders}"


def test_the_adapter_refuses_a_submitit_it_was_not_written_for():
    out = _python("import submitit; submitit.__version__ = '2.0.0'\n"
                  "from rfig_exp.launch import hydra_adapter\n"
                  "try:\n    hydra_adapter.submitit_task_id()\nexcept ImportError as err:\n    print(err)\n")
    assert len(out) == 1 and "needs submitit 1.5.x" in out[0] and "found 2.0.0" in out[0], out


def test_preflight_imports_only_the_env_suites_of_the_sweep(tmp_path):
    """A sweep of gymnax envs makes its envs (gymnax, hence JAX) and nothing of the training: no
    run loop, no agent, no bonus code (a bonus module's declared settings are read: they import
    no JAX), no other suite."""
    code = ("from rfig_exp.launch.preflight import preflight\n"
            f"preflight(['-m', 'env=cartpole,acrobot', 'bonus=rfig,rnd', 'results_dir={tmp_path}'])\n"
            "print(sorted(m for m in ('gymnax', 'brax', 'rfig_exp.envs.pointmaze', 'rfig_exp.run.run_loop',\n"
            "      'rfig_exp.agents.ppo.train', 'rfig_exp.bonuses.base', 'rfig_exp.bonuses.rfig.bonus',\n"
            "      'rfig_exp.bonuses.nets') if m in sys.modules))")
    assert _python(code)[-1] == "['gymnax']"


def test_importing_the_package_changes_nothing_in_the_process():
    """The XLA and OpenBLAS settings are the entry points' to make (rfig_exp.set_cpu_flags)."""
    code = ("import os; before = dict(os.environ)\n"
            "import rfig_exp, rfig_exp.bonuses, rfig_exp.envs, rfig_exp.launch.preflight\n"
            "print(dict(os.environ) == before)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                         env={k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "OPENBLAS_NUM_THREADS")}
                         | {"PYTHONPATH": str(SRC)})
    assert out.stdout.strip() == "True", out.stderr[-2000:]


# What runs JAX: an entry point that imports any of these sets the CPU flags before it does.
_RUNS_JAX = re.compile(r"^\s*(import|from) (jax|flax|gymnax|optax|brax)\b|^\s*from rfig_exp\.(envs|bonuses|agents)\b"
                       r"|^\s*from rfig_exp\.run\.(experiment|run_loop)\b")


@pytest.mark.parametrize("path", [ROOT / "launch.py", ROOT / "tests" / "conftest.py", *ROOT.glob("examples/*.py"),
                                  *ROOT.glob("benchmarks/*.py"), *ROOT.glob("scripts/*.py")],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_each_entry_point_sets_the_cpu_flags_before_it_imports_jax(path):
    lines = path.read_text().splitlines()
    first = next((i for i, line in enumerate(lines) if _RUNS_JAX.search(line)), None)
    if first is None:
        return  # runs no JAX in this process
    flags = next((i for i, line in enumerate(lines) if "rfig_exp.set_cpu_flags()" in line), None)
    assert flags is not None and flags < first, f"{path.name}:{first + 1} imports JAX before rfig_exp.set_cpu_flags()"
