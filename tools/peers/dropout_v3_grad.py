#!/usr/bin/env python3
"""Speed peer for `gradkit bench` (DropoutV3Grad and DoMask rows): times a current PyTorch's
torch.ops.aten.native_dropout_backward(grad, bool_mask, scale) with a preallocated output.

Loads grad.npy (bf16 tensors arrive as their raw uint16 bits) and mask.npy (gradkit's packed UINT8 mask:
element i in byte i // 8, bit i % 8 from the least significant) from --dir, unpacks the mask into torch's
bool mask of grad's shape (not timed), uses the same thread count as gradkit, warms up once, then prints the
fastest of --repeat runs as "seconds <x>".
"""
import argparse
import os
import time

import numpy as np
import torch


def load_grad(path, dtype):
    array = np.load(path)
    if dtype == "bf16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def unpack_mask(path, shape):
    packed = np.load(path).reshape(-1)
    count = int(np.prod(shape, dtype=np.int64))
    bits = np.unpackbits(packed, bitorder="little")[:count]
    return torch.from_numpy(bits.astype(np.bool_)).reshape(shape)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--dtype", required=True)
    parser.add_argument("--scale", type=float, required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    grad = load_grad(os.path.join(args.dir, "grad.npy"), args.dtype)
    mask = unpack_mask(os.path.join(args.dir, "mask.npy"), tuple(grad.shape))
    out = torch.zeros_like(grad)  # written once, so its pages are faulted in before timing
    op = torch.ops.aten.native_dropout_backward.out

    op(grad, mask, args.scale, out=out)  # warm-up
    best = float("inf")
    for _ in range(max(args.repeat, 1)):
        start = time.perf_counter()
        op(grad, mask, args.scale, out=out)
        best = min(best, time.perf_counter() - start)
    print(f"seconds {best!r}")


if __name__ == "__main__":
    main()
