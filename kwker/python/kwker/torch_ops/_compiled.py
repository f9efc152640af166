"""The compiled overrides of kwker.torch_ops: the extension's kernels switched on for torch's sort
family on the CPU key (kwker_torch::enable), and the bare kernels the self-check runs. The
extension itself (which torch it was built for, loading it) is kwker._torch.extension."""
from kwker._torch.extension import load


class CompiledOps:
    """The compiled overrides of `ops` on the CPU key; close() removes them all."""

    kind = "compiled"

    def __init__(self, ops, thresholds):
        self._ns = load()
        try:
            for op in ops:
                self._ns.enable(op, list(thresholds[op]))
        except BaseException:
            self._ns.disable_all()
            raise

    def close(self):
        self._ns.disable_all()


class CompiledKernels:
    """The compiled kernels without thresholds or fallbacks (the self-check runs these)."""

    kind = "compiled"

    def __init__(self):
        self._ns = load()

    def sort(self, x, dim, descending, threads):
        return tuple(self._ns.sort_kernel(x, dim, descending, threads))

    def topk(self, x, k, dim, largest, threads):
        return tuple(self._ns.topk_kernel(x, k, dim, largest, threads))

    def kthvalue(self, x, k, dim, keepdim, threads):
        return tuple(self._ns.kthvalue_kernel(x, k, dim, keepdim, threads))

    def unique(self, x, return_inverse, return_counts, threads):
        return tuple(self._ns.unique_kernel(x, return_inverse, return_counts, threads))
