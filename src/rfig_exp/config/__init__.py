"""The run's settings, declared once and checked without JAX.

``settings`` declares a setting (default, rule, kind, doc) and parses a group; ``validation`` holds
the checks, each naming its config key; ``errors`` every error with its exit code; ``variants`` a
run's variant as a folder name; ``run_spec`` makes the composed config a frozen ``RunSpec``;
``reference`` writes conf/'s YAML, docs/configuration.md and ``--help``'s keys from the declarations. The component
packages (``envs``, ``bonuses``, ``agents``) declare their settings with these, beside their code.
Nothing in this package imports JAX (``tests/test_architecture.py``).
"""
