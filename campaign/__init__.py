"""The reproduction of the paper: what only it uses, over the framework (``rfig_exp``) and the report
library (``analysis``), neither of which imports it. ``repro/`` runs and publishes the reproduction
(its stages, its committed data, its report); ``claims/`` judges the paper's claims (the rule book,
the claims and their verdicts, the signal audit, the theory figure); ``estimate*.py`` cost the
paper's grid and a sweep preset from measured runs and ``benchmarks/throughput.csv``."""
