"""Drop-in report makers: every module in this package is imported when a
report is built, so a module here that uses ``analysis.registry.register_maker``
adds its figure or table to every report (see analysis/registry.py)."""
