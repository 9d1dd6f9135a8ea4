"""ThresholdBackward against PyTorch's threshold_backward (Debian's torch 1.13): bit for bit, on random
data with NaN/Inf/-0, contiguous and strided views. torch 1.13 has no fp16 threshold on the CPU, so fp16
is checked against torch's fp32 result narrowed to fp16 (exact: the op only selects values)."""
import ctypes

import pytest
import torch

from gradkit_ctypes import Tensor, load_library, run_two_phase

LIB = load_library()
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int32, torch.int64]


def random_tensor(shape, dtype, generator):
    """Values in [-20, 20] (uint8: [0, 20]) with NaN, Inf, -Inf, -0 and +0 sprinkled in for float dtypes."""
    if dtype.is_floating_point:
        values = torch.rand(shape, generator=generator) * 40 - 20
        pick = torch.randint(0, 10, shape, generator=generator)
        values[pick == 0] = float("nan")
        values[pick == 1] = float("inf")
        values[pick == 2] = float("-inf")
        values[pick == 3] = -0.0
        values[pick == 4] = 0.0
        return values.to(dtype)
    low = 0 if dtype == torch.uint8 else -20
    return torch.randint(low, 21, shape, generator=generator).to(dtype)


def torch_reference(grad, self):
    if grad.dtype == torch.float16:
        return torch.ops.aten.threshold_backward(grad.float(), self.float(), 0).half()
    return torch.ops.aten.threshold_backward(grad, self, 0)


def gradkit_threshold_backward(grad, self, out):
    threshold = ctypes.c_int32(0)
    scalar = LIB.aclCreateScalar(ctypes.byref(threshold), 3)  # ACL_INT32
    tensors = [Tensor(LIB, t) for t in (grad, self, out)]  # alive until the op has run
    try:
        status = run_two_phase(LIB, "ThresholdBackward", ctypes.c_void_p(tensors[0].handle),
                               ctypes.c_void_p(tensors[1].handle), ctypes.c_void_p(scalar),
                               ctypes.c_void_p(tensors[2].handle))
    finally:
        LIB.aclDestroyScalar(scalar)
    assert status == 0, LIB.aclGetRecentErrMsg().decode()


def bits(tensor):
    """The raw bit patterns, so NaN == NaN and -0 != +0."""
    if tensor.dtype in (torch.float16, torch.bfloat16):
        return tensor.contiguous().view(torch.int16)
    if tensor.dtype == torch.float32:
        return tensor.contiguous().view(torch.int32)
    return tensor.contiguous()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(1,), (63,), (1000,), (17, 33), (4, 5, 6, 7), ()], ids=str)
def test_contiguous_bit_exact(dtype, shape):
    generator = torch.Generator().manual_seed(hash((str(dtype), shape)) % (2**31))
    grad = random_tensor(shape, dtype, generator)
    self = random_tensor(shape, dtype, generator)
    out = torch.full(shape, 7, dtype=dtype)
    gradkit_threshold_backward(grad, self, out)
    assert torch.equal(bits(out), bits(torch_reference(grad, self)))


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


def test_torch_lacks_fp16_threshold_on_cpu_so_fp16_uses_the_fp32_reference():
    """Documents why fp16 is compared through fp32: if a future torch adds fp16, compare directly."""
    grad = torch.ones(3, dtype=torch.float16)
    try:
        direct = torch.ops.aten.threshold_backward(grad, grad, 0)
    except RuntimeError:
        return
    assert torch.equal(direct, torch_reference(grad, grad))
