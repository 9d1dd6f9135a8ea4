#!/usr/bin/env python3
"""Speed peer for `gradkit bench` (LightningIndexerV2 rows, BSND): times the PyTorch reference of
include/aclnnop/aclnn_lightning_indexer_v2.h on the case's tensors, in the inputs' dtype (bf16 / fp16) as a user of
that dtype runs it: scores = sum over heads of w * relu(einsum(q, k)), the keys each row may not see set to -inf
(mask mode 3: right-down causal on the uncompressed axis, row i of S1 sees the first
floor((S2 * cmp_ratio + residual - S1 + i + 1) / cmp_ratio) keys), then torch.topk of the top-k scores (indices
and values), per batch in blocks of query rows so that the [rows, N1, S2] products stay in memory.

Loads q.npy [B, S1, N1, 128], k.npy [B, S2, 1, 128], w.npy [B, S1, N1] from --dir (16-bit tensors arrive as their raw
uint16 bits). Uses the same thread count as gradkit, warms up once, then prints the fastest of --repeat runs as
"seconds <x>".
"""
import argparse
import os
import time

import numpy as np
import torch

from peer_timing import print_fastest

BLOCK_ROWS = 512


def load(path, dtype):
    array = np.load(path)
    if dtype == "bf16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    if dtype == "fp16":
        return torch.from_numpy(array.view(np.float16))
    return torch.from_numpy(array)


def indexer(q, k, w, topk, mask_mode, cmp_ratio, residual):
    batch, s1, heads, _ = q.shape
    s2 = k.shape[1]
    compute = q.dtype
    out_indices = torch.empty(batch, s1, 1, topk, dtype=torch.int32)
    out_values = torch.empty(batch, s1, 1, topk, dtype=torch.float32)
    keys = torch.arange(s2)
    for b in range(batch):
        kb = k[b, :, 0, :]  # [S2, 128]
        for r0 in range(0, s1, BLOCK_ROWS):
            r1 = min(s1, r0 + BLOCK_ROWS)
            dots = torch.einsum("rhd,sd->rhs", q[b, r0:r1], kb)  # [rows, N1, S2]
            scores = (torch.relu(dots) * w[b, r0:r1].to(compute).unsqueeze(-1)).sum(dim=1).float()  # [rows, S2]
            if mask_mode == 3:
                rows = torch.arange(r0, r1)
                visible = torch.div(s2 * cmp_ratio + residual - s1 + rows + 1, cmp_ratio, rounding_mode="floor")
                scores = scores.masked_fill(keys.unsqueeze(0) >= visible.unsqueeze(1), float("-inf"))
            n = min(topk, s2)
            values, indices = torch.topk(scores, n, dim=-1)
            out_values[b, r0:r1, 0, :n] = values
            out_indices[b, r0:r1, 0, :n] = indices.to(torch.int32)
    return out_indices, out_values


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--dtype", required=True)
    parser.add_argument("--topk", type=int, required=True)
    parser.add_argument("--mask-mode", type=int, default=0)
    parser.add_argument("--cmp-ratio", type=int, default=1)
    parser.add_argument("--residual", type=int, default=0)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    q, k = (load(os.path.join(args.dir, name + ".npy"), args.dtype) for name in ("q", "k"))
    w = load(os.path.join(args.dir, "w.npy"), "fp32")

    def timed():
        start = time.perf_counter()
        with torch.no_grad():
            indexer(q, k, w, args.topk, args.mask_mode, args.cmp_ratio, args.residual)
        return time.perf_counter() - start

    print_fastest(timed, args.repeat)


if __name__ == "__main__":
    main()
