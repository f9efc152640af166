"""KwkerLinear: an nn.Linear replacement whose weights live packed in the layout of Kwker's linear
kernels (kwker/core/linear_layout.h) and whose forward is one call of the compiled operator
torch.ops.kwker_torch.linear (no Python per element, no dequantised copy of the weights). The
operator, the codes and the quantisation are kwker._torch's, shared with the compile backend."""
import torch

from kwker._torch import quant as _quant
from kwker._torch.linear import A8_CODES, ACTIVATIONS, MODE_CODES, Q4_0_FLAG, STORAGE_CODES
from kwker._torch.ops import compiled as ops
from kwker._torch.ops import linear_op as _linear_op


class KwkerLinear(torch.nn.Module):
    """y = x W^T + b with W packed once (mode: high, medium, int8 or int4). Activations run in
    float32; inputs of another dtype are converted and the result converted back.

    storage: how "high" holds its float32 weights: "float32", "exact-q4_1" / "exact-q8_0"
    where they are exactly GGUF blocks (values, scales, mins are then the blocks), or "float16"
    where each is exactly a float16 (values is then the float16 tensor); the other modes'
    storage is their own layout (None).

    activations (int8 / int4 only): "float" keeps x in float32 below 16 rows (the decode step)
    and quantises it per 32-block to int8 from 16 rows (the prompt kernels); "int8" quantises it
    at every row count (W8A8 / W4A8, as llama.cpp does), so the decode step multiplies bytes
    (about 1.3-1.8x faster on AVX2) and a row's result does not depend on the batch."""

    def __init__(self, values, scales, mins, bias, *, mode, group, threads, scheme=None,
                 storage=None, activations="float"):
        super().__init__()
        self.mode, self.group, self.threads, self.scheme = mode, int(group), int(threads), scheme
        self.out_features, self.in_features = values.shape
        if mode == "high":
            storage = storage or "float32"
        elif storage is not None:
            raise ValueError(f"KwkerLinear: storage={storage!r} is for mode 'high' only")
        if activations not in ACTIVATIONS or (activations == "int8" and mode not in A8_CODES):
            raise ValueError(f"KwkerLinear: activations={activations!r} is not valid in mode "
                             f"{mode!r}; use 'float', or 'int8' with mode 'int8' or 'int4'")
        self.storage, self.activations = storage, activations
        self._code = (A8_CODES[mode] if activations == "int8"
                      else STORAGE_CODES.get(storage, MODE_CODES[mode]))
        if mode == "int4" and self.group == 32 and _quant.q4_0_blocks(scales, mins):
            self._code |= Q4_0_FLAG  # GGUF Q4_0 blocks in their own 18 bytes: the same results
        packed = ops().linear_pack(self._code, values, scales, mins, self.group)
        self.register_buffer("packed", packed, persistent=True)
        self.register_buffer("bias", None if bias is None else
                             bias.detach().to(torch.float32).clone(), persistent=True)

    @classmethod
    def from_linear(cls, linear, *, mode, group, threads, scheme, exact_blocks=True,
                    activations="float"):
        if mode == "high" and exact_blocks:
            found = _quant.exact_blocks(linear.weight)
            if found is not None:
                storage, values, scales, mins = found
                return cls(values, scales, mins, linear.bias, mode=mode, group=group,
                           threads=threads, scheme=scheme, storage=storage)
            half = _quant.exact_float16(linear.weight)
            if half is not None:
                return cls(half, None, None, linear.bias, mode=mode, group=group,
                           threads=threads, scheme=scheme, storage="float16")
        values, scales, mins = _quant.quantize(linear.weight, mode, scheme, group)
        return cls(values, scales, mins, linear.bias, mode=mode, group=group, threads=threads,
                   scheme=scheme, activations=activations)

    def as_float32_storage(self):
        """This "high" layer with its weights stored as plain float32 (same results, bit for bit;
        the decode step needs one storage for all of a model's projections)."""
        if self.storage == "float32":
            return self
        return KwkerLinear(self.dequantized_weight(), None, None, self.bias, mode="high",
                           group=self.group, threads=self.threads, scheme=self.scheme)

    def unpack(self):
        """(values, scales, mins) exactly as packed."""
        return tuple(ops().linear_unpack(self._code, self.packed, self.out_features,
                                         self.in_features, self.group))

    def dequantized_weight(self):
        v, s, m = self.unpack()
        return _quant.dequantize(v, s, m, self.mode, self.group, self.storage)

    @property
    def weight_bytes(self):
        return int(self.packed.numel())

    def forward(self, x):
        dt = x.dtype
        xf = x if dt == torch.float32 else x.to(torch.float32)
        y = _linear_op()(xf, self.packed, self.bias, self._code, self.out_features, self.group,
                         self.threads)
        return y if dt == torch.float32 else y.to(dt)

    def extra_repr(self):
        s = (f"in_features={self.in_features}, out_features={self.out_features}, "
             f"bias={self.bias is not None}, mode={self.mode}")
        if self.mode == "int4":
            s += f", group_size={self.group}"
        if self.scheme:
            s += f", scheme={self.scheme}"
        if self.storage not in (None, "float32"):
            s += f", storage={self.storage}"
        if self.activations != "float":
            s += f", activations={self.activations}"
        return s
