"""Weight quantisation at pack time (kwker.cpu_backend.optimize, and the compile backend's
CPU-backend modes), in torch (vectorised, once per layer): float32 weights
[n, k] -> the (values, scales, mins) that the packer takes. Scales and minimums are rounded to
float16, as GGUF stores them, so a layer quantised here and the same layer read from a GGUF file
are the same numbers.

  int8 "q8_0" (default): per block of 32 along K, d = max|w| / 127, q = round(w / d) in -127..127
  int8 "per_channel":    one d per output row (stored in every block of the row)
  int4 "q4_1" (default): per group, d = (max - min) / 15, m = min, q = round((w - m) / d) in 0..15
  int4 "q4_0":           per group, d = w_maxabs / -8 (signed), q = round(w / d) + 8 in 0..15,
                         stored as m = -8 d, so the kernels are the same
K is zero-padded to the block (group) size before the statistics are taken.

"high" keeps float32 weights, but a layer whose float32 weights are exactly a dequantised GGUF
file (transformers dequantises Q4_1 / Q8_0 / Q4_0 to float32 on load) is stored as those blocks
(exact_blocks): 24 or 36 bytes per 32 weights instead of 128, rebuilt by the kernels into the very
same float32 numbers, so the results are those of float32 storage bit for bit. Detection is exact
(every weight's bits compared), never approximate; anything else stays float32.
"""
import torch

from .linear import SCHEMES  # noqa: F401  (re-exported: the scheme names live there)


def _f16(t):
    return t.to(torch.float16).to(torch.float32)


def _blocks(w, block):
    n, k = w.shape
    kp = -(-k // block) * block
    if kp != k:
        w = torch.nn.functional.pad(w, (0, kp - k))
    return w.reshape(n, kp // block, block)


def _inverse(d):
    return torch.where(d != 0, 1.0 / torch.where(d != 0, d, torch.ones_like(d)), torch.zeros_like(d))


def quantize(w, mode, scheme, group):
    """(values [n, k], scales [n, blocks] or None, mins or None) for mode and scheme."""
    w = w.detach().to(torch.float32)
    n, k = w.shape
    if mode == "high":
        return w.contiguous(), None, None
    if mode == "medium":
        return w.to(torch.bfloat16).contiguous(), None, None
    if mode == "int8":
        b = _blocks(w, 32)
        if scheme == "per_channel":
            amax = b.abs().amax(dim=(1, 2), keepdim=True).expand(n, b.shape[1], 1)
        else:
            amax = b.abs().amax(dim=2, keepdim=True)
        d = _f16(amax / 127.0)
        q = torch.round(b * _inverse(d)).clamp_(-127, 127).to(torch.int8)
        return q.reshape(n, -1)[:, :k].contiguous(), d.reshape(n, -1).contiguous(), None
    b = _blocks(w, group)
    if scheme == "q4_0":
        idx = b.abs().argmax(dim=2, keepdim=True)
        d = _f16(torch.gather(b, 2, idx) / -8.0)
        q = torch.round(b * _inverse(d) + 8.0).clamp_(0, 15).to(torch.uint8)
        m = -8.0 * d
    else:
        lo, hi = b.amin(dim=2, keepdim=True), b.amax(dim=2, keepdim=True)
        d = _f16((hi - lo) / 15.0)
        m = _f16(lo)
        q = torch.round((b - m) * _inverse(d)).clamp_(0, 15).to(torch.uint8)
    return (q.reshape(n, -1)[:, :k].contiguous(), d.reshape(n, -1).contiguous(),
            m.reshape(n, -1).contiguous())


# Rows per step of the exact-block check: its temporaries stay near 100 MB on a 49,152-row LM head.
_EXACT_ROWS = 4096


def _bits(t):
    return t.contiguous().view(torch.int32)


def _exact_q4_1(b):
    """(q, d, m) if every 32-block of b [rows, nb, 32] is w == (d * q) + m in float32 (q in
    0..15, GGUF's Q4_1 dequantiser), else None. The block's minimum is m (its q is 0) and d is the
    float16 nearest (max - min) / 15, as GGUF stores it; the check is on the bits."""
    lo, hi = b.amin(dim=2, keepdim=True), b.amax(dim=2, keepdim=True)
    d = _f16((hi - lo) / 15.0)
    q = torch.round((b - lo) * _inverse(d)).clamp_(0, 15).to(torch.uint8)
    if not torch.equal(_bits(d * q.to(torch.float32) + lo), _bits(b)):
        return None
    return q, d, lo


def _exact_q8_0(b):
    """(q, d) if every 32-block is w == d * q in float32 (q in -127..127): GGUF's Q8_0 (d the
    float16 nearest max|w| / 127) or Q4_0 (q in -8..7 and d = w / -8 for the w of largest
    magnitude, exact; d may be negative, so its zeros are -0), per block. The check rebuilds
    from the integer q, so a -0 weight only passes where d * 0 gives it."""
    amax = b.abs().amax(dim=2, keepdim=True)
    ext = torch.gather(b, 2, b.abs().argmax(dim=2, keepdim=True))
    best_q, best_d, ok_all = None, None, None
    for d in (_f16(amax / 127.0), ext / -8.0):
        q = torch.round(b * _inverse(d)).clamp_(-127, 127).to(torch.int8)
        ok = (_bits(d * q.to(torch.float32)) == _bits(b)).all(dim=2, keepdim=True)
        if best_q is None:
            best_q, best_d, ok_all = q, d, ok
        else:
            best_q = torch.where(ok_all, best_q, q)
            best_d = torch.where(ok_all, best_d, d)
            ok_all = ok_all | ok
        if bool(ok_all.all()):
            return best_q, best_d
    return None


def exact_blocks(w):
    """("exact-q4_1", q, d, m) or ("exact-q8_0", q, d, None) where the float32 weights w [n, k]
    are exactly GGUF blocks of 32 along K (k a multiple of 32), else None. The first rows are
    checked alone first, so a layer of ordinary float32 weights costs one small step."""
    w = w.detach()
    if w.dtype != torch.float32 or w.dim() != 2 or w.shape[1] % 32 or w.numel() == 0:
        return None
    n, k = w.shape
    b = w.reshape(n, k // 32, 32)
    for kind, test in (("exact-q4_1", _exact_q4_1), ("exact-q8_0", _exact_q8_0)):
        if test(b[:8]) is None:
            continue
        parts = []
        for r in range(0, n, _EXACT_ROWS):
            got = test(b[r:r + _EXACT_ROWS])
            if got is None:
                parts = None
                break
            parts.append(got)
        if parts is None:
            continue
        q = torch.cat([p[0] for p in parts]).reshape(n, k)
        d = torch.cat([p[1] for p in parts]).reshape(n, k // 32)
        m = torch.cat([p[2] for p in parts]).reshape(n, k // 32) if kind == "exact-q4_1" else None
        return kind, q, d, m
    return None


def exact_float16(w):
    """w as float16 where every one of its float32 weights is exactly a float16 (a model loaded
    from an F16 file, a float16 checkpoint loaded as float32), else None: "high" then reads half
    the bytes for float32's results bit for bit (float16 widens to float32 exactly). The first
    rows are checked alone first, so a layer of ordinary float32 weights costs one small step."""
    w = w.detach()
    if w.dtype != torch.float32 or w.dim() != 2 or w.numel() == 0:
        return None
    head = w[:8]
    if not torch.equal(head.to(torch.float16).to(torch.float32), head):
        return None
    half = w.to(torch.float16)
    # torch.equal is False on NaN (kept in float32) and on values float16 cannot hold
    # (overflow to inf, underflow to 0).
    return half if torch.equal(half.to(torch.float32), w) else None


def q4_0_blocks(scales, mins):
    """Whether int4 blocks (group 32) are GGUF Q4_0's: every scale a finite float16 value and
    every min exactly -8 x its scale, bit for bit. Such blocks pack in the Q4_0 layout (kwker.h:
    KWKER_LINEAR_Q4_0, 18 bytes per 32 weights instead of 24) with the same results."""
    if scales is None or mins is None or scales.numel() == 0 or scales.shape != mins.shape:
        return False
    s = scales.detach().to(torch.float32)
    # torch.equal is False on NaN and on values float16 cannot hold (overflow, underflow).
    if not torch.isfinite(s).all() or not torch.equal(_f16(s), s):
        return False
    return torch.equal(_bits(-8.0 * s), _bits(mins.detach().to(torch.float32)))


def dequantize(values, scales, mins, mode, group, storage=None):
    """The float32 weights a packed layer computes with (for tests and check_accuracy)."""
    if storage in ("exact-q4_1", "exact-q8_0"):  # (d * q) + m, in float32, as the kernels do
        n, k = values.shape
        w = _blocks(values.to(torch.float32), 32) * scales.unsqueeze(-1)
        if storage == "exact-q4_1":
            w = w + mins.unsqueeze(-1)
        return w.reshape(n, k)
    if mode in ("high", "medium"):
        return values.to(torch.float32)
    block = 32 if mode == "int8" else group
    n, k = values.shape
    w = _blocks(values.to(torch.float32), block) * scales.unsqueeze(-1)
    if mode == "int4":
        w = w + mins.unsqueeze(-1)
    return w.reshape(n, -1)[:, :k]
