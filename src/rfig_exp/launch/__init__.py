"""From the command line to the jobs, without JAX.

``preflight`` checks a whole command line before anything starts and plans a sweep once:
``sweep_plan`` expands it into its grouped jobs, with ``env_options`` (env keys applied to the envs
that have them) and ``grouping`` (seeds per job); ``hydra_adapter``, the only code that touches
Hydra's and submitit's internals, hands Hydra the command line and the plan; ``slurm`` checks a
SLURM request and ``retry`` requeues a stalled submitit task; ``estimate`` (with ``estimate_sweep``,
``estimate_throughput``) prices a sweep before it is launched. Nothing here imports JAX until
preflight makes a sweep's envs.
"""
