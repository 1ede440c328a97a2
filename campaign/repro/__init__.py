"""The published reproduction (``docs/results/repro/``): its stages, its compact committed data and
its report. ``python -m campaign.repro {restore,export,merge,build}`` (``build.py``);
``python -m campaign.repro.stages {list,commands}`` (``stages.py``, what ``campaign/scripts/repro.sh`` runs).
``data`` converts a results tree to the compact per-run data and back, ``cells`` says which cells a
grid expects and where each came from, ``made_by`` which stage made which runs and at what cost,
``sections`` draws the report's own sections."""
