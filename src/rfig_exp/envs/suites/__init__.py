"""The env suites, one module each, every one declaring its envs and their settings without JAX.

A module here is a suite: ``rfig_exp.envs.settings.declared_envs`` imports each one by its name
and reads its ``ENVS``. ``gymnax`` (classic control, MinAtar, DeepSea), ``brax`` (the sparse
locomotion tasks), ``pointmaze`` (our JAX PointMaze); each one's ``make(settings)`` builds an env
with its suite's code (``envs/gymnax_suite.py``, ``envs/brax_suite.py``, ``envs/pointmaze.py``),
imported only then.
"""
