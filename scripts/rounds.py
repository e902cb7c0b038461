"""Whether one side of a comparison script is off by more than a margin, beyond the noise of
its rounds.

On a VM whose idle vCPUs are slow to wake, one side's rounds of the same operation can
differ by 2× or more (where the client's threads land changes from run to run), and a
ratio of medians over a few rounds flips across a ±10 % line by chance. `beyond` asks
whether the rounds themselves show it: an exact one-sided rank-sum (Mann-Whitney) test of
one side's rounds against the other's scaled by the margin, over every way the pooled
rounds could have been split. It assumes nothing about the shape of the rounds' spread,
which is often bimodal here. Used by compare-go-bench.py and compare-ops-sweep.py.

`paired_beyond` asks the same of rounds taken in pairs, each pair's two runs back to back
(compare-ops-sweep.py runs an operation's `ops` and `sweep` one right after the other):
whether the pairs' ratios lie above (or below) the margin beyond their noise, by an exact
one-sided Wilcoxon signed-rank test of the ratios' logarithms against the margin's. A
drift of the machine between two pairs moves both sides of each alike, so it falls out of
the ratio, where an unpaired test of the rounds counts it as noise, or as a difference
when it falls on one side more than the other.

`leaning` asks the other question: whether many operations lean the same way, each by
less than the margin (one side of a comparison that runs something the other does not,
such as a probe that wakes its threads).

Checked by `python3 -m doctest scripts/rounds.py` (.ci/run).
"""

from itertools import combinations, product
from math import comb, log

# The level below which a difference counts as beyond the rounds' noise.
ALPHA = 0.05


def rank_sum_p(high, low):
    """The exact one-sided p-value that `high`'s values are larger than `low`'s: the share
    of the splits of the pooled values into groups of their sizes whose first group ranks
    at least as high as `high` does (ties count half).

    >>> rank_sum_p([5, 6, 7, 8], [1, 2, 3, 4])  # 1 split of 70
    0.014285714285714285
    >>> rank_sum_p([1, 2, 3, 4], [5, 6, 7, 8])
    1.0
    >>> rank_sum_p([3], [3])
    1.0
    """
    pooled = list(high) + list(low)
    # Mid-ranks: a group's rank sum orders the splits as its Mann-Whitney U does.
    ranks = [sum((w < v) + 0.5 * (w == v) for w in pooled) + 0.5 for v in pooled]
    observed = sum(ranks[: len(high)])
    splits = [sum(ranks[i] for i in s) for s in combinations(range(len(pooled)), len(high))]
    return sum(r >= observed - 1e-9 for r in splits) / len(splits)


def smallest_p(n, m):
    """The smallest p-value `rank_sum_p` can give with n and m rounds. With as many rounds
    a side, it is below `ALPHA` only from 4 (1/70; 3 give 1/20).

    >>> smallest_p(4, 4)
    0.014285714285714285
    >>> smallest_p(3, 3)
    0.05
    """
    return 1 / comb(n + m, n)


def beyond(side, base, factor):
    """Whether `side`'s rounds are above `base`'s times `factor` (factor > 1) or below them
    (factor < 1) beyond the rounds' noise: p < `ALPHA` in `rank_sum_p`. None when there
    are too few rounds for any verdict (`smallest_p` ≥ `ALPHA`).

    >>> beyond([120, 125, 130, 128], [100, 101, 99, 102], 1.10)
    True
    >>> beyond([112, 60, 118, 65], [100, 30, 99, 40], 1.10)  # two modes on each side
    False
    >>> beyond([80, 82, 79, 81], [100, 101, 99, 102], 0.90)
    True
    >>> beyond([120, 125], [100, 101], 1.10) is None
    True
    """
    if smallest_p(len(side), len(base)) >= ALPHA:
        return None
    scaled = [v * factor for v in base]
    p = rank_sum_p(side, scaled) if factor >= 1 else rank_sum_p(scaled, side)
    return p < ALPHA


def signed_rank_p(diffs):
    """The exact one-sided p-value that `diffs` are centred above 0: the share of the 2^n
    ways of giving their magnitudes signs whose positive rank sum is at least the observed
    one (Wilcoxon's signed-rank test; zeros left out, tied magnitudes given mid-ranks).

    >>> signed_rank_p([1, 2, 3, 4, 5, 6])  # all above: 1 way of 64
    0.015625
    >>> signed_rank_p([-1, -2, -3, -4, -5, -6])
    1.0
    >>> signed_rank_p([0, 0])
    1.0
    """
    d = [x for x in diffs if x != 0]
    if not d:
        return 1.0
    mags = [abs(x) for x in d]
    ranks = [sum((m < v) + 0.5 * (m == v) for m in mags) + 0.5 for v in mags]
    observed = sum(r for r, x in zip(ranks, d) if x > 0)
    sums = [sum(r for r, s in zip(ranks, signs) if s) for signs in product((0, 1), repeat=len(d))]
    return sum(w >= observed - 1e-9 for w in sums) / len(sums)


def paired_beyond(ratios, factor):
    """Whether paired rounds' `ratios` (one side / the other, each pair back to back) lie
    above `factor` (factor > 1) or below it (factor < 1) beyond their noise: p < `ALPHA`
    in `signed_rank_p` of log(ratio) - log(factor). None with fewer than 5 pairs, where
    no outcome reaches `ALPHA` (4 pairs: at best 1/16).

    >>> paired_beyond([1.20, 1.25, 1.18, 1.30, 1.22], 1.10)
    True
    >>> paired_beyond([1.20, 0.95, 1.18, 1.02, 1.22], 1.10)
    False
    >>> paired_beyond([0.80, 0.82, 0.85, 0.79, 0.81], 0.90)
    True
    >>> paired_beyond([1.2, 1.2, 1.2, 1.2], 1.10) is None
    True
    """
    if len(ratios) < 5:
        return None
    diffs = [log(r) - log(factor) for r in ratios if r > 0]
    p = signed_rank_p(diffs) if factor >= 1 else signed_rank_p([-x for x in diffs])
    return p < ALPHA


def leaning(ratios):
    """The two-sided exact sign-test p-value that ratios fall below 1 as often as above it
    (ratios of exactly 1 are left out): a small value says one side is systematically
    faster across operations, even when no single one is off by the margin.

    >>> round(leaning([0.9] * 20 + [1.1] * 5), 4)  # 20 of 25 one way
    0.0041
    >>> leaning([0.9, 1.1] * 10)
    1.0
    >>> leaning([])
    1.0
    """
    below = sum(1 for r in ratios if r < 1)
    above = sum(1 for r in ratios if r > 1)
    n = below + above
    if n == 0:
        return 1.0
    tail = sum(comb(n, k) for k in range(max(below, above), n + 1)) / 2**n
    return min(1.0, 2 * tail)
