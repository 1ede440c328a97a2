"""A run's composition, above the components: names to declarations, defaults, the run spec.

``registry`` maps each config group's names to the settings the components declare (the agent,
each bonus, each env); ``defaults`` derives from those declarations the defaults a run's variant
is named against; ``run_spec`` makes a composed config a frozen ``RunSpec``. ``reference`` writes
``conf/`` and ``docs/configuration.md`` from the declarations: a tool of the checkout, run by hand
or by a test, that no run imports. Nothing in this package imports JAX (``tests/test_architecture.py``).
"""
