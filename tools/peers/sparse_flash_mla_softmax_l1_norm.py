#!/usr/bin/env python3
"""Speed peer for `gradkit bench` (SparseFlashMlaSoftmaxL1Norm rows): the head-averaged softmax of sparse MLA
attention over the compressed keys (include/aclnnop/aclnn_sparse_flash_mla_softmax_l1_norm.h) in pure torch, as a
user would write it. For every computed query row: the visible keys (mask 0 all of the batch's used rows, mask 3 the
rows below floor((C * ratio + residual - S1 + i + 1) / ratio); with sparse indices the first min(K, that count)
entries, min(K, the row's top-k length) under mask 0, a negative entry ending the list, entries past the rows
dropped) are gathered through the layout (BSND, TND) with sparse_flash_mla.py's helpers, and

    L1[row][col] = mean over heads h of exp((q_h . k_j) * scale - lse[row][h])

at col = the entry's slot (sparse) or the key's row (dense), 0 elsewhere. --compute io: the scores as a matmul of the
io dtype (bf16 / fp16), the rest in fp32; fp32 (default): everything in fp32. Loads from --dir q, cmpKv (the op's k),
softmaxLse, cmpSparseIndices, cuSeqlensQ, cuSeqlensCmpKv, sequsedQ, sequsedCmpKv, cmpResidualKv, cmpTopkLength as
<key>.npy (bf16 as raw uint16); a missing file is an absent tensor. Times the op with --threads threads (one warm-up,
the fastest of --repeat, printed as "seconds <x>").
"""
import argparse
import time

import torch

import sparse_flash_mla as smla
from peer_timing import print_fastest


class Problem:
    def __init__(self, args):
        d, dt = args.dir, args.dtype
        self.args = args
        self.q = smla.load(d, "q", dt)
        self.n1, self.dim = self.q.shape[-2], self.q.shape[-1]
        self.rows = self.q.reshape(-1, self.n1, self.dim)
        self.lse = smla.load(d, "softmaxLse", dt).reshape(-1, self.n1).float()
        cu_q = smla.longs(smla.load(d, "cuSeqlensQ", dt))
        self.b, self.i, s1act = smla.row_positions(self.q, args.layout, cu_q, smla.longs(smla.load(d, "sequsedQ", dt)))
        batch = s1act.numel()
        self.k = smla.Kv(smla.load(d, "cmpKv", dt), args.layout, batch, smla.longs(smla.load(d, "cuSeqlensCmpKv", dt)),
                         smla.longs(smla.load(d, "sequsedCmpKv", dt)), None)
        self.idx = smla.load(d, "cmpSparseIndices", dt)
        self.topk_len = smla.longs(smla.load(d, "cmpTopkLength", dt))
        residual = smla.longs(smla.load(d, "cmpResidualKv", dt))
        bc = self.b.clamp(min=0)
        self.computed = (self.b >= 0) & (self.i < s1act[bc])
        c = self.k.used[bc]
        self.thr = c.clone()
        if args.mask_mode == 3:
            restored = c * args.cmp_ratio + (residual[bc] if residual is not None else 0)
            self.thr = ((restored - s1act[bc] + self.i + 1).clamp(min=0) // args.cmp_ratio).minimum(c)

    def forward(self):
        args = self.args
        rows = torch.nonzero(self.computed).reshape(-1)
        out = torch.zeros(self.rows.shape[0], args.width)
        b, thr = self.b[rows].clamp(min=0), self.thr[rows]
        if self.idx is None:
            width = int(thr.max()) if rows.numel() else 0
            j = torch.arange(width)[None, :].expand(rows.numel(), width)
            ok = j < thr[:, None]
            cols = j
        else:
            j = self.idx.reshape(self.rows.shape[0], -1)[rows].long()
            k = j.shape[1]
            count = thr
            if self.topk_len is not None:
                count = count.minimum(self.topk_len[rows]) if args.mask_mode == 3 else self.topk_len[rows]
            ok = smla.listed(j, count.minimum(torch.tensor(k)), torch.zeros_like(thr), thr)
            cols = torch.arange(k)[None, :].expand(rows.numel(), k)
        keys = self.k.flat[self.k.rows(b, torch.where(ok, j, torch.zeros_like(j)))]  # [n, L, D]
        q = self.rows[rows]
        if args.compute == "io":
            s = torch.matmul(q, keys.transpose(1, 2)).float()
        else:
            s = torch.matmul(q.float(), keys.float().transpose(1, 2))
        p = torch.exp(s * args.scale - self.lse[rows][:, :, None]).mean(dim=1)  # [n, L]
        p = torch.where(ok, p, torch.zeros_like(p))
        out[rows[:, None].expand_as(cols)[ok], cols[ok]] = p[ok]
        return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--dtype", required=True, choices=["bf16", "fp16"])
    parser.add_argument("--layout", default="TND")
    parser.add_argument("--scale", type=float, required=True)
    parser.add_argument("--cmp-ratio", type=int, default=1)
    parser.add_argument("--mask-mode", type=int, default=3)
    parser.add_argument("--width", type=int, required=True)
    parser.add_argument("--compute", choices=["fp32", "io"], default="fp32")
    parser.add_argument("--tensors")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    smla.PASSED = None if args.tensors is None else set(args.tensors.split(","))
    problem = Problem(args)

    def timed():
        start = time.perf_counter()
        with torch.no_grad():
            problem.forward()
        return time.perf_counter() - start

    print_fastest(timed, args.repeat)


if __name__ == "__main__":
    main()
