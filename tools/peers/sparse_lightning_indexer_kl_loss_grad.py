#!/usr/bin/env python3
"""Speed peer for `gradkit bench` (SparseLightningIndexerKLLossGrad rows): times PyTorch's autograd of the loss whose
gradients the op computes (include/aclnnop/aclnn_sparse_lightning_indexer_kl_loss_grad.h), on the case's tensors in
their dtype: per query row the selected keys k[idx] gathered, S = q . k (io dtype), I = w . ReLU(S) (fp32: w is fp32),
log y = log_softmax(I) over the valid slots, L = -sum p log y (the KL loss up to a constant in p), then
L.backward() for dq, dk (the gather's backward is torch's scatter-add) and dw. Rows run in chunks of --chunk (the
gathered keys of all rows at once would not fit), each chunk's backward accumulating into the leaves' .grad.

Loads q.npy, k.npy, w.npy, sparse_indices.npy, p.npy and, where given, cu_q.npy, cu_k.npy, residual.npy,
seqused_q.npy, seqused_k.npy from --dir (bf16 tensors arrive as their raw uint16 bits); the valid slots follow the
op's rule (slot j < min(K, c_t), 0 <= idx < c_t, c_t the right-down causal count with --mask-mode 3). Uses the same
thread count as gradkit, warms up once, then prints the fastest of --repeat runs as "seconds <x>".
"""
import argparse
import os
import time

import numpy as np
import torch

from peer_timing import print_fastest


def load(directory, name, dtype=None):
    path = os.path.join(directory, name + ".npy")
    if not os.path.exists(path):
        return None
    array = np.load(path)
    if dtype == "bf16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def batches(args, bsnd_sizes, extra):
    """(query row 0, used rows, key row 0, used keys, residual) per batch."""
    cu_q, cu_k, residual, used_q, used_k = extra
    if args.layout == "TND":
        count = len(cu_q) - 1
        q0 = [int(cu_q[b]) for b in range(count)]
        k0 = [int(cu_k[b]) for b in range(count)]
        q_len = [int(cu_q[b + 1] - cu_q[b]) for b in range(count)]
        k_len = [int(cu_k[b + 1] - cu_k[b]) for b in range(count)]
    else:
        count, s1, s2 = bsnd_sizes
        q0 = [b * s1 for b in range(count)]
        k0 = [b * s2 for b in range(count)]
        q_len, k_len = [s1] * count, [s2] * count
    out = []
    for b in range(count):
        out.append((q0[b], int(used_q[b]) if used_q is not None else q_len[b], k0[b],
                    int(used_k[b]) if used_k is not None else k_len[b], int(residual[b]) if residual is not None else 0))
    return out


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--dtype", required=True)
    parser.add_argument("--layout", choices=["TND", "BSND"], default="TND")
    parser.add_argument("--mask-mode", type=int, default=3)
    parser.add_argument("--cmp-ratio", type=int, default=1)
    parser.add_argument("--chunk", type=int, default=1024)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    return parser.parse_args(argv)


def build(args, compute=None):
    """The case's leaves (q, k, w; cast to `compute` when given) and step(), which runs the loss's forward and
    backward over every row chunk, accumulating into the leaves' .grad."""
    q = load(args.dir, "q", args.dtype)
    k = load(args.dir, "k", args.dtype)
    if compute is not None:
        q, k = q.to(compute), k.to(compute)
    w = load(args.dir, "w")
    if compute is not None:
        w = w.to(compute)
    idx = load(args.dir, "sparse_indices").long()
    p = load(args.dir, "p")
    extra = [load(args.dir, name) for name in ("cu_q", "cu_k", "residual", "seqused_q", "seqused_k")]
    heads, dim, topk = q.shape[-2], q.shape[-1], idx.shape[-1]
    sizes = (q.shape[0], q.shape[1], k.shape[1]) if args.layout == "BSND" else None
    q = q.reshape(-1, heads, dim)
    k = k.reshape(-1, dim)
    w = w.reshape(-1, heads)
    idx = idx.reshape(-1, topk)
    p = p.reshape(-1, topk)

    # Per used row: its global row, the global key of every slot (0 where invalid) and the validity mask.
    rows, keys, valid = [], [], []
    slot = torch.arange(topk)
    for q0, q_used, k0, k_used, res in batches(args, sizes, extra):
        for i in range(q_used):
            if args.mask_mode == 3:
                visible = max(0, (k_used * args.cmp_ratio + res - q_used + i + 1) // args.cmp_ratio)
                visible = min(visible, k_used)
            else:
                visible = k_used
            row = idx[q0 + i]
            ok = (slot < min(topk, visible)) & (row >= 0) & (row < visible)
            rows.append(q0 + i)
            keys.append(torch.where(ok, row + k0, torch.zeros_like(row)))
            valid.append(ok)
    rows = torch.tensor(rows)
    keys = torch.stack(keys)
    valid = torch.stack(valid)
    target = torch.where(valid, p[rows], torch.zeros(())).to(w.dtype)

    q_leaf = q.detach().requires_grad_(True)
    k_leaf = k.detach().requires_grad_(True)
    w_leaf = w.detach().requires_grad_(True)

    def step():
        for begin in range(0, len(rows), args.chunk):
            r = rows[begin:begin + args.chunk]
            m = valid[begin:begin + args.chunk]
            selected = k_leaf[keys[begin:begin + args.chunk]]  # [rows, K, D]
            scores = torch.einsum("thd,tkd->thk", q_leaf[r], selected)
            logits = torch.einsum("th,thk->tk", w_leaf[r], torch.relu(scores).to(w_leaf.dtype))
            log_y = torch.log_softmax(logits.masked_fill(~m, float("-inf")), dim=-1)
            loss = -(target[begin:begin + args.chunk] * log_y.masked_fill(~m, 0.0)).sum()
            loss.backward()

    return step, (q_leaf, k_leaf, w_leaf)


def main():
    args = parse()
    torch.set_num_threads(args.threads)
    step, leaves = build(args)

    def timed():
        start = time.perf_counter()
        step()
        elapsed = time.perf_counter() - start
        for t in leaves:
            t.grad = None
        return elapsed

    print_fastest(timed, args.repeat)


if __name__ == "__main__":
    main()
