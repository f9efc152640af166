"""Most-significant-first sorting for keys whose first group leaves few ties.

When the first sort key is nearly unique (a random int32 or float column), sorting every row
by every key (LSD) wastes passes: after one Kwker pass over the first group, only the rows in
runs of equal first keys still need the other keys. `refine` sorts those rows, compacted, by
(run number, remaining keys) with the same LSD passes, and writes them back in place.
`few` decides from a sample of the first group whether that pays: with s sampled rows showing C
equal neighbours, the column has about D = s^2 / (2C) distinct values, and MSD pays when n/D
(the share of rows that will need refining) is small.
"""
import numpy as np

from . import _gather, _keys

_SAMPLE = 20_000
_MAX_TIED_SHARE = 0.25


def few(group, n):
    """True when sorting by `group` first is expected to leave few rows tied."""
    s = min(n, _SAMPLE)
    idx = None if s == n else np.linspace(0, n - 1, s).astype(np.int64)
    sample = group if idx is None else _subset(group, idx)
    perm = _keys.sort_group(sample, s)
    equal = _equal_neighbours(sample, perm).sum()
    if idx is None:
        return equal <= _MAX_TIED_SHARE * n
    return 2.0 * equal * n / (s * s) <= _MAX_TIED_SHARE


def refine(groups, n):
    first = groups[0]
    perm = _keys.sort_group(first, n)
    same = _equal_neighbours(first, perm)
    if not same.any():
        return perm
    tied = np.zeros(n, bool)
    tied[1:] = same
    tied[:-1] |= same
    pos = np.flatnonzero(tied)                        # sorted positions inside tie runs
    rows = perm[pos]
    starts = ~same[pos[1:] - 1] if pos.size > 1 else np.zeros(0, bool)
    run = np.concatenate(([0], np.cumsum(starts, dtype=np.int64)))   # 0, 0, 1, 1, 1, 2...
    rest = [_subset(g, rows) for g in groups[1:]]
    sub_keys = [_keys.Key(run, ncodes=int(run[-1]) + 1)] + [k for g in rest for k in
                                                           (g if isinstance(g, list) else [g])]
    sub = _keys.lsd(_keys.plan(sub_keys), rows.size)
    perm[pos] = _gather.take(rows, sub)
    return perm


def _subset(group, idx):
    if isinstance(group, list):
        return [_keys.taken(k, idx) for k in group]
    return _keys.taken(group, idx)


def _equal_neighbours(group, perm):
    """same[i]: sorted row i+1 ties sorted row i on every key of `group`."""
    keys = group if isinstance(group, list) else [group]
    same = np.ones(max(perm.size - 1, 0), bool)
    for key in keys:
        same &= _key_equal(_keys.taken(key, perm))
    return same


def _key_equal(key):
    v = key.values
    a, b = v[1:], v[:-1]
    eq = a == b                                       # -0.0 == +0.0, as Kwker orders them
    if v.dtype.kind in "fmM":
        nan = np.isnan(v)
        eq |= nan[1:] & nan[:-1]
    if key.null is not None:
        na, nb = key.null[1:], key.null[:-1]
        eq = (eq & ~na & ~nb) | (na & nb)
    return eq


__all__ = ["few", "refine"]
