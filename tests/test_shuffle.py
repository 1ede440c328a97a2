"""The minibatch shuffle against numpy's lexicographic sort, and its uniformity."""

import itertools

import jax
import numpy as np
import pytest
from scipy import stats

from rfig_exp.bonuses.shuffle import index_bits, permutations, subsample


@pytest.mark.parametrize("n", [1, 2, 7, 128, 4096, 4097, 10_000])
def test_each_row_is_a_permutation(n):
    perms = np.asarray(permutations(jax.random.PRNGKey(n), 3, n))
    assert perms.shape == (3, n) and perms.dtype == np.int32
    for row in perms:
        np.testing.assert_array_equal(np.sort(row), np.arange(n))
    if n > 2:
        assert not np.array_equal(perms[0], perms[1])  # independent rows


@pytest.mark.parametrize("n", [5, 100, 4096])
def test_matches_a_sort_by_random_priority_then_index(n):
    # Independent computation: order indices by the random high bits of their key,
    # breaking ties by index (what the packed single-key sort must amount to).
    key = jax.random.PRNGKey(7)
    bits = np.asarray(jax.random.bits(key, (4, n), np.uint32)).astype(np.uint64)
    priority = bits >> index_bits(n)
    want = np.stack([np.lexsort((np.arange(n), p)) for p in priority])
    np.testing.assert_array_equal(np.asarray(permutations(key, 4, n)), want)


def test_all_orders_equally_likely():
    perms = np.asarray(permutations(jax.random.PRNGKey(0), 24_000, 4))
    index = {p: i for i, p in enumerate(itertools.permutations(range(4)))}
    counts = np.bincount([index[tuple(p)] for p in perms], minlength=24)
    assert stats.chisquare(counts).pvalue > 1e-3


def test_position_of_each_element_is_uniform():
    n = 64
    perms = np.asarray(permutations(jax.random.PRNGKey(1), 4000, n))
    positions = np.argsort(perms, axis=1)  # where each element landed
    for element in (0, n // 2, n - 1):
        counts = np.bincount(positions[:, element], minlength=n)
        assert stats.chisquare(counts).pvalue > 1e-3


def test_subsample_draws_distinct_indices():
    idx = np.asarray(subsample(jax.random.PRNGKey(3), 1000, 250))
    assert idx.shape == (250,) and len(set(idx.tolist())) == 250
    assert idx.min() >= 0 and idx.max() < 1000
    with pytest.raises(ValueError, match="cannot draw 5 distinct indices from 4"):
        subsample(jax.random.PRNGKey(0), 4, 5)
