#!/usr/bin/env python3
"""Speed peer for `gradkit bench` (SparseFlashMlaGrad rows): the backward of DeepSeek-V4 sparse MLA attention
(include/aclnnop/aclnn_sparse_flash_mla_grad.h) as a PyTorch user gets it: the reference of tools/peers/
sparse_flash_mla.py (gather the visible keys of every computed row through the layouts, s = (q . k) * scale,
p = softmax([s, sink]), out = p[:-1] @ k with K = V) run with autograd on q, the KV rows and the sinks, then
out.backward(dOut). --compute io (what `gradkit bench` times with "peer_compute": "io"): the matmuls in the case's
dtype (bf16 / fp16), the softmax in fp32; --compute fp32: everything in fp32. The rows run in chunks whose gathered
keys take at most --chunk-mb MiB (each chunk's forward builds its graph, its backward runs at once, so memory stays
bounded); the time is the backward calls' alone (the forward that builds the graph is not counted), one warm-up and
the fastest of --repeat, printed as "seconds <x>". --check-grads: prints the norms of dq, dKV and dSinks instead.

Loads from --dir the tensors the call passes, each as <key>.npy (those of sparse_flash_mla.py, plus dOut); a missing
file is an absent tensor (--tensors: the keys passed); sinks must be given (the bench rows pass them).
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sparse_flash_mla as forward  # noqa: E402  (the shared reference: layouts, masks, gathered keys)
from peer_timing import print_fastest  # noqa: E402


def backward(problem, dout, args):
    """One backward of every computed row; returns (seconds in backward calls, dq, dkv, dsinks)."""
    work = problem.dtype if args.compute == "io" else torch.float32
    kv = problem.kv.to(work).detach().requires_grad_()
    sinks = problem.sinks.clone().requires_grad_()
    dq = torch.zeros(problem.rows.shape, dtype=work)
    todo = torch.nonzero(problem.computed).reshape(-1)
    step = max(1, int(args.chunk_mb * 2**20 // (problem.widest() * problem.dim * 4)))
    seconds = 0.0
    for start in range(0, todo.numel(), step):
        rows = todo[start:start + step]
        flat, ok = problem.keys(rows)
        q = problem.rows[rows].to(work).detach().requires_grad_()
        k = kv[flat]  # [n, L, D]: the gather is part of the graph (its backward scatter-adds into kv)
        scores = torch.bmm(q, k.transpose(1, 2)).float() * args.scale
        scores = scores.masked_fill(~ok[:, None, :], float("-inf"))
        sink = sinks[None, :, None].expand(rows.numel(), problem.n1, 1)
        p = torch.softmax(torch.cat([scores, sink], -1), -1)[..., :-1].to(work)
        out = torch.bmm(p, k)
        out = torch.where(ok.any(1)[:, None, None], out, torch.zeros((), dtype=work))
        grad = dout.reshape(problem.rows.shape)[rows].to(work)
        begin = time.perf_counter()
        out.backward(grad)
        seconds += time.perf_counter() - begin
        dq[rows] = q.grad
    return seconds, dq, kv.grad, sinks.grad


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--dtype", required=True, choices=["bf16", "fp16"])
    parser.add_argument("--layout-q", default="TND")
    parser.add_argument("--layout-kv", default="TND")
    parser.add_argument("--scale", type=float, required=True)
    parser.add_argument("--cmp-ratio", type=int, default=1)
    parser.add_argument("--ori-mask-mode", type=int, default=4)
    parser.add_argument("--cmp-mask-mode", type=int, default=3)
    parser.add_argument("--ori-win-left", type=int, default=127)
    parser.add_argument("--ori-win-right", type=int, default=0)
    parser.add_argument("--compute", choices=["fp32", "io"], default="fp32")
    parser.add_argument("--chunk-mb", type=float, default=128.0)
    parser.add_argument("--tensors")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--check-grads", action="store_true")
    args = parser.parse_args()
    args.round_p = False

    torch.set_num_threads(args.threads)
    forward.PASSED = None if args.tensors is None else set(args.tensors.split(","))
    problem = forward.Problem(args)
    dout = forward.load(args.dir, "dOut", args.dtype)
    if args.check_grads:
        _, dq, dkv, dsinks = backward(problem, dout, args)
        print(f"dq {dq.float().norm().item():.6g} dkv {dkv.float().norm().item():.6g} "
              f"dsinks {dsinks.float().norm().item():.6g}")
        return
    print_fastest(lambda: backward(problem, dout, args)[0], args.repeat)


if __name__ == "__main__":
    main()
