#!/usr/bin/env python3
"""Speed peer for `gradkit bench` (MhcSinkhorn and MhcSinkhornBackward rows): times the PyTorch reference of
docs/mhc_sinkhorn.md in fp32 (the operator's only dtype): a row softmax, then alternating column and row
normalisations, each adding eps to its sum. --mode forward times the forward as training runs it (autograd recording
its graph; --no-grad: inference, under torch.no_grad), --mode backward the forward + autograd backward.

Loads x.npy from --dir. Uses the same thread count as gradkit, warms up once, then prints the fastest of --repeat
runs as "seconds <x>"."""
import argparse
import os
import time

import numpy as np
import torch

from peer_timing import print_fastest


def sinkhorn(x, iters, eps):
    y = torch.softmax(x, dim=-1) + eps
    y = y / (y.sum(dim=-2, keepdim=True) + eps)
    for _ in range(iters - 1):
        y = y / (y.sum(dim=-1, keepdim=True) + eps)
        y = y / (y.sum(dim=-2, keepdim=True) + eps)
    return y


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--mode", choices=["forward", "backward"], required=True)
    parser.add_argument("--iters", type=int, required=True)
    parser.add_argument("--eps", type=float, required=True)
    parser.add_argument("--no-grad", action="store_true")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    x = torch.from_numpy(np.load(os.path.join(args.dir, "x.npy")))
    recording = not args.no_grad
    x.requires_grad_(recording)
    grad = torch.ones(x.shape, dtype=x.dtype)

    def timed():
        start = time.perf_counter()
        if args.mode == "backward":
            sinkhorn(x, args.iters, args.eps).backward(grad)
            x.grad = None
        else:
            with torch.set_grad_enabled(recording):
                sinkhorn(x, args.iters, args.eps)
        return time.perf_counter() - start

    print_fastest(timed, args.repeat)


if __name__ == "__main__":
    main()
