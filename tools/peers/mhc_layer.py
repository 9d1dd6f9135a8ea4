#!/usr/bin/env python3
"""Speed peer for `gradkit bench` (MhcLayer rows): times a whole mHC layer's training step with F = identity in
PyTorch, forward and autograd backward from gradOut, each part as its own peer runs it: the pre-mapping as
mhc_pre.py (in fp32 by default, --compute io: in x's dtype), the Sinkhorn as mhc_sinkhorn.py (fp32), the
post-mapping as mhc_post.py (in x's dtype), F = identity (h_out = h_in).

Loads x.npy and gradOut.npy (bf16 tensors arrive as their raw uint16 bits), phi.npy, alpha.npy, bias.npy and, when
present, gamma.npy from --dir. Uses the same thread count as gradkit, warms up once, then prints the fastest of
--repeat runs as "seconds <x>" (the warm-up alone when it took over peer_timing.LONG_STEP_SECONDS)."""
import argparse
import os
import time

import torch

from mhc_post import forward as post_forward
from mhc_pre import load, forward as pre_forward
from mhc_sinkhorn import sinkhorn
from peer_timing import print_fastest


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--dtype", required=True)
    parser.add_argument("--norm-eps", type=float, default=1e-6)
    parser.add_argument("--hc-eps", type=float, default=1e-6)
    parser.add_argument("--iters", type=int, required=True)
    parser.add_argument("--eps", type=float, required=True)
    parser.add_argument("--compute", choices=["fp32", "io"], default="fp32")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    x = load(os.path.join(args.dir, "x.npy"), args.dtype)
    n, d = x.shape[-2], x.shape[-1]
    x = x.reshape(-1, n, d)  # TND: the three parts agree on the token dims
    grad_out = load(os.path.join(args.dir, "gradOut.npy"), args.dtype).reshape(x.shape)
    phi = load(os.path.join(args.dir, "phi.npy"))
    alpha = load(os.path.join(args.dir, "alpha.npy"))
    bias = load(os.path.join(args.dir, "bias.npy"))
    gamma_path = os.path.join(args.dir, "gamma.npy")
    gamma = load(gamma_path) if os.path.exists(gamma_path) else None
    compute = x.dtype if args.compute == "io" else torch.float32
    leaves = [t for t in (x, phi, alpha, bias, gamma) if t is not None]
    for t in leaves:
        t.requires_grad_(True)

    def timed():
        start = time.perf_counter()
        h_in, h_post, h_res = pre_forward(x, phi, alpha, bias, gamma, args.norm_eps, args.hc_eps, compute)
        h_res = sinkhorn(h_res.reshape(-1, n, n), args.iters, args.eps)
        out = post_forward(x, h_res, h_in, h_post)  # F = identity: h_out = h_in
        out.backward(grad_out)
        for t in leaves:
            t.grad = None
        return time.perf_counter() - start

    print_fastest(timed, args.repeat)


if __name__ == "__main__":
    main()
