#!/usr/bin/env python3
"""Speed peer for `gradkit bench` (MhcPreSinkhorn and MhcPreSinkhornBackward rows): times the PyTorch reference of
include/aclnnop/aclnn_mhc_pre_sinkhorn.h: RMS, x @ phi^T, the sigmoids and h_in (tools/peers/mhc_pre.py's forward,
without gamma), then the Sinkhorn projection of the residual logits (tools/peers/mhc_sinkhorn.py: softmax + eps, then
alternating column and row normalisations, each adding eps to its sum). x keeps its dtype as an input (bf16 / fp16),
phi, alpha and bias are fp32; the formulas run in fp32 (--compute fp32, the default) or in x's dtype (--compute io).

--mode forward times the forward as training runs it (autograd recording its graph; --no-grad: under
torch.no_grad, as needBackward false), --mode backward the forward + autograd backward of h_in, h_post and h_res with
the gradients gradHin.npy, gradHPost.npy, gradHRes.npy when --dir holds them (ones otherwise).

Loads x.npy (bf16 tensors arrive as their raw uint16 bits), phi.npy, alpha.npy, bias.npy from --dir. Uses the same
thread count as gradkit, warms up once, then prints the fastest of --repeat runs as "seconds <x>" (the warm-up alone
when it took over peer_timing.LONG_STEP_SECONDS).
"""
import argparse
import os
import time

import torch

from mhc_pre import forward as pre_forward
from mhc_pre import load
from mhc_sinkhorn import sinkhorn
from peer_timing import print_fastest


def forward(x, phi, alpha, bias, norm_eps, hc_eps, iters, compute):
    n = x.shape[-2]
    h_in, h_post, logits = pre_forward(x, phi, alpha, bias, None, norm_eps, hc_eps, compute)
    h_res = sinkhorn(logits.reshape(-1, n, n), iters, hc_eps)
    return h_in, h_post, h_res


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--dtype", required=True)
    parser.add_argument("--mode", choices=["forward", "backward"], required=True)
    parser.add_argument("--norm-eps", type=float, default=1e-6)
    parser.add_argument("--hc-eps", type=float, default=1e-6)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--no-grad", action="store_true")
    parser.add_argument("--compute", choices=["fp32", "io"], default="fp32")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    x = load(os.path.join(args.dir, "x.npy"), args.dtype)
    phi, alpha, bias = (load(os.path.join(args.dir, name + ".npy")) for name in ("phi", "alpha", "bias"))
    compute = x.dtype if args.compute == "io" else torch.float32
    backward = args.mode == "backward"
    recording = backward or not args.no_grad
    leaves = [x, phi, alpha, bias]
    for t in leaves:
        t.requires_grad_(recording)

    grads = None
    if backward:
        names = [("gradHin", args.dtype), ("gradHPost", None), ("gradHRes", None)]
        paths = [os.path.join(args.dir, name + ".npy") for name, _ in names]
        if all(os.path.exists(p) for p in paths):
            grads = [load(p, dtype) for p, (_, dtype) in zip(paths, names)]

    def step():
        h_in, h_post, h_res = forward(x, phi, alpha, bias, args.norm_eps, args.hc_eps, args.iters, compute)
        if backward:
            outputs = [h_in, h_post, h_res]
            if grads is None:
                given = [torch.ones_like(o) for o in outputs]
            else:
                given = [g.reshape(o.shape).to(o.dtype) for g, o in zip(grads, outputs)]
            torch.autograd.backward(outputs, given)
            for t in leaves:
                t.grad = None

    def timed():
        start = time.perf_counter()
        with torch.set_grad_enabled(recording):
            step()
        return time.perf_counter() - start

    print_fastest(timed, args.repeat)


if __name__ == "__main__":
    main()
