#!/usr/bin/env python3
"""Generates the dropout-backward known-answer files in tests/data/dropout/ with a current PyTorch (>= 2.7).

Run with the venv's python (./run.sh torch-venv creates it):
    ${GRADKIT_TORCH_VENV:-$HOME/.cache/gradkit/torch-venv}/bin/python tools/kat/gen_dropout_kat.py

For fp32, fp16 and bf16 it writes native_dropout_backward_<dtype>.npz holding, as raw bit patterns:
  grad            [n] one gradient shared by every p (NaN, +-Inf, +-0, subnormals, near-max values, wide exponents)
  masks           [len(p), maskBytes(n)] packed masks (LSB first, 1 = keep, 128-bit aligned, random padding bits)
  expected        [len(p), n] torch.ops.aten.native_dropout_backward(grad, bool_mask, scale), scale = 1/(1-p)
  extra_scales / extra_expected   scales the host dispatch short-circuits (1, 0, +Inf), for aclnnDropoutV3Grad only
  strided_*       one non-contiguous gradient view (storage, shape, strides, offset) with its mask and result
plus p, scale (float64), shape and torch_version. Bits: uint32 for fp32, uint16 for fp16/bf16 (numpy has no bf16).

Torch is the oracle; nothing here computes the expected values itself. Debian's torch 1.13 is refused: it
rounds the scale to fp16/bf16 before multiplying, which is not the semantics the RFC targets.
"""
import argparse
import os

import numpy as np
import torch

P_VALUES = [0.1, 0.15, 0.3, 0.5, 0.9, 0.021, 0.319]
EXTRA_SCALES = [1.0, 0.0, float("inf")]
SHAPE = (25, 401)  # 10025 elements: not a multiple of 128, so the mask has padding bits
STRIDED_P = 0.15
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
BITS_DTYPE = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}
NUMPY_BITS = {torch.float32: np.uint32, torch.float16: np.uint16, torch.bfloat16: np.uint16}
SPECIALS = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0]


def torch_is_current():
    major, minor = (int(part) for part in torch.__version__.split("+")[0].split(".")[:2])
    return (major, minor) >= (2, 7)


def mask_bytes(numel):
    return (numel + 127) // 128 * 16


def random_values(rng, count, dtype):
    """float64 values covering the dtype: wide exponents, plain small values, subnormals, near-max, specials."""
    info = torch.finfo(dtype)
    kind = rng.integers(0, 100, count)
    sign = np.where(rng.integers(0, 2, count) == 0, 1.0, -1.0)
    wide = rng.uniform(1.0, 2.0, count) * np.exp2(rng.integers(-20, 21, count).astype(np.float64))
    values = sign * wide
    values = np.where(kind >= 70, rng.uniform(-4.0, 4.0, count), values)
    values = np.where((kind >= 80) & (kind < 85), sign * rng.uniform(0.0, info.tiny, count), values)
    values = np.where((kind >= 85) & (kind < 90), sign * rng.uniform(0.5, 1.0, count) * info.max, values)
    specials = np.array(SPECIALS)[rng.integers(0, len(SPECIALS), count)]
    return np.where(kind >= 90, specials, values)


def make_grad(rng, shape, dtype):
    """A gradient whose first 10 elements are the specials twice (kept, then dropped: see make_mask)."""
    count = int(np.prod(shape))
    values = random_values(rng, count, dtype)
    values[:10] = SPECIALS * 2
    return torch.from_numpy(values).to(dtype).reshape(shape)


def make_mask(rng, count, p):
    """Packed mask with keep probability 1 - p; elements 0..4 kept and 5..9 dropped; random padding bits."""
    keep = rng.random(count) >= p
    keep[:5] = True
    keep[5:10] = False
    padded = np.concatenate([keep, rng.integers(0, 2, mask_bytes(count) * 8 - count).astype(bool)])
    return np.packbits(padded, bitorder="little"), torch.from_numpy(keep)


def bits(tensor):
    """Raw bit patterns of a floating tensor, row-major, as the unsigned numpy type."""
    return tensor.contiguous().view(BITS_DTYPE[tensor.dtype]).numpy().view(NUMPY_BITS[tensor.dtype]).copy()


def reference(grad, keep, scale):
    return torch.ops.aten.native_dropout_backward(grad, keep.reshape(grad.shape), scale)


def strided_case(rng, dtype):
    """A transposed, sliced, offset view of a larger storage."""
    storage = make_grad(rng, (53, 37), dtype)
    view = storage.t()[1:30:2, 3:40]  # [15, 37], strides (2, 37), storage offset 112
    assert not view.is_contiguous()
    packed, keep = make_mask(rng, view.numel(), STRIDED_P)
    scale = 1.0 / (1.0 - STRIDED_P)
    return {
        "strided_storage": bits(storage).reshape(-1),
        "strided_shape": np.array(view.shape, dtype=np.int64),
        "strided_strides": np.array(view.stride(), dtype=np.int64),
        "strided_offset": np.array(view.storage_offset(), dtype=np.int64),
        "strided_p": np.array(STRIDED_P),
        "strided_scale": np.array(scale),
        "strided_mask": packed,
        "strided_expected": bits(reference(view, keep, scale)).reshape(-1),
    }


def generate(name, dtype, seed):
    rng = np.random.default_rng(seed)
    grad = make_grad(rng, SHAPE, dtype)
    count = grad.numel()
    masks, expected, scales = [], [], []
    for p in P_VALUES:
        scale = 1.0 / (1.0 - p)  # double, as PyTorch's autograd formula
        packed, keep = make_mask(rng, count, p)
        masks.append(packed)
        expected.append(bits(reference(grad, keep, scale)).reshape(-1))
        scales.append(scale)
    extra_packed, extra_keep = make_mask(rng, count, 0.5)
    extra_expected = [bits(reference(grad, extra_keep, s)).reshape(-1) for s in EXTRA_SCALES]
    return {
        "torch_version": np.array(torch.__version__),
        "dtype": np.array(name),
        "shape": np.array(SHAPE, dtype=np.int64),
        "grad": bits(grad).reshape(-1),
        "p": np.array(P_VALUES),
        "scale": np.array(scales),
        "masks": np.stack(masks),
        "expected": np.stack(expected),
        "extra_scales": np.array(EXTRA_SCALES),
        "extra_mask": extra_packed,
        "extra_expected": np.stack(extra_expected),
        **strided_case(rng, dtype),
    }


def main():
    default_out = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "dropout")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=default_out, help="output folder (default: tests/data/dropout)")
    args = parser.parse_args()
    if not torch_is_current():
        raise SystemExit(f"torch {torch.__version__} is too old: the reference must be torch >= 2.7")
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    for index, (name, dtype) in enumerate(DTYPES.items()):
        path = os.path.join(args.out, f"native_dropout_backward_{name}.npz")
        np.savez_compressed(path, **generate(name, dtype, seed=20260826 + index))
        print(f"{path}: {os.path.getsize(path)} bytes (torch {torch.__version__})")


if __name__ == "__main__":
    main()
