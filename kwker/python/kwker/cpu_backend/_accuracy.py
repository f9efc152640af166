"""check_accuracy(): the original model and optimize(model, mode) on the same inputs.

Errors are of the outputs (the logits of a language model) as float64:
  max_abs_error   max |opt - ref|
  max_rel_error   max |opt - ref| / max |ref|   (relative to the output's scale: an element-wise
                  ratio explodes wherever the reference is near zero)
  cosine          cosine similarity of the flattened outputs
For a language model (first input integer token ids, output with .logits):
  top1_agreement  share of positions whose most likely next token is the same
  perplexity_original / perplexity_optimized / perplexity_change (relative) on the given ids
"""
import math

from ._optimize import check_options, optimize

_ROWS = (("max_abs_error", "max abs error", "{:.3g}"), ("max_rel_error", "max rel error", "{:.3g}"),
         ("cosine", "cosine similarity", "{:.8f}"), ("top1_agreement", "top-1 agreement", "{:.2%}"),
         ("perplexity_original", "perplexity (original)", "{:.4f}"),
         ("perplexity_optimized", "perplexity (optimized)", "{:.4f}"),
         ("perplexity_change", "perplexity change", "{:+.3%}"))


class AccuracyReport(dict):
    """The report as a dict; str() is the table check_accuracy prints."""

    def __str__(self):
        lines = [f"kwker.cpu_backend accuracy: mode={self['mode']!r}, {self['positions']} output "
                 f"rows, backend {'on' if self['backend_on'] else 'OFF (model unchanged)'}"]
        for key, label, fmt in _ROWS:
            if self.get(key) is not None:
                lines.append(f"  {label:<24} {fmt.format(self[key])}")
        return "\n".join(lines)


def _output(out):
    if hasattr(out, "logits"):
        return out.logits, True
    if isinstance(out, (tuple, list)):
        return out[0], False
    if isinstance(out, dict):
        return next(iter(out.values())), False
    return out, False


def _perplexity(logits, ids):
    import torch
    if ids.shape[-1] < 2:
        return None
    lp = torch.log_softmax(logits[..., :-1, :].to(torch.float64), dim=-1)
    nll = -lp.gather(-1, ids[..., 1:].unsqueeze(-1)).mean()
    return float(torch.exp(nll))


def compare(ref, got, ids=None, lm=False):
    """The metrics of `got` against `ref` (tensors); ids: token ids for the LM metrics."""
    import torch
    r, g = ref.detach().to(torch.float64), got.detach().to(torch.float64)
    diff = (g - r).abs()
    scale = float(r.abs().max()) if r.numel() else 0.0
    out = {
        "max_abs_error": float(diff.max()) if diff.numel() else 0.0,
        "max_rel_error": (float(diff.max()) / scale) if scale else 0.0,
        "cosine": float(torch.nn.functional.cosine_similarity(r.flatten(), g.flatten(), dim=0)),
        "positions": int(r.numel() // r.shape[-1]) if r.dim() else 1,
        "top1_agreement": None, "perplexity_original": None, "perplexity_optimized": None,
        "perplexity_change": None,
    }
    if lm and r.dim() >= 2:
        out["top1_agreement"] = float((r.argmax(-1) == g.argmax(-1)).to(torch.float64).mean())
        if ids is not None:
            p0, p1 = _perplexity(r, ids), _perplexity(g, ids)
            if p0 is not None:
                out["perplexity_original"], out["perplexity_optimized"] = p0, p1
                out["perplexity_change"] = p1 / p0 - 1.0 if math.isfinite(p0) and p0 else None
    return out


def check_accuracy(model, *inputs, mode="high", threads=None, group_size=32, scheme=None,
                   show=True, optimized=None, **kwargs):
    """Runs model(*inputs, **kwargs) and optimize(model, mode)(*inputs, **kwargs) under
    torch.no_grad(); returns an AccuracyReport and prints it unless show=False. The model
    itself is never changed. optimized=: an already optimized copy to compare instead (its
    mode is then what the report names)."""
    import torch
    check_options(mode, group_size, scheme, threads, where="check_accuracy")
    if not inputs and not kwargs:
        raise ValueError("kwker.cpu_backend.check_accuracy: give the inputs to run, e.g. "
                         "check_accuracy(model, input_ids, mode='int8')")
    if optimized is not None:
        opt = optimized
        mode = getattr(optimized, "_kwker_cpu_backend", {}).get("mode", mode)
    else:
        opt = optimize(model, mode, threads=threads, group_size=group_size, scheme=scheme)
    with torch.no_grad():
        ref, lm = _output(model(*inputs, **kwargs))
        got, _ = _output(opt(*inputs, **kwargs))
    ids = inputs[0] if inputs and isinstance(inputs[0], torch.Tensor) and not \
        inputs[0].is_floating_point() else kwargs.get("input_ids")
    report = AccuracyReport(compare(ref, got, ids, lm or ids is not None))
    report["mode"] = mode
    report["backend_on"] = opt is not model
    if show:
        print(report)
    return report
