"""Weight quantisation at optimize() time, in torch (vectorised, once per layer): float32 weights
[n, k] -> the (values, scales, mins) that the packer takes. Scales and minimums are rounded to
float16, as GGUF stores them, so a layer quantised here and the same layer read from a GGUF file
are the same numbers.

  int8 "q8_0" (default): per block of 32 along K, d = max|w| / 127, q = round(w / d) in -127..127
  int8 "per_channel":    one d per output row (stored in every block of the row)
  int4 "q4_1" (default): per group, d = (max - min) / 15, m = min, q = round((w - m) / d) in 0..15
  int4 "q4_0":           per group, d = w_maxabs / -8 (signed), q = round(w / d) + 8 in 0..15,
                         stored as m = -8 d, so the kernels are the same
K is zero-padded to the block (group) size before the statistics are taken.
"""
import torch

from ._optimize import SCHEMES  # noqa: F401  (re-exported: the scheme names live there)


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


def dequantize(values, scales, mins, mode, group):
    """The float32 weights a packed layer computes with (for tests and check_accuracy)."""
    if mode in ("high", "medium"):
        return values.to(torch.float32)
    block = 32 if mode == "int8" else group
    n, k = values.shape
    w = _blocks(values.to(torch.float32), block) * scales.unsqueeze(-1)
    if mode == "int4":
        w = w + mins.unsqueeze(-1)
    return w.reshape(n, -1)[:, :k]
