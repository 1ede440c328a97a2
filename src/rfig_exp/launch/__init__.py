"""From the command line to the jobs, without JAX.

``preflight`` checks a whole sweep before anything starts; ``sweep_plan`` expands a sweep into its
grouped jobs (preflight's and the sweeper's one path), with ``env_options`` (env keys applied to the
envs that have them) and ``grouping`` (seeds per job); ``hydra_adapter`` is the only code that
touches Hydra's and submitit's internals; ``slurm`` builds a SLURM request and ``retry`` relaunches
a stalled job; ``estimate`` (with ``estimate_sweep``, ``estimate_throughput``) prices a sweep
before it is launched. Nothing here imports JAX until preflight makes a sweep's envs.
"""
