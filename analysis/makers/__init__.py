"""Report makers of their own modules: state coverage (``coverage``) and hyperparameter sensitivity
(``sensitivity``); ``analysis.report.MAKERS`` lists them with the others, in report order."""
