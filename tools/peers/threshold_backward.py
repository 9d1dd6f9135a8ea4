#!/usr/bin/env python3
"""Speed peer for `gradkit bench`: times torch's threshold_backward with a preallocated output.

Loads gradOutput.npy and self.npy from --dir (bf16 tensors arrive as their raw uint16 bits; the two may
broadcast), uses the same thread count and --threshold as gradkit (an integer text is passed as an int, as
PyTorch reads int and float thresholds differently), warms up once, then prints the fastest of --repeat runs
as "seconds <x>".
"""
import argparse
import os
import time

import numpy as np
import torch


def load(path, dtype):
    array = np.load(path)
    if dtype == "bf16":
        # numpy has no bf16 and torch 1.13 has no uint16: reinterpret the bits through int16.
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--dtype", required=True)
    parser.add_argument("--threshold", default="0")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    grad = load(os.path.join(args.dir, "gradOutput.npy"), args.dtype)
    features = load(os.path.join(args.dir, "self.npy"), args.dtype)
    try:
        threshold = int(args.threshold)
    except ValueError:
        threshold = float(args.threshold)
    shape = torch.broadcast_shapes(grad.shape, features.shape)
    out = torch.zeros(shape, dtype=grad.dtype)  # written once, so its pages are faulted in before timing
    op = torch.ops.aten.threshold_backward.grad_input

    op(grad, features, threshold, grad_input=out)  # warm-up
    best = float("inf")
    for _ in range(max(args.repeat, 1)):
        start = time.perf_counter()
        op(grad, features, threshold, grad_input=out)
        best = min(best, time.perf_counter() - start)
    print(f"seconds {best!r}")


if __name__ == "__main__":
    main()
