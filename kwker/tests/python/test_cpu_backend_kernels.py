"""The CPU backend's linear operators on every engine this CPU runs: each mode on awkward shapes
(K not a multiple of the group or the vector width, N = 1, batch 1 and 7) against a float64
reference on the same dequantised weights with per-mode bounds, engines equal bit for bit,
quantisation error against the original float weights, pack/unpack round trips."""
import pytest

torch = pytest.importorskip("torch")

import kwker  # noqa: E402
from kwker._torch import quant as _quant  # noqa: E402
from kwker.cpu_backend._linear import KwkerLinear  # noqa: E402
from kwker._torch.linear import Q4_0_FLAG  # noqa: E402
from kwker._torch import extension  # noqa: E402

pytestmark = pytest.mark.skipif(not extension.availability()[0],
                                reason=f"compiled operators unavailable: "
                                       f"{extension.availability()[1]}")

ENGINES = tuple(kwker.available_isas())
SHAPES = [(1, 1, 1), (1, 37, 7), (17, 33, 1), (5, 100, 7), (64, 576, 1), (129, 70, 7)]
# Quantisation error of the whole product relative to sum |w x| (random normal weights).
QUANT_BOUND = {"high": 1e-6, "medium": 1e-2, "int8": 2e-2, "int4": 0.25}


def _layer(n, k, mode, group=32, scheme=None, bias=True, seed=0):
    g = torch.Generator().manual_seed(seed + n * 1000 + k)
    lin = torch.nn.Linear(k, n, bias=bias)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(n, k, generator=g))
        if bias:
            lin.bias.copy_(torch.randn(n, generator=g))
    return lin, KwkerLinear.from_linear(lin, mode=mode, group=group, threads=2,
                                        scheme=scheme or _quant.SCHEMES.get(mode, (None,))[0])


@pytest.mark.parametrize("mode", ["high", "medium", "int8", "int4"])
@pytest.mark.parametrize("n,k,m", SHAPES)
def test_every_engine_matches_the_float64_reference_and_each_other(mode, n, k, m):
    lin, kl = _layer(n, k, mode, bias=n % 2 == 1)
    x = torch.randn(m, k, generator=torch.Generator().manual_seed(7))
    w = kl.dequantized_weight().to(torch.float64)
    ref = x.to(torch.float64) @ w.T
    if lin.bias is not None:
        ref += lin.bias.detach().to(torch.float64)
    mag = x.to(torch.float64).abs() @ w.abs().T + 1e-30
    outs = {}
    with kwker.config():
        for e in ENGINES:
            kwker.set_isa(e)
            outs[e] = kl(x)
    first = outs[ENGINES[0]]
    for e, y in outs.items():
        assert y.shape == (m, n) and y.dtype == torch.float32
        assert torch.equal(y, first), f"{e} differs from {ENGINES[0]} in mode {mode}"
    # Float32 accumulation on the packed weights: rounding only.
    assert float(((first.to(torch.float64) - ref).abs() / mag).max()) < 1e-5 * max(1, k) ** 0.5
    # Against the original float weights: the mode's quantisation cost.
    full = x.to(torch.float64) @ lin.weight.detach().to(torch.float64).T
    if lin.bias is not None:
        full += lin.bias.detach().to(torch.float64)
    full_mag = x.to(torch.float64).abs() @ lin.weight.detach().to(torch.float64).abs().T
    rel = float(((first.to(torch.float64) - full).abs() / (full_mag + 1e-30)).max())
    assert rel < QUANT_BOUND[mode], (mode, rel)


@pytest.mark.parametrize("mode,scheme,group", [("int8", "per_channel", 32), ("int4", "q4_0", 32),
                                               ("int4", "q4_1", 64), ("int4", "q4_1", 128)])
def test_schemes_and_group_sizes(mode, scheme, group):
    lin, kl = _layer(9, 200, mode, group=group, scheme=scheme)
    x = torch.randn(7, 200)
    y = kl(x)
    ref = lin(x).detach()
    cos = torch.nn.functional.cosine_similarity(y.flatten(), ref.flatten(), dim=0)
    assert cos > (0.999 if mode == "int8" else 0.99)
    assert torch.allclose(y, x @ kl.dequantized_weight().T + lin.bias.detach(), rtol=1e-4,
                          atol=1e-4)


@pytest.mark.parametrize("mode", ["high", "medium", "int8", "int4"])
def test_pack_unpack_round_trip(mode):
    w = torch.randn(11, 45)
    values, scales, mins = _quant.quantize(w, mode, _quant.SCHEMES.get(mode, (None,))[0], 32)
    kl = KwkerLinear(values, scales, mins, None, mode=mode, group=32, threads=1)
    v2, s2, m2 = kl.unpack()
    assert torch.equal(v2, values)
    if scales is not None:
        assert torch.equal(s2, scales)
    if mins is not None:
        assert torch.equal(m2, mins)
    if mode == "high":
        assert torch.equal(kl.dequantized_weight(), w)
    if mode == "medium":
        assert torch.equal(kl.dequantized_weight(), w.to(torch.bfloat16).float())


def test_int8_and_int4_values_are_in_range_and_scales_are_float16():
    w = torch.randn(8, 96) * 3
    q, d, _ = _quant.quantize(w, "int8", "q8_0", 32)
    assert q.dtype == torch.int8 and int(q.abs().max()) <= 127
    assert torch.equal(d, d.half().float())
    q, d, m = _quant.quantize(w, "int4", "q4_1", 32)
    assert q.dtype == torch.uint8 and int(q.max()) <= 15
    assert torch.equal(m, m.half().float())


def test_batch_shapes_dtypes_and_threads():
    lin, kl = _layer(24, 40, "high")
    x = torch.randn(2, 3, 40)
    y = kl(x)
    assert y.shape == (2, 3, 24)
    assert torch.allclose(y, lin(x).detach(), atol=1e-5)
    yb = kl(x.to(torch.bfloat16))
    assert yb.dtype == torch.bfloat16
    kl.threads = 1
    assert torch.equal(kl(x), y)   # the thread split never changes a result
    assert kl(torch.randn(0, 40)).shape == (0, 24)


def test_operator_errors_are_clear():
    ns = extension.load()
    with pytest.raises(RuntimeError, match="group size 48 does not divide"):
        ns.linear_pack(3, torch.zeros(2, 64, dtype=torch.uint8), torch.ones(2, 2),
                       torch.zeros(2, 2), 48)
    with pytest.raises(RuntimeError, match="takes values of dtype"):
        ns.linear_pack(0, torch.zeros(2, 4, dtype=torch.float64), None, None, 32)
    _, kl = _layer(4, 16, "high")
    with pytest.raises(RuntimeError, match="do not fit in_features=17"):
        kl(torch.randn(1, 17))


# ---- "high" from exact GGUF blocks: float32 weights that the gguf package dequantised (as
# transformers does on loading a GGUF file) are stored as their blocks and give float32's bits.
GGUF_KINDS = {"Q4_1": "exact-q4_1", "Q8_0": "exact-q8_0", "Q4_0": "exact-q8_0"}


def _gguf_linear(n, k, kind, seed=3):
    """An nn.Linear whose weights went through the gguf package's quantise / dequantise."""
    gguf = pytest.importorskip("gguf")
    from gguf import quants
    g = torch.Generator().manual_seed(seed + n + k)
    w = torch.randn(n, k, generator=g).numpy()
    qtype = getattr(gguf.GGMLQuantizationType, kind)
    deq = quants.dequantize(quants.quantize(w, qtype), qtype)
    lin = torch.nn.Linear(k, n, bias=n % 2 == 1)
    with torch.no_grad():
        lin.weight.copy_(torch.from_numpy(deq))
    return lin


def _same_bits_on_every_engine(layer, plain, x):
    """layer(x) equals the float32-storage layer's result bit for bit on every engine; returns
    the last engine's result."""
    with kwker.config():
        for e in ENGINES:
            kwker.set_isa(e)
            got, want = layer(x), plain(x)
            assert torch.equal(got.view(torch.int32), want.view(torch.int32)), (e, layer.storage)
    return got


@pytest.mark.parametrize("kind", sorted(GGUF_KINDS))
@pytest.mark.parametrize("n,k,m", [(1, 32, 1), (37, 96, 7), (64, 576, 2), (33, 1568, 40)])
def test_exact_gguf_blocks_give_float32_results_bit_for_bit(kind, n, k, m):
    lin = _gguf_linear(n, k, kind)
    exact = KwkerLinear.from_linear(lin, mode="high", group=32, threads=2, scheme=None)
    plain = KwkerLinear.from_linear(lin, mode="high", group=32, threads=2, scheme=None,
                                    exact_blocks=False)
    assert exact.storage == GGUF_KINDS[kind] and plain.storage == "float32"
    assert "storage=" in repr(exact)
    assert exact.weight_bytes * 3 < plain.weight_bytes
    # The stored blocks rebuild the very float32 weights.
    w = lin.weight.detach()
    assert torch.equal(exact.dequantized_weight().view(torch.int32), w.view(torch.int32))
    x = torch.randn(m, k, generator=torch.Generator().manual_seed(11))
    got = _same_bits_on_every_engine(exact, plain, x)
    # And as float32, y agrees with torch's product to float32 summation error.
    torch.testing.assert_close(got, lin(x).detach(), rtol=1e-4, atol=1e-4)
    # The layer repacked as float32 storage computes the same.
    back = exact.as_float32_storage()
    assert back.storage == "float32" and torch.equal(back(x), got)


def test_weights_that_are_not_exact_blocks_stay_float32():
    lin = _gguf_linear(8, 64, "Q4_1")
    with torch.no_grad():
        lin.weight[5, 40] = torch.nextafter(lin.weight[5, 40], torch.tensor(9.0))  # one ulp
    assert KwkerLinear.from_linear(lin, mode="high", group=32, threads=1,
                                   scheme=None).storage == "float32"
    # A last row that breaks it, past the first rows' quick check (rows come in steps).
    lin = _gguf_linear(40, 64, "Q8_0")
    with torch.no_grad():
        lin.weight[39, 0] += 1e-3
    assert KwkerLinear.from_linear(lin, mode="high", group=32, threads=1,
                                   scheme=None).storage == "float32"
    # K not a multiple of 32: the kernels would rebuild padding that is not 0.
    lin = _gguf_linear(4, 96, "Q4_1")
    cut = torch.nn.Linear(80, 4, bias=False)
    with torch.no_grad():
        cut.weight.copy_(lin.weight[:, :80])
    assert KwkerLinear.from_linear(cut, mode="high", group=32, threads=1,
                                   scheme=None).storage == "float32"
    # Ordinary float32 weights, and the other modes, have no exact storage.
    lin, kl = _layer(16, 64, "high")
    assert kl.storage == "float32"
    assert _layer(16, 64, "int4")[1].storage is None


def _float16_linear(n, k, seed=5):
    """A float32 layer whose weights are exactly float16 values, subnormals and -0 included."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(n, k, generator=g)
    w.view(-1)[::13] *= 1e-5   # float16 subnormals
    w.view(-1)[5::31] = -0.0
    lin = torch.nn.Linear(k, n, bias=n % 2 == 1)
    with torch.no_grad():
        lin.weight.copy_(w.to(torch.float16).to(torch.float32))
    return lin


@pytest.mark.parametrize("n,k,m", [(1, 37, 1), (37, 100, 7), (64, 576, 2), (33, 1600, 40)])
def test_float16_weights_are_stored_as_float16_with_float32_results_bit_for_bit(n, k, m):
    lin = _float16_linear(n, k)
    half = KwkerLinear.from_linear(lin, mode="high", group=32, threads=2, scheme=None)
    plain = KwkerLinear.from_linear(lin, mode="high", group=32, threads=2, scheme=None,
                                    exact_blocks=False)
    assert half.storage == "float16" and plain.storage == "float32"
    assert "storage=float16" in repr(half)
    assert half.weight_bytes * 2 == plain.weight_bytes
    w = lin.weight.detach()
    assert torch.equal(half.dequantized_weight().view(torch.int32), w.view(torch.int32))
    x = torch.randn(m, k, generator=torch.Generator().manual_seed(12))
    got = _same_bits_on_every_engine(half, plain, x)
    back = half.as_float32_storage()
    assert back.storage == "float32" and torch.equal(back(x), got)


def test_weights_that_are_not_exactly_float16_stay_float32():
    for change in (lambda w: w.__setitem__((3, 7), torch.nextafter(w[3, 7], torch.tensor(9.0))),
                   lambda w: w.__setitem__((39, 0), float("nan")),      # past the first rows
                   lambda w: w.__setitem__((20, 1), 1e5),               # beyond float16's range
                   lambda w: w.__setitem__((0, 2), 1e-9)):              # below its subnormals
        lin = _float16_linear(40, 64)
        with torch.no_grad():
            change(lin.weight)
        assert KwkerLinear.from_linear(lin, mode="high", group=32, threads=1,
                                       scheme=None).storage == "float32"


def test_exact_blocks_option_is_checked_and_reported():
    import kwker.cpu_backend as cb
    model = torch.nn.Sequential(_gguf_linear(16, 64, "Q4_1"), torch.nn.ReLU(),
                                torch.nn.Linear(16, 8))
    with pytest.raises(TypeError, match="exact_blocks must be True or False"):
        cb.optimize(model, "high", exact_blocks="yes")
    assert isinstance(model[0], torch.nn.Linear)
    opt = cb.optimize(model, "high")
    assert opt._kwker_cpu_backend["storage"] == {"exact-q4_1": 1, "float32": 1}
    assert cb.optimize(model, "high", exact_blocks=False)._kwker_cpu_backend["storage"] == {
        "float32": 2}
    x = torch.randn(3, 64)
    assert torch.equal(opt(x), cb.optimize(model, "high", exact_blocks=False)(x))


# ---- int4 in GGUF Q4_0's own bytes (kwker.h: KWKER_LINEAR_Q4_0): blocks whose scales are
# float16 values and whose mins are -8 x scale pack in 18 bytes per 32 weights instead of 24, with
# the 24-byte layout's results bit for bit.
def _q4_0_blocks(n, k, seed=5):
    g = torch.Generator().manual_seed(seed + n + k)
    nb = -(-k // 32)
    q = torch.randint(0, 16, (n, k), generator=g, dtype=torch.uint8)
    s = (torch.rand(n, nb, generator=g) * 0.02 + 0.01).to(torch.float16).to(torch.float32)
    s[::3] = -s[::3]                     # negative, zero and subnormal float16 scales too
    s.view(-1)[5::13] = 0.0
    s.view(-1)[7::17] = 2.0 ** -20
    return q, s, -8.0 * s


@pytest.mark.parametrize("activations", ["float", "int8"])
@pytest.mark.parametrize("n,k,m", [(1, 32, 1), (5, 100, 2), (37, 576, 7), (64, 576, 1),
                                   (35, 100, 17), (1536, 576, 1), (13, 1600, 40)])
def test_q4_0_blocks_are_stored_in_their_own_bytes_with_the_same_results(activations, n, k, m):
    q, s, mn = _q4_0_blocks(n, k)
    bias = torch.randn(n) if n % 2 else None
    kl = KwkerLinear(q, s, mn, bias, mode="int4", group=32, threads=2, scheme="q4_0",
                     activations=activations)
    code = kl._code
    assert code & Q4_0_FLAG, code
    ns = extension.load()
    plain = ns.linear_pack(code & ~Q4_0_FLAG, q, s, mn, 32)
    assert kl.packed.numel() * 4 == plain.numel() * 3       # 72 bytes per panel block, not 96
    v, s2, m2 = kl.unpack()
    assert torch.equal(v, q) and torch.equal(_quant._bits(s2), _quant._bits(s))
    assert torch.equal(_quant._bits(m2), _quant._bits(mn))
    x = torch.randn(m, k, generator=torch.Generator().manual_seed(9))
    with kwker.config():
        for e in ENGINES:
            kwker.set_isa(e)
            got = kl(x)
            want = ns.linear(x, plain, bias, code & ~Q4_0_FLAG, n, 32, 2)
            assert torch.equal(got.view(torch.int32), want.view(torch.int32)), (e, activations)


def test_blocks_that_are_not_q4_0_keep_the_24_byte_layout():
    q, s, mn = _q4_0_blocks(8, 64)
    # optimize()'s q4_0 scheme makes Q4_0 blocks (float16 scales): at group 32 they take the
    # flag; its q4_1 scheme and other groups do not.
    assert _layer(8, 64, "int4", scheme="q4_0")[1]._code & Q4_0_FLAG
    assert not _layer(8, 64, "int4", scheme="q4_1")[1]._code & Q4_0_FLAG
    assert not _layer(8, 64, "int4", group=64, scheme="q4_0")[1]._code & Q4_0_FLAG
    for scales, mins, group in ((s * 1.0001, mn * 1.0001, 32),       # not float16
                                (s, mn + 1e-3, 32),                  # min is not -8 d (Q4_1)
                                (s[:, ::2].contiguous(), mn[:, ::2].contiguous(), 64)):  # group 64
        kl = KwkerLinear(q, scales, mins, None, mode="int4", group=group, threads=1)
        assert not kl._code & Q4_0_FLAG
        assert kl.packed.numel() == (8 // 4) * (64 // group) * (32 + 2 * group)


def test_the_gguf_reader_gives_q4_0_blocks_for_the_flag():
    gguf = pytest.importorskip("gguf")
    from gguf import quants
    from types import SimpleNamespace
    from kwker.cpu_backend import _gguf
    w = torch.randn(8, 64, generator=torch.Generator().manual_seed(1)).numpy()
    raw = quants.quantize(w, gguf.GGMLQuantizationType.Q4_0)
    t = SimpleNamespace(tensor_type=gguf.GGMLQuantizationType.Q4_0, data=raw)
    q, d, m = (torch.from_numpy(a) for a in _gguf._blocks(t, 8, 64))
    assert _quant.q4_0_blocks(d, m)
    kl = KwkerLinear(q, d, m, None, mode="int4", group=32, threads=1, activations="int8")
    assert kl._code == 7 | Q4_0_FLAG
    # Q4_1 blocks carry their own minimums: the 24-byte layout.
    raw1 = quants.quantize(w, gguf.GGMLQuantizationType.Q4_1)
    t1 = SimpleNamespace(tensor_type=gguf.GGMLQuantizationType.Q4_1, data=raw1)
    assert not _quant.q4_0_blocks(*(torch.from_numpy(a) for a in _gguf._blocks(t1, 8, 64)[1:]))


def test_q4_0_layout_errors_are_clear_and_write_nothing():
    ns = extension.load()
    q, s, mn = _q4_0_blocks(4, 64)
    with pytest.raises(RuntimeError, match=r"row 1, block 0 is not a Q4_0 block .* without the flag"):
        bad = s.clone()
        bad[1, 0] = 0.1                                      # not a float16 value
        ns.linear_pack(3 | Q4_0_FLAG, q, bad, -8.0 * bad, 32)
    with pytest.raises(RuntimeError, match="goes with KWKER_LINEAR_INT4 or _INT4_A8"):
        ns.linear_pack(2 | Q4_0_FLAG, q.to(torch.int8), s, None, 32)
    with pytest.raises(RuntimeError, match="group must be 32"):
        ns.linear_pack(3 | Q4_0_FLAG, q, s[:, ::2].contiguous(), mn[:, ::2].contiguous(), 64)
