"""Shared pieces of the dropout-backward proof (no tests here; imported by test_dropout_v3_grad_kat.py and
current_torch/test_dropout_live_torch.py): the known-answer files, ctypes calls of aclnnDropoutV3Grad,
aclnnDropoutDoMask and the native_dropout_backward dispatch on numpy bit arrays, NaN-aware bit comparison,
and a numpy emulation of the legacy DoMask arithmetic (spec 1.4.1). Needs numpy only."""
import contextlib
import ctypes
import os

import numpy as np

from gradkit_ctypes import ACL_BF16, ACL_FLOAT, ACL_FLOAT16, ACL_UINT8, NumpyTensor, run_two_phase

DATA_DIR = os.path.join(os.path.dirname(__file__), "..", "data", "dropout")
DTYPES = {"fp32": ACL_FLOAT, "fp16": ACL_FLOAT16, "bf16": ACL_BF16}
BITS = {"fp32": np.uint32, "fp16": np.uint16, "bf16": np.uint16}
# DropoutBackwardPath values of include/gradkit/native_dropout.h
PATH_V3GRAD, PATH_DOMASK = 4, 5


def load_kat(name):
    """The known-answer file of one dtype as a dict of numpy arrays."""
    with np.load(os.path.join(DATA_DIR, f"native_dropout_backward_{name}.npz")) as data:
        return {key: data[key] for key in data.files}


def declare(lib):
    """Argument types of the calls made here (doubles must be passed as C doubles)."""
    vp = ctypes.c_void_p
    lib.aclnnDropoutV3GradGetWorkspaceSize.argtypes = [vp, vp, ctypes.c_double, vp, vp, vp]
    lib.aclnnDropoutDoMaskGetWorkspaceSize.argtypes = [vp, vp, ctypes.c_double, vp, vp, vp]
    lib.gradkitNativeDropoutBackward.argtypes = [vp, vp, ctypes.c_double, vp, vp, ctypes.POINTER(ctypes.c_int32)]
    lib.gradkitNativeDropout.argtypes = [vp, ctypes.c_double, ctypes.c_bool, ctypes.c_int64, ctypes.c_int64, vp,
                                         vp, vp, ctypes.POINTER(ctypes.c_int32)]
    return lib


def is_nan(bits, name):
    """NaN positions of raw bit patterns."""
    bits = bits.astype(np.uint32)
    if name == "fp32":
        return ((bits & 0x7F800000) == 0x7F800000) & ((bits & 0x007FFFFF) != 0)
    if name == "fp16":
        return ((bits & 0x7C00) == 0x7C00) & ((bits & 0x03FF) != 0)
    return ((bits & 0x7F80) == 0x7F80) & ((bits & 0x007F) != 0)


def differing(actual, expected, name):
    """Elements whose bits differ, where any NaN equals any NaN (payloads are an implementation detail: torch
    itself writes 0x7FC0 or 0xFFFF for a bf16 NaN depending on its vector path)."""
    nan_expected, nan_actual = is_nan(expected, name), is_nan(actual, name)
    return np.where(nan_expected, ~nan_actual, actual != expected)


class _View:
    """shape/strides/offset of a view over 1-D storage (in elements)."""

    def __init__(self, shape, strides=None, offset=0):
        self.shape = [int(d) for d in shape]
        if strides is None:
            strides, step = [], 1
            for dim in reversed(self.shape):
                strides.insert(0, step)
                step *= dim
        self.strides = [int(s) for s in strides]
        self.offset = int(offset)

    def gather(self, storage):
        """The view's elements in row-major order."""
        itemsize = storage.itemsize
        view = np.lib.stride_tricks.as_strided(storage[self.offset:], self.shape,
                                               [s * itemsize for s in self.strides])
        return view.reshape(-1).copy()


def contiguous(shape):
    return _View(shape)


def strided(shape, strides, offset):
    return _View(shape, strides, offset)


def out_view(shape):
    """A non-contiguous output view: column-major with a one-element gap after every element, at offset 3;
    returns the view and the storage size it needs."""
    strides, step = [], 2
    for dim in shape:
        strides.append(step)
        step *= int(dim)
    return _View(shape, strides, 3), 3 + 2 * int(np.prod(shape))


def _output(name, view_and_size):
    if view_and_size is None:
        return None, None
    view, size = view_and_size
    return view, np.full(size, 0x5A5A5A5A if name == "fp32" else 0x5A5A, dtype=BITS[name])


class Runner:
    """Runs the ops on bit arrays: grad storage + view, packed mask, into a dense or strided output."""

    def __init__(self, lib):
        self.lib = declare(lib)

    def _tensors(self, name, grad_storage, grad_view, mask, out):
        out_view, out_storage = out
        grad = NumpyTensor(self.lib, grad_storage, DTYPES[name], grad_view.shape, grad_view.strides,
                           grad_view.offset)
        packed = NumpyTensor(self.lib, mask, ACL_UINT8)
        result = NumpyTensor(self.lib, out_storage, DTYPES[name], out_view.shape, out_view.strides, out_view.offset)
        return grad, packed, result

    def _out(self, name, grad_view, strided_out):
        if strided_out:
            return _output(name, out_view(grad_view.shape))
        n = int(np.prod(grad_view.shape))
        return _output(name, (contiguous(grad_view.shape), n))

    def v3_grad(self, name, grad_storage, grad_view, mask, scale, strided_out=False):
        out = self._out(name, grad_view, strided_out)
        grad, packed, result = self._tensors(name, grad_storage, grad_view, mask, out)
        status = run_two_phase(self.lib, "DropoutV3Grad", grad.handle, packed.handle, scale, result.handle)
        assert status == 0, self.lib.aclGetRecentErrMsg().decode()
        return out[0].gather(out[1])

    def do_mask(self, name, grad_storage, grad_view, mask, p, strided_out=False):
        out = self._out(name, grad_view, strided_out)
        grad, packed, result = self._tensors(name, grad_storage, grad_view, mask, out)
        status = run_two_phase(self.lib, "DropoutDoMask", grad.handle, packed.handle, p, result.handle)
        assert status == 0, self.lib.aclGetRecentErrMsg().decode()
        return out[0].gather(out[1])

    def dispatch(self, name, grad_storage, grad_view, mask, scale, strided_out=False):
        """gradkit::native_dropout_backward; returns (result bits, path value)."""
        out = self._out(name, grad_view, strided_out)
        grad, packed, result = self._tensors(name, grad_storage, grad_view, mask, out)
        path = ctypes.c_int32(-1)
        status = self.lib.gradkitNativeDropoutBackward(grad.handle, packed.handle, scale, result.handle, None,
                                                       ctypes.byref(path))
        if status == 0:
            status = self.lib.aclrtSynchronizeStream(None)
        assert status == 0, self.lib.aclGetRecentErrMsg().decode()
        return out[0].gather(out[1]), path.value


@contextlib.contextmanager
def disabled_ops(names):
    """Sets GRADKIT_DISABLE_OPS for the duration (os.environ reaches the library's getenv)."""
    previous = os.environ.get("GRADKIT_DISABLE_OPS")
    os.environ["GRADKIT_DISABLE_OPS"] = names
    try:
        yield
    finally:
        if previous is None:
            del os.environ["GRADKIT_DISABLE_OPS"]
        else:
            os.environ["GRADKIT_DISABLE_OPS"] = previous


def unpack_mask(mask, count):
    """The keep bits of elements 0..count-1 (LSB first)."""
    return np.unpackbits(mask, bitorder="little")[:count].astype(bool)


def _bf16_bits(values32):
    """float32 -> bf16 bits, round to nearest even (NaN stays NaN)."""
    bits = values32.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(values32), np.uint16(0x7FC0), rounded)


def to_float32(bits, name):
    if name == "fp32":
        return bits.view(np.float32)
    if name == "fp16":
        return bits.view(np.float16).astype(np.float32)
    return (bits.astype(np.uint32) << 16).view(np.float32)


def from_float32(values32, name):
    if name == "fp32":
        return values32.astype(np.float32).view(np.uint32)
    if name == "fp16":
        with np.errstate(over="ignore"):
            return values32.astype(np.float16).view(np.uint16)
    return _bf16_bits(values32.astype(np.float32))


def legacy_emulation(name, grad_bits, keep, p):
    """aclnnDropoutDoMask's arithmetic in numpy: keep = float32(1 - p) rounded to the dtype, r = RN32(1 / keep),
    out = bit ? T(RN32(x * r)) : +0."""
    keep_prob = np.array([1.0 - p], dtype=np.float32)
    keep_prob = to_float32(from_float32(keep_prob, name), name)
    reciprocal = np.float32(1.0) / keep_prob[0]
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = to_float32(grad_bits, name) * reciprocal
    out = from_float32(scaled.astype(np.float32), name)
    return np.where(keep, out, np.zeros_like(out))
