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
# a module outside every package fails test_every_module_is_in_a_layer. `config` is the ground floor
# (how a setting is declared, checked and named); the components (`envs`, `bonuses`, `agents`)
# declare their settings with it; `spec` composes their declarations into a run's spec; `results`
# stores what a run makes.
LAYERS = ("config", "envs", "bonuses", "agents", "spec", "results", "run", "launch")
# Every module of these packages imports no JAX, directly or not: a config is checked, a results tree
# read and a sweep planned without a compiler or an accelerator.
JAX_FREE_LAYERS = ("config", "spec", "results", "launch")
# The components' declarations: where an env suite, a bonus or the agent declares its settings, beside
# its code and without JAX (a bonus's module imports what it computes with only when the bonus is made).
DECLARATIONS = ("rfig_exp.envs", "rfig_exp.envs.settings", "rfig_exp.envs.mazes", "rfig_exp.envs.suites",
                *(f"rfig_exp.envs.suites.{s}" for s in ("gymnax", "brax", "pointmaze")), "rfig_exp.bonuses",
                "rfig_exp.bonuses.settings", *(f"rfig_exp.bonuses.{b}" for b in bonus_names()),
                "rfig_exp.agents", "rfig_exp.agents.ppo", "rfig_exp.agents.ppo.config")
# analysis reads the results tree through the results layer; these modules of it load no JAX either,
# nor does the campaign's estimate (a sweep priced before it runs).
ANALYSIS_JAX_FREE = ("analysis.collect", "analysis.names", "campaign.estimate")


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p, SRC): p for p in sorted((SRC / "rfig_exp").rglob("*.py"))}
# The checkout's packages, bottom first, as LAYERS are within rfig_exp: the framework and library
# (src/), the report library over any results tree (analysis/), and the reproduction of the paper
# (campaign/), which imports both and which neither imports.
PACKAGES = ("rfig_exp", "analysis", "campaign")
# Every module whose imports the cycle check follows: the package, its Hydra plugin, analysis/ and campaign/.
ALL_MODULES = {**{_module_name(p, SRC): p for p in sorted(SRC.rglob("*.py"))},
               **{_module_name(p, ROOT): p for d in PACKAGES[1:] for p in sorted((ROOT / d).rglob("*.py"))}}


def _layer(module: str) -> str | None:
    """The layer of a module of rfig_exp: its top-level package under rfig_exp (None: rfig_exp itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _import_nodes(tree: ast.AST, typing_too: bool) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of a module, at its top or inside a function or a class; those under
    ``if TYPE_CHECKING:`` only when ``typing_too`` (they never run: the type checker reads them)."""
    out: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif isinstance(node, ast.If) and not typing_too and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def _targets(module: str, node: ast.Import | ast.ImportFrom, known: dict[str, Path]) -> list[str]:
    """The modules of ``known`` that one import statement of ``module`` names: ``from a.b import c``
    counts as ``a.b.c`` when that is a module, else ``a.b``; a relative import is resolved from
    ``module``'s package; a name that is no module counts as the nearest module above it."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".") if known[module].name == "__init__.py" else module.split(".")[:-1]
            base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    out = []
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            out.append(name)
    return out


def _imported(path: Path) -> list[tuple[int, str]]:
    """(line, module) of each rfig_exp module that ``path`` imports, at its top, inside a function or
    for the type checker only: ``from rfig_exp.x import y`` counts as ``rfig_exp.x.y`` when that is a
    module, else ``rfig_exp.x``."""
    module = next((m for m, p in ALL_MODULES.items() if p == path), path.stem)
    return [(node.lineno, target) for node in _import_nodes(ast.parse(path.read_text()), typing_too=True)
            for target in _targets(module, node, ALL_MODULES) if target.split(".")[0] == "rfig_exp"]


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the modules of ``modules`` that importing it runs the import of: each import
    statement that runs (at the top or inside a function, not under ``if TYPE_CHECKING:``), its
    own package too when it names it, and the packages above its target that are not above
    ``module`` itself (``import a.b.c`` runs ``a/__init__.py`` and ``a/b/__init__.py`` first)."""
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for node in _import_nodes(ast.parse(path.read_text()), typing_too=False):
            for target in _targets(module, node, modules):
                parts = target.split(".")
                above = {".".join(parts[:i]) for i in range(1, len(parts))} & set(modules)
                graph[module] |= {target} - {module}
                graph[module] |= {a for a in above if a != module and not module.startswith(a + ".")}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative):
    each a set of modules that import one another, however many steps apart."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_every_module_is_in_a_layer():
    loose = [m for m in MODULES if m != "rfig_exp" and _layer(m) not in LAYERS]
    assert not loose, f"modules outside the layers {LAYERS}: {loose}"


def test_no_layer_imports_a_layer_above_it():
    upward = []
    for module, path in MODULES.items():
        here = LAYERS.index(_layer(module)) if _layer(module) else -1
        for line, target in _imported(path):
            there = LAYERS.index(_layer(target)) if _layer(target) else -1
            if there > here:
                upward.append(f"{path.relative_to(ROOT)}:{line} ({_layer(module)}) imports {target} ({_layer(target)})")
    assert not upward, "imports of a layer above: " + "; ".join(upward)


def _package_imports_upward(modules: dict[str, Path]) -> list[str]:
    """Each import, at the top, inside a function or for the type checker, by a module of one of
    :data:`PACKAGES` (or of none: the Hydra plugin counts as the bottom) of a module of a later one."""
    upward = []
    for module, path in modules.items():
        top = module.split(".")[0]
        here = PACKAGES.index(top) if top in PACKAGES else 0
        for node in _import_nodes(ast.parse(path.read_text()), typing_too=True):
            for target in _targets(module, node, modules):
                if target.split(".")[0] in PACKAGES and PACKAGES.index(target.split(".")[0]) > here:
                    upward.append(f"{module}:{node.lineno} imports {target}")
    return upward


def test_no_package_imports_one_above_it():
    """Neither src/ nor analysis/ nor launch.py imports campaign/, and src/ imports no analysis/."""
    upward = _package_imports_upward({**ALL_MODULES, "launch": ROOT / "launch.py"})
    assert not upward, "imports of a package above: " + "; ".join(upward)


# A path into docs/ or benchmarks/ as code names it (a string that starts with it; a mention inside a
# docstring or a message does not count).
_CHECKOUT_DATA = re.compile(r"^(docs|benchmarks)(/|$)")
# A path into campaign/ (its presets in campaign/conf/, its data), or a search path to its config folder.
_CAMPAIGN_PATH = re.compile(r"^(file://)?campaign(/|$)")


def _checkout_paths(path: Path, pattern: re.Pattern = _CHECKOUT_DATA) -> list[str]:
    """``line 'text'`` of each string of ``path``'s code that names a path ``pattern`` matches (one
    under docs/ or benchmarks/ unless told)."""
    found = [node for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Constant) and isinstance(node.value, str) and pattern.search(node.value.strip())]
    return [f"{node.lineno} {node.value!r}" for node in sorted(found, key=lambda node: node.lineno)]


def test_the_package_and_analysis_read_nothing_from_docs_or_benchmarks():
    """What runs (the package, launch.py, analysis/) names no path under docs/ or benchmarks/: those
    are the checkout's pages and measurements, absent from an installed package. The one exception is
    spec/reference.py, the tool that writes docs/configuration.md, which nothing imports at run time
    (test_the_writer_of_conf_and_docs_is_outside_the_runtime_path)."""
    runs = [*ALL_MODULES.items(), ("launch", ROOT / "launch.py")]
    readers = [f"{path.relative_to(ROOT)}:{found}" for module, path in runs
               if module.split(".")[0] != "campaign" and module != "rfig_exp.spec.reference"
               for found in _checkout_paths(path)]
    assert not readers, f"paths into docs/ or benchmarks/ outside campaign/: {readers}"


def test_the_framework_reads_nothing_of_the_campaign():
    """The framework (the package, launch.py) and analysis/ name no path under campaign/ (its sweep
    presets in campaign/conf/, its data): the campaign composes its presets through Hydra's search path
    and reads them itself (campaign/presets.py), so a run, a sweep's plan and a report know nothing of
    it. Its imports: test_no_package_imports_one_above_it."""
    runs = [*ALL_MODULES.items(), ("launch", ROOT / "launch.py")]
    readers = [f"{path.relative_to(ROOT)}:{found}" for module, path in runs if module.split(".")[0] != "campaign"
               for found in _checkout_paths(path, _CAMPAIGN_PATH)]
    assert not readers, f"paths into campaign/ outside it: {readers}"


def test_the_package_checks_see_a_campaign_import_and_a_benchmarks_path(tmp_path):
    """An import of campaign/ inside a function of analysis/ is found, one by campaign/ of analysis/
    is not; a table read from benchmarks/ is found, a mention of it in a docstring is not; so are the
    campaign's config folder and its search path, and not a message that names the campaign."""
    files = {"analysis/__init__.py": "", "analysis/a.py": "def f():\n    from campaign.b import x\n    return x\n",
             "campaign/__init__.py": "", "campaign/b.py": "from analysis import a\nx = 1\n",
             "rfig_exp/__init__.py": "", "rfig_exp/t.py": (
                 '"""Reads benchmarks/throughput.csv."""\nfrom pathlib import Path\n'
                 'TABLE = Path(__file__).parents[2] / "benchmarks" / "throughput.csv"\n'),
             "rfig_exp/c.py": ('from pathlib import Path\nPRESETS = Path(__file__).parents[2] / "campaign" / "conf"\n'
                               'SEARCH = ["file://campaign/conf"]\nSAID = "campaign presets are elsewhere"\n')}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    modules = {_module_name(p, tmp_path): p for p in sorted(tmp_path.rglob("*.py"))}
    assert _package_imports_upward(modules) == ["analysis.a:2 imports campaign.b"]
    assert _checkout_paths(tmp_path / "rfig_exp" / "t.py") == ["3 'benchmarks'"]
    assert _checkout_paths(tmp_path / "rfig_exp" / "c.py", _CAMPAIGN_PATH) == ["2 'campaign'", "3 'file://campaign/conf'"]


def test_the_check_sees_an_upward_import():
    """The layer check reads imports inside functions too, and resolves a ``from`` import to the module."""
    found = _imported(MODULES["rfig_exp.launch.preflight"])
    assert any(t == "rfig_exp.spec.run_spec" for _, t in found), found  # imported inside validate_jobs


def test_no_import_cycle_in_the_package_or_analysis():
    """No module of ``src/``, ``analysis/`` or ``campaign/`` imports itself through others: every import that runs
    counts, at a module's top or inside a function, and so do the packages it runs on the way."""
    cycles = import_cycles(import_graph(ALL_MODULES))
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_check_finds_a_cycle_hidden_in_a_function(tmp_path):
    """A cycle closed by an import inside a function, or by a module that imports its own package
    (whose ``__init__`` imports it), is found; an import for the type checker only is not one."""
    files = {"pkg/__init__.py": "from pkg.low import x\n",
             "pkg/low.py": "x = 1\n\ndef late():\n    from pkg.high import y\n    return y\n",
             "pkg/high.py": "from pkg.low import x\ny = x\n",
             "own/__init__.py": "from own.sub import f\nNAMES = ()\n",
             "own/sub.py": "def f():\n    from own import NAMES\n    return NAMES\n",
             "other/__init__.py": "", "other/a.py": "import pkg.high\n",
             "typed/__init__.py": "", "typed/a.py": "from typed.b import z\n",
             "typed/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from typed.a import w\nz = 1\n"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    modules = {_module_name(p, tmp_path): p for p in sorted(tmp_path.rglob("*.py"))}
    assert sorted(import_cycles(import_graph(modules))) == [["own", "own.sub"], ["pkg.high", "pkg.low"]]


def test_the_writer_of_conf_and_docs_is_outside_the_runtime_path():
    """``spec/reference.py`` writes conf/'s YAML and docs/configuration.md; nothing of the package,
    of launch.py or of analysis/ imports it (a run reads the declarations through the registry), so no
    run reads docs/."""
    readers = [f"{path.relative_to(ROOT)}:{line}" for path in [*ALL_MODULES.values(), ROOT / "launch.py"]
               for line, target in _imported(path) if target == "rfig_exp.spec.reference"
               and path != MODULES["rfig_exp.spec.reference"]]
    assert not readers, f"imports of the conf/ and docs/ writer on the runtime path: {readers}"


def test_the_docs_name_every_module_and_layer():
    """docs/architecture.md's layout names every module (a bonus's own module aside: a new bonus
    touches no other file), and the page every layer."""
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    layout = architecture[architecture.index("\n## Layout"):].split("\n## ")[1]  # up to the next section, if any
    unnamed = [str(p.relative_to(ROOT)) for p in [*MODULES.values(), *ROOT.joinpath("analysis").rglob("*.py"),
                                                  *ROOT.joinpath("campaign").rglob("*.py")]
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
            "from rfig_exp.spec.run_spec import build_run_spec\n"
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
    objects) anywhere; submitit's one internal (its sacct poll) only in rfig_exp/launch/hydra_adapter.py."""
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
                                  *ROOT.glob("benchmarks/*.py"), *ROOT.glob("scripts/*.py"),
                                  *ROOT.glob("campaign/scripts/*.py")],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_each_entry_point_sets_the_cpu_flags_before_it_imports_jax(path):
    lines = path.read_text().splitlines()
    first = next((i for i, line in enumerate(lines) if _RUNS_JAX.search(line)), None)
    if first is None:
        return  # runs no JAX in this process
    flags = next((i for i, line in enumerate(lines) if "rfig_exp.set_cpu_flags()" in line), None)
    assert flags is not None and flags < first, f"{path.name}:{first + 1} imports JAX before rfig_exp.set_cpu_flags()"
