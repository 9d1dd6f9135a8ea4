#!/usr/bin/env python3
"""Speed peer for `gradkit bench` (MhcPost and MhcPostBackward rows): times the PyTorch reference of docs/mhc.md,
h_res^T x + h_out (x) h_post per token, in x's own dtype (what a bf16 / fp16 user runs: einsum and broadcasting in
that dtype), the forward alone (--mode forward) or forward + autograd backward (--mode backward).

Loads x.npy, hOut.npy (bf16 tensors arrive as their raw uint16 bits), hPost.npy and, when present, hRes.npy from
--dir. Uses the same thread count as gradkit, warms up once, then prints the fastest of --repeat runs as
"seconds <x>"."""
import argparse
import os
import time

import numpy as np
import torch

from peer_timing import print_fastest


def load(path, dtype=None):
    array = np.load(path)
    if dtype == "bf16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def forward(x, h_res, h_out, h_post):
    mixed = x if h_res is None else torch.einsum("...ij,...id->...jd", h_res.to(x.dtype), x)
    return mixed + h_post.to(x.dtype).unsqueeze(-1) * h_out.unsqueeze(-2)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--dtype", required=True)
    parser.add_argument("--mode", choices=["forward", "backward"], required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    x = load(os.path.join(args.dir, "x.npy"), args.dtype)
    h_out = load(os.path.join(args.dir, "hOut.npy"), args.dtype)
    h_post = load(os.path.join(args.dir, "hPost.npy"))
    h_res_path = os.path.join(args.dir, "hRes.npy")
    h_res = load(h_res_path) if os.path.exists(h_res_path) else None
    backward = args.mode == "backward"
    leaves = [t for t in (x, h_res, h_out, h_post) if t is not None]
    if backward:
        for t in leaves:
            t.requires_grad_(True)
    grad = torch.ones(x.shape, dtype=x.dtype)

    def timed():
        start = time.perf_counter()
        if backward:
            forward(x, h_res, h_out, h_post).backward(grad)
            for t in leaves:
                t.grad = None
        else:
            with torch.no_grad():
                forward(x, h_res, h_out, h_post)
        return time.perf_counter() - start

    print_fastest(timed, args.repeat)


if __name__ == "__main__":
    main()
