"""The paper's claims judged on a collection of runs: the rule book (``verdicts``, ``pooled``), the
claims (``claims``, ``claim_rows``, ``sensitivity_claims``), when each rule was fixed
(``rule_history``), the noise control and the signal audit (``control``, ``signal``) and the
theory figure (``theory_plot``)."""
