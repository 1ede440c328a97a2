"""rliable's stratified bootstrap with named seeds.

A report holds many intervals; each is drawn from a seed made of the report's seed and the names of
what it resamples (its panel, its method, what it measures), never from a position in a loop. So a
panel's interval is the same number in the published report, in a report of that panel alone and in
one where other methods sit beside it, and two statistics never share their draws by accident.
"""

from __future__ import annotations

import contextlib
import warnings
import zlib

import numpy as np


def stream_seed(seed: int, *names: object) -> int:
    """The seed of the bootstrap named ``names`` in a report seeded ``seed``: CRC-32 of their text,
    so the same on every machine and every Python (``hash`` of a str is salted per process)."""
    return zlib.crc32("|".join(map(str, (seed, *names))).encode())


@contextlib.contextmanager
def _seeded(seed: int):
    # rliable's StratifiedBootstrap draws from numpy's *global* RNG whatever
    # random_state says, so seed it here and restore it afterwards.
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # arch warns on degenerate (single-seed) resamples
            yield
    finally:
        np.random.set_state(state)


def bootstrap(score_dict: dict, func, reps: int, seed: int = 0, ci: float = 0.95):
    """rliable.library.get_interval_estimates, each key drawn from its own seed,
    ``stream_seed(seed, key)``: a key's interval does not depend on which other keys are beside it.

    score_dict: key -> (runs, tasks[, points]) array, or a tuple of arrays for
    paired metrics (independent stratified bootstrap). Returns
    (points: key -> (k,), intervals: key -> (2, k)).
    """
    from rliable import library

    points, intervals = {}, {}
    for key, scores in score_dict.items():
        own = stream_seed(seed, key)
        with _seeded(own):
            p, iv = library.get_interval_estimates({key: scores}, func, reps=reps, confidence_interval_size=ci,
                                                   random_state=np.random.RandomState(own))
        points[key], intervals[key] = p[key], iv[key]
    return points, intervals


__all__ = ["bootstrap", "stream_seed"]
