"""Live proof against a current PyTorch (>= 2.7, the version the RFC targets): on fresh random data every run
(seed printed; GRADKIT_LIVE_SEED repeats a run), aclnnDropoutV3Grad and gradkit::native_dropout_backward (V3Grad
path) equal torch.ops.aten.native_dropout_backward(grad, bool_mask, scale) bit for bit (any NaN matching any
NaN) for fp32/fp16/bf16, contiguous and non-contiguous, and with a mask made by gradkit::native_dropout and
unpacked into torch's bool mask. Skips cleanly without such a torch (Debian's 1.13 rounds the scale to
fp16/bf16 first, so it is not a reference here)."""
import ctypes
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
if tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2]) < (2, 7):
    pytest.skip(f"torch {torch.__version__} < 2.7 is not the reference for dropout", allow_module_level=True)

from gradkit_ctypes import NumpyTensor, load_library  # noqa: E402
from seeds import stable_seed  # noqa: E402
from test_dropout_common import (BITS, DTYPES, PATH_V3GRAD, Runner, contiguous, differing,  # noqa: E402
                                 strided)

RUNNER = Runner(load_library())
TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
TORCH_BITS = {"fp32": torch.int32, "fp16": torch.int16, "bf16": torch.int16}
SEED = int(os.environ.get("GRADKIT_LIVE_SEED") or int.from_bytes(os.urandom(4), "little"))
P_VALUES = [0.1, 0.15, 0.3, 0.5, 0.9, 0.021, 0.319]


def setup_module():
    print(f"\nlive dropout cross-check: torch {torch.__version__}, GRADKIT_LIVE_SEED={SEED}")


def rng_for(*parts):
    return np.random.default_rng([SEED, *[stable_seed(str(part)) for part in parts]])


def random_grad(rng, shape, name):
    """Wide exponents, plain values, subnormals, near-max values and ~10% NaN/Inf/-Inf/-0/+0."""
    info = torch.finfo(TORCH_DTYPES[name])
    count = int(np.prod(shape))
    kind = rng.integers(0, 100, count)
    sign = np.where(rng.integers(0, 2, count) == 0, 1.0, -1.0)
    values = sign * rng.uniform(1.0, 2.0, count) * np.exp2(rng.integers(-20, 21, count).astype(np.float64))
    values = np.where(kind >= 70, rng.uniform(-4.0, 4.0, count), values)
    values = np.where((kind >= 80) & (kind < 85), sign * rng.uniform(0.0, info.tiny, count), values)
    values = np.where((kind >= 85) & (kind < 90), sign * rng.uniform(0.5, 1.0, count) * info.max, values)
    specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0])[rng.integers(0, 5, count)]
    values = np.where(kind >= 90, specials, values)
    return torch.from_numpy(values).to(TORCH_DTYPES[name]).reshape(shape)


def random_mask(rng, count, p):
    """(packed uint8 mask with random padding bits, torch bool keep vector)."""
    keep = rng.random(count) >= p
    padded = np.concatenate([keep, rng.integers(0, 2, (count + 127) // 128 * 128 - count).astype(bool)])
    return np.packbits(padded, bitorder="little"), torch.from_numpy(keep)


def bits_of(tensor, name):
    """Row-major bit patterns of a torch tensor as the numpy unsigned type."""
    return tensor.contiguous().view(TORCH_BITS[name]).reshape(-1).numpy().view(BITS[name]).copy()


def assert_same(actual, expected, name, what):
    bad = differing(actual, expected, name)
    assert bad.sum() == 0, (f"{what}: {bad.sum()} of {bad.size} elements differ from torch, first at "
                            f"{np.flatnonzero(bad)[:5]} (GRADKIT_LIVE_SEED={SEED})")


def probabilities():
    extra = rng_for("p").uniform(0.001, 0.999, 3)
    return P_VALUES + [float(p) for p in extra]


@pytest.mark.parametrize("name", list(DTYPES))
def test_contiguous_random_shapes(name):
    for p in probabilities():
        rng = rng_for(name, p)
        shape = tuple(int(d) for d in rng.integers(1, 40, rng.integers(1, 5)))
        grad = random_grad(rng, shape, name)
        packed, keep = random_mask(rng, grad.numel(), p)
        scale = 1.0 / (1.0 - p)
        expected = bits_of(torch.ops.aten.native_dropout_backward(grad, keep.reshape(shape), scale), name)
        storage = bits_of(grad, name)
        assert_same(RUNNER.v3_grad(name, storage, contiguous(shape), packed, scale), expected, name,
                    f"V3Grad {name} p={p} shape={shape}")
        result, path = RUNNER.dispatch(name, storage, contiguous(shape), packed, scale, strided_out=True)
        assert path == PATH_V3GRAD
        assert_same(result, expected, name, f"dispatch {name} p={p} shape={shape}")


@pytest.mark.parametrize("name", list(DTYPES))
def test_non_contiguous_views(name):
    for p in probabilities():
        rng = rng_for(name, p, "strided")
        base_shape = tuple(int(d) for d in rng.integers(2, 30, 3))
        base = random_grad(rng, base_shape, name)
        view = base.permute(2, 0, 1)[1:, :, ::2]  # transposed, offset, stepped
        packed, keep = random_mask(rng, view.numel(), p)
        scale = 1.0 / (1.0 - p)
        expected = bits_of(torch.ops.aten.native_dropout_backward(view, keep.reshape(view.shape), scale), name)
        grad_view = strided(view.shape, view.stride(), view.storage_offset())
        storage = bits_of(base, name)
        for strided_out in (False, True):
            assert_same(RUNNER.v3_grad(name, storage, grad_view, packed, scale, strided_out), expected, name,
                        f"V3Grad {name} p={p} view {tuple(view.shape)} {view.stride()}")
            result, path = RUNNER.dispatch(name, storage, grad_view, packed, scale, strided_out)
            assert path == PATH_V3GRAD
            assert_same(result, expected, name, f"dispatch {name} p={p} view {tuple(view.shape)}")


def native_dropout_mask(name, values, p, seed, offset):
    """gradkit::native_dropout on a contiguous tensor: (output bits, packed mask)."""
    lib = RUNNER.lib
    count = values.size
    out = np.zeros(count, dtype=BITS[name])
    mask = np.zeros((count + 127) // 128 * 16, dtype=np.uint8)
    tensors = [NumpyTensor(lib, values, DTYPES[name]), NumpyTensor(lib, out, DTYPES[name]), NumpyTensor(lib, mask)]
    path = ctypes.c_int32(-1)
    status = lib.gradkitNativeDropout(tensors[0].handle, p, True, seed, offset, tensors[1].handle,
                                      tensors[2].handle, None, ctypes.byref(path))
    if status == 0:
        status = lib.aclrtSynchronizeStream(None)
    assert status == 0, lib.aclGetRecentErrMsg().decode()
    return out, mask


@pytest.mark.parametrize("name", list(DTYPES))
def test_backward_of_gradkits_own_forward_mask(name):
    """Forward with gradkit::native_dropout, unpack its packed mask into torch's bool mask, and compare the
    backward of both sides with PyTorch's autograd scale."""
    for p in probabilities():
        rng = rng_for(name, p, "forward")
        count = int(rng.integers(1, 5000))
        values = bits_of(random_grad(rng, (count,), name), name)
        _, mask = native_dropout_mask(name, values, p, int(rng.integers(0, 2**62)), 4 * int(rng.integers(0, 1000)))
        keep = torch.from_numpy(np.unpackbits(mask, bitorder="little")[:count].astype(bool))
        assert abs(keep.float().mean().item() - (1 - p)) < 0.05 + 5 / count**0.5  # a mask, not a constant
        grad = random_grad(rng, (count,), name)
        scale = 1.0 / (1.0 - p)
        expected = bits_of(torch.ops.aten.native_dropout_backward(grad, keep, scale), name)
        result, path = RUNNER.dispatch(name, bits_of(grad, name), contiguous((count,)), mask, scale)
        assert path == PATH_V3GRAD
        assert_same(result, expected, name, f"forward mask {name} p={p} n={count}")
