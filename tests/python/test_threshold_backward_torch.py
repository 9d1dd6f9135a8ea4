"""ThresholdBackward against PyTorch's threshold_backward (Debian's torch 1.13): bit for bit, on random
data with NaN/Inf/-0, contiguous, strided and broadcast views, for zero and non-zero thresholds, values
next to the threshold, thresholds not representable in the tensor dtype, integer thresholds with fractions,
negative thresholds and uint8's wrap-around (docs/threshold_backward.md).

Reference for fp16/bf16: current PyTorch compares float(self) <= float(threshold) on the CPU. torch 1.13 has
no fp16 threshold on the CPU, and its bf16 kernel rounds the threshold to bf16 first, so both are checked
against torch's fp32 result on the widened values, narrowed back (exact: the op only selects values); bf16
is also checked directly against 1.13 wherever the threshold is a bf16 value (the two rules then agree)."""
import ctypes
import math

import numpy as np
import pytest
import torch

from gradkit_ctypes import Tensor, load_library, run_two_phase
from seeds import stable_seed

LIB = load_library()
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int32, torch.int64]
FLOATS = [torch.float32, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.uint8, torch.int32]
ACL_INT64, ACL_DOUBLE = 9, 11


def random_tensor(shape, dtype, generator, low=-20, high=20):
    """Values in [low, high] (uint8: [0, 20]) with NaN, Inf, -Inf, -0 and +0 sprinkled in for float dtypes."""
    if dtype.is_floating_point:
        values = torch.rand(shape, generator=generator) * (high - low) + low
        pick = torch.randint(0, 10, shape, generator=generator)
        values[pick == 0] = float("nan")
        values[pick == 1] = float("inf")
        values[pick == 2] = float("-inf")
        values[pick == 3] = -0.0
        values[pick == 4] = 0.0
        return values.to(dtype)
    if dtype == torch.uint8:
        low, high = 0, 20
    return torch.randint(low, high + 1, shape, generator=generator).to(dtype)


def torch_reference(grad, self, threshold=0):
    """PyTorch's threshold_backward; fp16/bf16 through fp32 on the widened values (float(x) <= float(t))."""
    if grad.dtype in (torch.float16, torch.bfloat16):
        return torch.ops.aten.threshold_backward(grad.float(), self.float(), threshold).to(grad.dtype)
    return torch.ops.aten.threshold_backward(grad, self, threshold)


def make_scalar(threshold):
    """A Python int becomes an INT64 aclScalar and a float a DOUBLE one, as torch_npu passes an at::Scalar."""
    if isinstance(threshold, int):
        value, dtype = ctypes.c_int64(threshold), ACL_INT64
    else:
        value, dtype = ctypes.c_double(threshold), ACL_DOUBLE
    return LIB.aclCreateScalar(ctypes.byref(value), dtype)


def gradkit_threshold_backward(grad, self, out, threshold=0):
    scalar = make_scalar(threshold)
    tensors = [Tensor(LIB, t) for t in (grad, self, out)]  # alive until the op has run
    try:
        status = run_two_phase(LIB, "ThresholdBackward", ctypes.c_void_p(tensors[0].handle),
                               ctypes.c_void_p(tensors[1].handle), ctypes.c_void_p(scalar),
                               ctypes.c_void_p(tensors[2].handle))
    finally:
        LIB.aclDestroyScalar(scalar)
    assert status == 0, LIB.aclGetRecentErrMsg().decode()


def run(grad, self, threshold=0):
    shape = torch.broadcast_shapes(grad.shape, self.shape)
    out = torch.full(shape, 7, dtype=grad.dtype)
    gradkit_threshold_backward(grad, self, out, threshold)
    return out


def bits(tensor):
    """The raw bit patterns, so NaN == NaN and -0 != +0."""
    if tensor.dtype in (torch.float16, torch.bfloat16):
        return tensor.contiguous().view(torch.int16)
    if tensor.dtype == torch.float32:
        return tensor.contiguous().view(torch.int32)
    return tensor.contiguous()


def assert_bit_exact(ours, reference):
    assert torch.equal(bits(ours), bits(reference)), (ours, reference)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(1,), (63,), (1000,), (17, 33), (4, 5, 6, 7), ()], ids=str)
def test_contiguous_bit_exact(dtype, shape):
    generator = torch.Generator().manual_seed(stable_seed(dtype, shape))
    grad = random_tensor(shape, dtype, generator)
    self = random_tensor(shape, dtype, generator)
    assert_bit_exact(run(grad, self), torch_reference(grad, self))


FLOAT_THRESHOLDS = [0, 1, -3, 1.0, -1.5, 0.3, 7.25, 19.99, -20.0, 1e-30, -0.0, float("nan"), float("inf"),
                    float("-inf"), 3.4e38]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("threshold", FLOAT_THRESHOLDS, ids=repr)
def test_float_thresholds_bit_exact(dtype, threshold):
    generator = torch.Generator().manual_seed(7)
    grad = random_tensor((1031,), dtype, generator)
    self = random_tensor((1031,), dtype, generator)
    assert_bit_exact(run(grad, self, threshold), torch_reference(grad, self, threshold))


def neighbours(value, dtype, count=3):
    """The `count` representable values of `dtype` on each side of `value` rounded to `dtype`, and it."""
    center = torch.tensor([value], dtype=torch.float32).to(dtype)
    width, as_int = (32, torch.int32) if dtype == torch.float32 else (16, torch.int16)
    bits_ = center.view(as_int).item()
    # Step along the number line in sign-magnitude order, so the neighbours of +-0 are the tiniest values.
    magnitude = bits_ & ((1 << (width - 1)) - 1)
    ordinal = -magnitude if bits_ < 0 else magnitude
    values = []
    for k in range(-count, count + 1):
        w = ordinal + k
        encoded = w if w >= 0 else (1 << (width - 1)) | -w
        values.append(encoded - (1 << width) if encoded >= (1 << (width - 1)) else encoded)
    return torch.tensor(values, dtype=as_int).view(dtype)


# Thresholds on representable values, halfway between them, and off any fp16/bf16/fp32 grid.
NEIGHBOUR_THRESHOLDS = [1.0, -1.0, 0.1, -0.1, 1.0 + 2**-12, 1.0 + 2**-7 - 2**-9, 1.0 + 2**-24 + 2**-40,
                        1.0 + 2**-24, 3.14159, -2.5e-3, 1000.3, 65504.0, 65519.0, 65520.0, 1e-7, 6e-8, 2.0**-140]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("threshold", NEIGHBOUR_THRESHOLDS, ids=repr)
def test_values_next_to_the_threshold(dtype, threshold):
    """self walks the representable values around t (as rounded to the dtype and to fp32)."""
    values = torch.cat([neighbours(threshold, dtype), neighbours(np.float32(threshold).item(), dtype),
                        neighbours(-threshold, dtype)])
    values = values[torch.isfinite(values.float())]
    grad = torch.arange(1, values.numel() + 1, dtype=torch.float32).to(dtype)
    ours = run(grad, values, threshold)
    assert_bit_exact(ours, torch_reference(grad, values, threshold))
    # The rule itself, independent of torch: kept exactly where float(self) > float(t).
    t32 = np.float32(threshold)
    expected_keep = values.float().numpy() > t32
    assert np.array_equal(ours.float().numpy() != 0, expected_keep)


@pytest.mark.parametrize("threshold", [1.0, -1.5, 0.5, 7.0, 0.0, 2.0**-133, -float.fromhex("0x1.1p127"), float.fromhex("0x1.1p127")])
def test_bf16_matches_torch_113_directly_where_the_threshold_is_a_bf16_value(threshold):
    assert torch.tensor(threshold).to(torch.bfloat16).double().item() == threshold
    generator = torch.Generator().manual_seed(11)
    grad = random_tensor((777,), torch.bfloat16, generator)
    self = torch.cat([random_tensor((770,), torch.bfloat16, generator), neighbours(threshold, torch.bfloat16)])
    direct = torch.ops.aten.threshold_backward(grad, self, threshold)
    assert_bit_exact(run(grad, self, threshold), direct)


def test_torch_113_bf16_rounds_the_threshold_to_bf16_first_and_gradkit_does_not():
    """Documents the one known disagreement (docs/threshold_backward.md): t = 1 + 2^-7 - 2^-9 lies below the
    bf16 value 1 + 2^-7 but rounds to it in bf16. Current PyTorch (float compare) keeps that self; 1.13 drops it."""
    self = torch.tensor([1.0 + 2**-7], dtype=torch.bfloat16)
    grad = torch.ones(1, dtype=torch.bfloat16)
    t = 1.0 + 2**-7 - 2**-9
    assert run(grad, self, t).item() == 1.0
    old = torch.ops.aten.threshold_backward(grad, self, t).item()
    if torch.__version__.startswith("1."):
        assert old == 0.0
    else:
        assert old == 1.0


def test_torch_lacks_fp16_threshold_on_cpu_so_fp16_uses_the_fp32_reference():
    """Documents why fp16 is compared through fp32: if a future torch adds fp16, compare directly."""
    grad = torch.ones(3, dtype=torch.float16)
    try:
        direct = torch.ops.aten.threshold_backward(grad, grad, 0)
    except RuntimeError:
        return
    assert torch.equal(direct, torch_reference(grad, grad))


INT_THRESHOLDS = {
    torch.int8: [0, 1, -1, 5, -7, 127, -128, 1.5, -1.5, -0.5, 0.5, 2.99, -2.99, 126.9, -127.9],
    torch.uint8: [0, 1, 5, 200, 255, -1, -2, -129, -255, 1.5, 0.5, 2.99, 254.9, 100.0],
    torch.int32: [0, 1, -1, 5, -7, 1.5, -1.5, -0.5, 2**31 - 1, -(2**31), 2147483647.0, -2147483648.0, 1e9, -7.9],
}


@pytest.mark.parametrize("dtype,threshold", [(d, t) for d, ts in INT_THRESHOLDS.items() for t in ts],
                         ids=lambda v: str(v))
def test_integer_thresholds_bit_exact(dtype, threshold):
    """Fractions truncate toward zero; uint8 reads an int threshold in [-255, -1] modulo 256 (torch's rule)."""
    generator = torch.Generator().manual_seed(5)
    info = torch.iinfo(dtype)
    grad = torch.randint(info.min, info.max + 1, (999,), generator=generator, dtype=torch.int64).to(dtype)
    center = int(threshold) if abs(threshold) < 2**31 else 0
    if dtype == torch.uint8 and isinstance(threshold, int) and threshold < 0:
        center = threshold % 256  # torch reads it modulo 256
    low, high = max(info.min, center - 5), min(info.max, center + 5)
    self = torch.randint(low, high + 1, (999,), generator=generator, dtype=torch.int64).to(dtype)
    self = torch.cat([self, torch.tensor([info.min, info.max, low, high], dtype=dtype)])
    grad = torch.cat([grad, torch.tensor([1, 2, 3, 4], dtype=dtype)])
    assert_bit_exact(run(grad, self, threshold), torch.ops.aten.threshold_backward(grad, self, threshold))


@pytest.mark.parametrize("threshold", [0, 1e-8, -1e-9])
def test_int64_zero_threshold_bit_exact(threshold):
    generator = torch.Generator().manual_seed(3)
    grad = torch.randint(-2**62, 2**62, (513,), generator=generator)
    self = torch.randint(-3, 4, (513,), generator=generator)
    assert_bit_exact(run(grad, self, threshold), torch.ops.aten.threshold_backward(grad, self, threshold))


# Where torch refuses the threshold (it cannot convert it to the tensor dtype), gradkit computes
# self > trunc(t) exactly (NaN keeps everything); floats round t to fp32, overflowing to +-inf.
REJECTED_BY_TORCH = [
    (torch.int8, 200, "none"), (torch.int8, -200, "all"), (torch.int8, 127.5, "none"), (torch.int8, -129, "all"),
    (torch.int8, float("nan"), "all"), (torch.uint8, -1.0, "all"), (torch.uint8, -1.5, "all"), (torch.uint8, -0.5, "above0"),
    (torch.uint8, -256, "all"), (torch.uint8, 256, "none"), (torch.uint8, 255.5, "none"),
    (torch.int32, 2.5e9, "none"), (torch.int32, -2.5e9, "all"), (torch.int32, 2**31, "none"),
    (torch.float32, 1e39, "nan_only"), (torch.float32, -1e39, "not_neg_inf"), (torch.bfloat16, 1e39, "nan_only"),
]


@pytest.mark.parametrize("dtype,threshold,kept", REJECTED_BY_TORCH, ids=str)
def test_thresholds_torch_rejects_follow_the_documented_rule(dtype, threshold, kept):
    generator = torch.Generator().manual_seed(9)
    if dtype.is_floating_point:
        self = random_tensor((300,), dtype, generator)
        grad = torch.ones(300, dtype=dtype)
    else:
        info = torch.iinfo(dtype)
        self = torch.randint(info.min, info.max + 1, (300,), generator=generator, dtype=torch.int64).to(dtype)
        self = torch.cat([self, torch.tensor([info.min, info.max], dtype=dtype)])
        grad = torch.ones(302, dtype=dtype)
    with pytest.raises(RuntimeError, match="overflow"):
        torch.ops.aten.threshold_backward(grad, self, threshold)
    ours = run(grad, self, threshold)
    if kept == "all":
        expected = grad
    elif kept == "none":
        expected = torch.zeros_like(grad)
    elif kept == "above0":  # -0.5 truncates to 0, as it does for int8 where torch accepts it
        expected = torch.where(self > 0, grad, torch.zeros_like(grad))
    elif kept == "nan_only":
        expected = torch.where(torch.isnan(self), grad, torch.zeros_like(grad))
    else:  # not_neg_inf: t = -inf, every value but -inf is above it
        expected = torch.where(self == float("-inf"), torch.zeros_like(grad), grad)
    assert_bit_exact(ours, expected)


BROADCASTS = [((33, 40), (33, 1)), ((33, 40), (40,)), ((7, 9), ()), ((), (65,)), ((17, 1), (17, 64)),
              ((1, 64), (17, 1)), ((3, 1), (4, 1, 5)), ((6, 5, 7), (6, 1, 7)), ((2, 1, 3, 1, 1, 2, 1, 2), (1, 2, 1, 2, 3, 1)),
              ((700, 301), (700, 1)), ((2, 0), (1,))]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shapes", BROADCASTS, ids=str)
def test_broadcast_bit_exact(dtype, shapes):
    generator = torch.Generator().manual_seed(21)
    grad = random_tensor(shapes[0], dtype, generator)
    self = random_tensor(shapes[1], dtype, generator)
    threshold = 0 if dtype == torch.int64 else 2.5
    assert_bit_exact(run(grad, self, threshold), torch_reference(grad, self, threshold))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_expanded_and_strided_broadcast_views(dtype):
    generator = torch.Generator().manual_seed(22)
    grad = random_tensor((40, 30), dtype, generator).t()[:, 1:]       # [30, 39], transposed
    self = random_tensor((30, 3), dtype, generator)[:, 1:2].expand(30, 39)  # stride 0 along the rows
    threshold = 0 if dtype == torch.int64 else 1.5
    assert_bit_exact(run(grad, self, threshold), torch_reference(grad, self, threshold))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_strided_views_bit_exact(dtype):
    generator = torch.Generator().manual_seed(1234)
    base_grad = random_tensor((40, 30), dtype, generator)
    base_self = random_tensor((30, 90), dtype, generator)
    grad = base_grad.t()[:, 1:]                 # [30, 39], transposed, storage offset 40
    self = base_self[:, ::2][:, 3:42]           # [30, 39], stride 2, storage offset 6
    out_storage = torch.full((39, 31), 5, dtype=dtype)
    out = out_storage.t()[1:, :]                # [30, 39], transposed, storage offset 1
    gradkit_threshold_backward(grad, self, out)
    assert torch.equal(bits(out), bits(torch_reference(grad, self)))
    assert torch.equal(bits(out_storage[:, 0]), bits(torch.full((39,), 5, dtype=dtype)))  # untouched column


def test_nan_threshold_keeps_every_gradient_like_torch():
    self = torch.tensor([-math.inf, -1.0, 0.0, 1.0, math.inf, math.nan])
    grad = torch.arange(1.0, 7.0)
    reference = torch.ops.aten.threshold_backward(grad, self, math.nan)
    assert torch.equal(reference, grad)
    assert_bit_exact(run(grad, self, math.nan), reference)
