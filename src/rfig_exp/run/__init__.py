"""One job's process: from a RunSpec to finished runs (JAX).

``experiment`` plans the job's seeds from the results tree, claims their folders and makes the env
and bonus; ``run_loop`` restores or initialises, runs the compiled windows and writes the summaries;
``observers`` act after each window (``checkpoint`` writes the per-seed checkpoints; ``Pulse``
tells the job's supervisor it is alive); ``tracking`` is the wandb mirror and the progress line; ``provenance``
records the machine and code; ``placement`` pins the job's cores and shares a GPU; ``logfile`` is
the log handler Hydra configures.
"""
