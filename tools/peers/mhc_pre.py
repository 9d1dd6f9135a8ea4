#!/usr/bin/env python3
"""Speed peer for `gradkit bench` (MhcPre and MhcPreBackward rows): times the PyTorch reference of spec mhc.md 7
in fp32 (--compute fp32) or in x's own dtype (--compute io: what a bf16 / fp16 user runs), the forward alone (--mode
forward) or forward + autograd backward (--mode backward).

Loads x.npy (bf16 tensors arrive as their raw uint16 bits), phi.npy, alpha.npy and, when present, gamma.npy from
--dir; bias is zeros (it does not change the work). Uses the same thread count as gradkit, warms up once, then
prints the fastest of --repeat runs as "seconds <x>" (the warm-up alone when it took over peer_timing.LONG_STEP_SECONDS).
"""
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


def forward(x, phi, alpha, bias, gamma, norm_eps, hc_eps, compute=torch.float32):
    n, d = x.shape[-2], x.shape[-1]
    xf = x.to(compute).reshape(-1, n, d)
    phi = phi.to(compute)
    xflat = xf.reshape(xf.shape[0], n * d)
    inv_rms = torch.rsqrt(xflat.square().mean(dim=-1) + norm_eps)
    xg = xflat * gamma.to(compute).reshape(n * d) if gamma is not None else xflat
    h_mix = xg @ phi.t()
    w = h_mix * inv_rms[:, None]
    h_pre = torch.sigmoid(w[:, :n] * alpha[0] + bias[:n]) + hc_eps
    h_post = 2 * torch.sigmoid(w[:, n:2 * n] * alpha[1] + bias[n:2 * n])
    h_res = w[:, 2 * n:] * alpha[2] + bias[2 * n:] if alpha.numel() == 3 else None
    h_in = (h_pre[:, :, None] * xf).sum(dim=1).to(x.dtype)
    return h_in, h_post, h_res


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--dtype", required=True)
    parser.add_argument("--mode", choices=["forward", "backward"], required=True)
    parser.add_argument("--norm-eps", type=float, default=1e-6)
    parser.add_argument("--hc-eps", type=float, default=1e-6)
    parser.add_argument("--compute", choices=["fp32", "io"], default="fp32")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    x = load(os.path.join(args.dir, "x.npy"), args.dtype)
    phi = load(os.path.join(args.dir, "phi.npy"))
    alpha = load(os.path.join(args.dir, "alpha.npy"))
    gamma_path = os.path.join(args.dir, "gamma.npy")
    gamma = load(gamma_path) if os.path.exists(gamma_path) else None
    bias = torch.zeros(phi.shape[0])
    compute = x.dtype if args.compute == "io" else torch.float32
    backward = args.mode == "backward"
    leaves = [t for t in (x, phi, alpha, bias, gamma) if t is not None]
    if backward:
        for t in leaves:
            t.requires_grad_(True)

    def step():
        outputs = forward(x, phi, alpha, bias, gamma, args.norm_eps, args.hc_eps, compute)
        if backward:
            kept = [o for o in outputs if o is not None]
            torch.autograd.backward(kept, [torch.ones_like(o) for o in kept])
            for t in leaves:
                t.grad = None

    def timed():
        start = time.perf_counter()
        if backward:
            step()
        else:
            with torch.no_grad():
                step()
        return time.perf_counter() - start

    print_fastest(timed, args.repeat)


if __name__ == "__main__":
    main()
