"""Sort keys as Kwker sees them, and `order`, the one function that turns keys into rows.

Each dataframe front-end (pandas, Polars) describes every sort column as a `Key`: a NumPy array
Kwker can sort plus the library's rules (direction, a null mask and where nulls go, where NaN
goes). `order` returns the stable row permutation, with every comparison done by Kwker:

- one key that Kwker sorts as it is: a single `kwker.argsort` call with its descending /
  nans_first flags (no copy, no encoding);
- several keys: an LSD sort whose digits are key groups, least significant first, each a
  stable `kwker.argsort` pass over the rows in the order the previous passes left them.
  A wide key (float, datetime, 64-bit integer of wide range) is its own pass, sorted as it is
  (flags for direction and NaN, nulls split off). Consecutive narrow keys (booleans, ranks of
  strings and categories, integers whose range fits 32 bits) become unsigned *fields* whose
  ascending order is the wanted order (direction and nulls folded in, the range shifted to
  start at 0 so a column costs only the bits it needs), packed into as few words as hold them:
  one pass sorts them all.

docs/frame.md gives the measurements behind this choice.
"""
import dataclasses
from typing import Optional

import numpy as np

import kwker

from . import _gather

_U64 = np.dtype(np.uint64)
_I64 = np.dtype(np.int64)
_NAT = np.iinfo(np.int64).min
_MAX_BITS = 64
_MISSING = {"f": np.nan, "M": np.datetime64("NaT"), "m": np.timedelta64("NaT")}


@dataclasses.dataclass
class Key:
    """One sort column. `values` is bool, int, uint, float, datetime64 or timedelta64 (NaT
    is null there), or ranks in [0, ncodes) when ncodes is set (strings, categories)."""
    values: np.ndarray
    descending: bool = False
    null: Optional[np.ndarray] = None      # True where the row is null; None: no nulls
    nulls_first: bool = False
    nans_first: bool = False               # floats and NaT: where NaN / NaT go
    ncodes: Optional[int] = None


STRATEGIES = ("auto", "lsd", "per-key", "packed")


def order(keys, n, strategy="auto"):
    """Stable permutation (int64) that sorts n rows by `keys`, most significant first.

    strategy (for measurements; docs/frame.md): "auto" (what kwker.frame uses: MSD first pass
    when the first group leaves few ties, else "lsd"), "lsd" (key groups, least significant
    first), "per-key" (one pass per key, no packing), "packed" (every key packed into words)."""
    if n == 0:
        return np.empty(0, _I64)
    if not keys:                  # no key (by=[], an all-null Polars column): every row ties
        return np.arange(n, dtype=_I64)
    groups = plan(keys, strategy)
    if len(groups) > 1 and strategy == "auto":
        from . import _ties
        if _ties.few(groups[0], n):
            return _ties.refine(groups, n)
    return lsd(groups, n)


def lsd(groups, n, perm=None):
    """Sort by `groups` (from _plan), least significant first, after `perm` if given."""
    for group in reversed(groups):
        perm = sort_group(group, n, perm)
    return perm


def sort_group(group, n, perm=None):
    """Stable sort by one group (a Key, or a list of narrow Keys packed into words), of the
    rows in `perm` order when perm is given."""
    if isinstance(group, Key):
        if perm is None:
            return _direct(group)
        return _gather.take(perm, _direct(taken(group, perm)))
    fields = []
    for key in group:
        fields.extend(_fields(key))
    return _lsd(_pack(fields), n, perm)


def plan(keys, strategy="auto"):
    """Keys grouped for `order`: a wide key (floats, datetimes, 64-bit integers of wide range)
    is one group, sorted by Kwker as it is; runs of narrow keys (booleans, ranks, small
    integers) are packed together into as few words as hold them."""
    if strategy == "packed":
        return [list(keys)]
    if strategy == "per-key":
        return [key if key.ncodes is None else [key] for key in keys]
    groups = []
    for key in keys:
        if _narrow_key(key):
            if groups and isinstance(groups[-1], list):
                groups[-1].append(key)
            else:
                groups.append([key])
        else:
            groups.append(key)
    # a narrow key alone that Kwker sorts as it is (bool, <= 32-bit integers) needs no packing
    return [g[0] if isinstance(g, list) and len(g) == 1 and g[0].ncodes is None
            and g[0].values.dtype.itemsize <= 4 else g for g in groups]


def _narrow_key(key):
    if key.ncodes is not None:
        return key.ncodes <= 2**32
    kind = key.values.dtype.kind
    if kind == "b":
        return True
    if kind not in "iu":
        return False
    if key.values.dtype.itemsize <= 4:
        return True
    v = key.values
    ok = True if key.null is None else ~key.null
    if not v.size or (key.null is not None and not ok.any()):
        return True
    return int(v.max(where=ok, initial=np.iinfo(v.dtype).min)) - \
        int(v.min(where=ok, initial=np.iinfo(v.dtype).max)) < 2**32


def taken(key, perm):
    """The key with its rows in `perm` order."""
    return dataclasses.replace(key, values=_gather.take(key.values, perm),
                               null=None if key.null is None else np.take(key.null, perm))


# ---- one key Kwker sorts as it is

def _direct(key):
    if key.ncodes is not None:
        return None
    v = key.values
    if key.null is None:
        return kwker.argsort(v, descending=key.descending, nans_first=key.nans_first)
    if v.dtype.kind in "fmM":
        # No NaN (NaT) among the non-null values: nulls become NaN and Kwker places them with
        # its nans_first flag, with no split and no gather back (the cheapest way by far).
        nan = np.isnan(v)
        if not nan.any() or not (nan & ~key.null).any():
            filled = np.where(key.null, _MISSING[v.dtype.kind], v)
            return kwker.argsort(filled, descending=key.descending, nans_first=key.nulls_first)
    nulls = np.flatnonzero(key.null)
    if nulls.size == 0:
        return kwker.argsort(v, descending=key.descending, nans_first=key.nans_first)
    valid = np.flatnonzero(~key.null)
    ordered = valid[kwker.argsort(v[valid], descending=key.descending,
                                  nans_first=key.nans_first)]
    return np.concatenate((nulls, ordered) if key.nulls_first else (ordered, nulls))


# ---- keys -> unsigned fields (array of uint64, significant bits)

def _fields(key):
    v = key.values
    null = key.null
    if key.ncodes is not None:
        return _code_fields(v, key.ncodes, key.descending, null, key.nulls_first)
    kind = v.dtype.kind
    if kind in "mM":
        i = v.view(_I64)
        nat = i == _NAT
        if nat.any():
            null = nat if null is None else (null | nat)
            if key.null is None:          # NaT is the only null: it goes where NaN goes
                return _int_fields(i, key.descending, null, key.nans_first)
        return _int_fields(i, key.descending, null, key.nulls_first)
    if kind == "f":
        return _int_fields(_float_order(v, key.descending, key.nans_first, null), False, null,
                           key.nulls_first)
    if kind == "b":
        return _code_fields(v.view(np.uint8), 2, key.descending, null, key.nulls_first)
    if kind in "iu":
        return _int_fields(v, key.descending, null, key.nulls_first)
    raise TypeError(f"kwker.frame: internal key of dtype {v.dtype} is not sortable")


_FLOAT_INT = {2: np.int16, 4: np.int32, 8: np.int64}


def _float_order(v, descending, nans_first, null):
    """int64 keys in the order of the floats (direction applied), -0.0 == +0.0, every NaN
    equal and placed first or last, as Kwker's own float compare does."""
    it = np.dtype(_FLOAT_INT[v.dtype.itemsize])
    bits = it.itemsize * 8
    s = (v + v.dtype.type(0)).view(it)             # a copy; -0.0 + 0.0 is +0.0
    s ^= (s >> (bits - 1)) & it.type(np.iinfo(it).max)   # sign-magnitude -> two's complement
    s = s.astype(_I64, copy=False)
    if descending:
        np.invert(s, out=s)
    nan = np.isnan(v)
    if null is not None:
        nan &= ~null
    if nan.any():
        ok = ~nan if null is None else ~(nan | null)
        if ok.any():
            lo = int(s.min(where=ok, initial=np.iinfo(np.int64).max))
            hi = int(s.max(where=ok, initial=np.iinfo(np.int64).min))
        else:
            lo = hi = 0
        s[nan] = lo - 1 if nans_first else hi + 1   # |keys| < 2^63 - 2^52: no overflow
    return s


def _int_fields(x, descending, null, nulls_first):
    has_null = null is not None and bool(null.any())
    ok = ~null if has_null else True
    info = np.iinfo(x.dtype)
    if x.size and (not has_null or ok.any()):
        lo = int(x.min(where=ok, initial=info.max))
        hi = int(x.max(where=ok, initial=info.min))
    else:
        lo = hi = 0
    r = hi - lo
    c = x.astype(_U64)                              # wraps negatives; the offsets below too
    if descending:
        np.subtract(_U64.type(hi % 2**64), c, out=c)
    else:
        np.subtract(c, _U64.type(lo % 2**64), out=c)
    if not has_null:
        return [(c, r.bit_length())]
    if r < 2**64 - 1:
        if nulls_first:
            c += _U64.type(1)
            c[null] = 0
        else:
            c[null] = r + 1
        return [(c, (r + 1).bit_length())]
    flag = (~null if nulls_first else null).astype(_U64)
    return [(flag, 1), (c, 64)]


def _code_fields(codes, ncodes, descending, null, nulls_first):
    return _int_fields(_narrow_codes(codes), descending, null, nulls_first) if ncodes else []


def _narrow_codes(codes):
    return codes if codes.dtype.kind in "iu" else codes.astype(_I64)


# ---- fields -> words -> permutation

def _pack(fields):
    """Concatenate the fields' bits (most significant first) into words of <= 64 bits."""
    words, cur, cur_bits = [], None, 0
    for u, bits in fields:
        while bits:
            take = min(bits, _MAX_BITS - cur_bits)
            rest = bits - take
            part = u >> _U64.type(rest) if rest else u
            if cur is None:
                cur = part if part is not u else u.copy()
            else:
                cur <<= _U64.type(take)
                cur |= part
            cur_bits += take
            if rest:
                u = u & _U64.type((1 << rest) - 1)
            bits = rest
            if cur_bits == _MAX_BITS:
                words.append((cur, cur_bits))
                cur, cur_bits = None, 0
    if cur is not None:
        words.append((cur, cur_bits))
    return [_narrow(w, b) for w, b in words]


def _narrow(w, bits):
    # 8-bit keys sort fastest; 16-bit keys sort slower than 32-bit ones in Kwker today.
    if bits <= 8:
        return w.astype(np.uint8)
    if bits <= 32:
        return w.astype(np.uint32)
    return w


def _lsd(words, n, perm=None):
    """Stable passes over the words, last (least significant) first, after `perm`."""
    for w in reversed(words):
        if perm is None:
            perm = kwker.argsort(w)
        else:
            perm = _gather.take(perm, kwker.argsort(_gather.take(w, perm)))
    return np.arange(n, dtype=_I64) if perm is None else perm
