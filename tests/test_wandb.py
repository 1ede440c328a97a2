"""wandb as a researcher browses it: the labels of a real offline run, read back from its .wandb
file with wandb's own reader, and `make wandb-sync`'s choice of runs and command (no server here:
the uploader is replaced by `wandb sync --dry-run`, which reads the same files and talks to no one)."""

import csv
import json
import shlex
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT, TINY, compose_config

from rfig_exp.config.errors import ConfigError
from rfig_exp.results import wandb_sync
from rfig_exp.run.experiment import run_experiment
from rfig_exp.run.tracking import MAX_TAG, run_labels

EXPERIMENT = "browse"


@pytest.fixture(scope="module")
def offline_sweep(tmp_path_factory):
    """One tiny job of two vmapped seeds, logged offline as wandb runs beside its results."""
    root = tmp_path_factory.mktemp("results")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("WANDB_MODE", raising=False)
        summaries = run_experiment(compose_config(*TINY, "env=cartpole", "bonus=none", "num_seeds=2",
                                                  "wandb.mode=offline", "wandb.tags=[mine]",
                                                  f"experiment={EXPERIMENT}", f"results_dir={root}"))
    assert [s.status for s in summaries] == ["complete", "complete"]
    (cell,) = (root / EXPERIMENT / "cartpole" / "none").iterdir()
    return root, cell


def read_back(run_dir):
    """The records of an offline run, as wandb's transaction-log reader prints them."""
    out = subprocess.run([sys.executable, "-m", "wandb", "leet", "inspect", "--json", str(run_dir)],
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def test_offline_runs_carry_project_group_job_type_tags_config_and_history(offline_sweep):
    root, cell = offline_sweep
    variant = cell.name
    for seed in (0, 1):
        seed_dir = cell / f"seed_{seed}"
        (run_dir,) = (seed_dir / "wandb").glob("offline-run-*")
        records = read_back(run_dir)
        (run,) = [r["run"] for r in records if r["type"] == "run"]
        assert run["project"] == "rfig-exp"
        assert run["run_group"] == f"{EXPERIMENT}/cartpole/none/{variant}"
        assert run["job_type"] == EXPERIMENT
        assert run["display_name"] == f"cartpole/none/{variant}/seed_{seed}"
        assert run["tags"][:2] == ["env:cartpole", "bonus:none"] and run["tags"][3:] == ["mine"]
        assert run["tags"][2].startswith("variant:") and len(run["tags"][2]) <= MAX_TAG
        config = run["config"]["update"]
        assert config["seed"] == seed and config["env"]["name"] == "cartpole" and config["experiment"] == EXPERIMENT
        assert config["agent"]["total_timesteps"] == 256
        with open(seed_dir / "metrics.csv") as f:
            rows = list(csv.DictReader(f))
        history = [r["history"] for r in records if r["type"] == "history"]
        assert [h["step"].get("num", 0) for h in history] == [int(r["env_steps"]) for r in rows]
        for h, row in zip(history, rows):
            assert h["item"]["episode_return"] == pytest.approx(float(row["episode_return"]), rel=1e-6)
        assert [r["exit"].get("exit_code", 0) for r in records if r["type"] == "exit"] == [0]


def test_run_labels_fit_wandb_and_refuse_a_tag_it_would_refuse():
    long_variant = "bonus.lengthscale_method=valko_fixed_point,bonus.reg=10,bonus.rho="
    labels = run_labels("sens", "mountaincar", "rfig", long_variant + "0.125", tags=["v2", "bonus:rfig"])
    assert labels.group == f"sens/mountaincar/rfig/{long_variant}0.125"
    assert labels.job_type == "sens" and labels.name(3) == labels.folder + "/seed_3"
    assert labels.tags[:2] == ("env:mountaincar", "bonus:rfig") and labels.tags[3:] == ("v2",)  # no duplicate
    other = run_labels("sens", "mountaincar", "rfig", long_variant + "0.25")
    assert len(labels.tags[2]) == MAX_TAG and labels.tags[2] != other.tags[2]  # cut, still told apart
    assert run_labels("e", "cartpole", "none", "base", group="mine").group == "mine"
    with pytest.raises(ConfigError, match="wandb.tags: 'x+' is 65 characters"):
        run_labels("e", "cartpole", "none", "base", tags=["x" * 65])


def sync_cli(root, *args):
    return subprocess.run([sys.executable, "-m", "rfig_exp.results.wandb_sync", "--results", str(root),
                           "--experiment", EXPERIMENT, *args], capture_output=True, text=True, timeout=180, cwd=ROOT)


def test_wandb_sync_uploads_only_what_wandb_has_not_marked_synced(offline_sweep, tmp_path):
    source, _ = offline_sweep
    root = tmp_path / "results"
    shutil.copytree(source / EXPERIMENT, root / EXPERIMENT)
    (cell,) = (root / EXPERIMENT / "cartpole" / "none").iterdir()
    runs = [next((cell / f"seed_{s}" / "wandb").glob("offline-run-*")) for s in (0, 1)]
    assert wandb_sync.plan(root, [EXPERIMENT]).to_sync == runs

    # What wandb writes once it has uploaded a run (wandb sync skips such runs itself).
    (wandb_file,) = runs[0].glob("*.wandb")
    wandb_file.with_name(wandb_file.name + ".synced").touch()
    (cell / "seed_1" / "owner.json").write_text("{}")  # seed 1's job still runs
    assert wandb_sync.plan(root, [EXPERIMENT]) == wandb_sync.SyncPlan(to_sync=[], synced=runs[:1],
                                                                       training=runs[1:])
    (cell / "seed_1" / "owner.json").unlink()
    assert wandb_sync.plan(root, [EXPERIMENT]).to_sync == runs[1:]

    dry = sync_cli(root, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "1 offline runs to upload, 1 already uploaded, 0 of seeds still held" in dry.stdout
    assert "would run: " + shlex.join([sys.executable, "-m", "wandb", "sync", str(runs[1])]) in dry.stdout

    # The real uploader's own dry run as the stand-in: wandb agrees on the one run to upload,
    # uploads nothing, so no run gets its marker and the sync says so.
    out = sync_cli(root, "--command", f"{sys.executable} -m wandb sync --dry-run")
    assert "$ " + shlex.join([sys.executable, "-m", "wandb", "sync", "--dry-run", str(runs[1])]) + "\n" in out.stdout
    would = out.stdout + out.stderr
    assert "Would sync 1 run(s)" in would and runs[1].name in would and runs[0].name not in would
    assert out.returncode == 1 and "0 of 1 runs uploaded" in out.stdout and "carry no .synced marker" in out.stderr

    wandb_file, = runs[1].glob("*.wandb")
    wandb_file.with_name(wandb_file.name + ".synced").touch()
    done = sync_cli(root, "--command", "false")
    assert done.returncode == 0 and "nothing to upload" in done.stdout and "$ false" not in done.stdout


def test_make_wandb_sync_hands_its_variables_to_the_uploader():
    out = subprocess.run(["make", "-n", "-s", "wandb-sync", "RESULTS=r", "EXPERIMENT=e", "WANDB_SYNC=up --x",
                          "DRY_RUN=1"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    said = " ".join(out.stdout.replace("\\\n", " ").split())
    assert '-m rfig_exp.results.wandb_sync --results r --experiment e --command "up --x" --dry-run' in said


def test_wandb_sync_reads_the_results_tree_without_jax():
    out = subprocess.run([sys.executable, "-c", "import sys, rfig_exp.results.wandb_sync; print('jax' in sys.modules)"],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.split() == ["False"], out.stderr[-2000:]
