"""From the command line to the compiled jobs, and a sweep's jobs run, without JAX.

``preflight`` checks a whole command line before anything starts and plans it once, as values:
``sweep_plan`` expands a sweep into its seed-grouped jobs, with ``env_options`` (env keys applied to
the envs that have them) and ``grouping`` (seeds per job); each job is composed and validated once,
and ``stacking`` puts jobs of one compiled program and different traced settings into one.
``runner`` runs a sweep's plan in this process or as submitit tasks, each job supervised by ``task``
(trained in a child process of its own, killed and started again when it stalls; ``supervision``
holds its stall clock and its signal forwarding); ``hydra_adapter`` holds what the project asks of
Hydra (its public API) and of submitit (its executor, and two internals, version-checked);
``slurm`` checks a SLURM request. Nothing here imports JAX until preflight makes a sweep's envs
(a job's child process imports the training code).
"""
