#!/usr/bin/env python3
"""Speed peer for `gradkit bench` (SparseFlashMla rows), and a check of the op's output: DeepSeek-V4 sparse MLA
attention (include/aclnnop/aclnn_sparse_flash_mla.h, docs/sparse_attention.md) in pure torch, as a user
would write it. For every computed query row: the visible keys (the ori window of the mask, or the ori index list's
entries inside it, then the compressed rows below the row's threshold, dense or listed; a negative entry ends a list,
entries outside the window are dropped, duplicates kept) are gathered from the KV tensors through the layouts (BSND,
TND, PA_BBND with the block table), and

    s = (q . k) * scale,  p = softmax([s, sink]),  out = p[:-1] @ k,  lse = logsumexp([s, sink])

with K = V. Rows that see no key and rows no batch computes give out 0 and lse 0, as the op. --compute io (bf16 /
fp16 as the case; what `gradkit bench` times, with "peer_compute": "io"): the scores and P.V as matmuls of the io
dtype, the softmax in fp32, P cast to the io dtype; --compute fp32 (default): everything in fp32, the output rounded
once; with --round-p as the op's native bf16 tile path: an online softmax over tiles of 128 keys starting from the
sink, each tile's unnormalised P rounded to the io dtype before P.V (the reference a check of that path needs). The rows run in chunks whose gathered keys take at most --chunk-mb MiB, so memory stays bounded.

Loads from --dir the tensors the call passes, each as <key>.npy (q, oriKv, cmpKv, oriSparseIndices, cmpSparseIndices,
oriBlockTable, cmpBlockTable, cuSeqlensQ, cuSeqlensOriKv, cuSeqlensCmpKv, sequsedQ, sequsedOriKv, sequsedCmpKv,
cmpResidualKv, oriTopkLength, cmpTopkLength, sinks; bf16 arrives as raw uint16 bits); a missing file is an absent
tensor (--tensors: the keys passed, when --dir holds more, as the folders of `gradkit verify --dump` do). Without
--check: times the forward with --threads threads (one warm-up, the fastest of --repeat, printed as "seconds <x>").
With --check OUT.npy (the suite's "torch_check" cases hand it the op's attnOut; a dump folder has ours_attnOut.npy):
compares the op's attnOut with this reference by upstream's criterion (isclose with bf16 rtol 2^-7 atol 1e-4, fp16
rtol 0.005 atol 2.5e-5, on >= 99.5 % of the elements, and every failing element's relative error < 10), prints the
numbers (also into --check-report when given), then "seconds <x>" of the reference, and exits 1 when it fails.
"""
import argparse
import os
import sys
import time

import numpy as np
import torch

from peer_timing import print_fastest


PASSED = None  # the keys --tensors names (None: every file in --dir)


def load(directory, key, dtype_text):
    path = os.path.join(directory, key + ".npy")
    if not os.path.exists(path) or (PASSED is not None and key not in PASSED and not key.startswith("ours_")):
        return None
    array = np.load(path)
    if array.dtype == np.uint16 and dtype_text == "bf16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    if array.dtype == np.uint16:
        return torch.from_numpy(array.view(np.float16))
    return torch.from_numpy(array)


def longs(t):
    return None if t is None else t.reshape(-1).long()


class Kv:
    """One KV tensor: its rows as [rows, D], the used length of each batch and the flat row of (batch, j)."""

    def __init__(self, kv, layout, batch, cu, used, table):
        self.layout = layout
        self.flat = kv.reshape(-1, kv.shape[-1])
        if layout == "PA_BBND":
            self.block = kv.shape[1]
            self.table = table.long()
            capacity = torch.full((batch,), self.table.shape[1] * self.block, dtype=torch.long)
        elif layout == "TND":
            self.cu = cu
            capacity = cu[1:] - cu[:-1]
        else:
            self.per_batch = kv.shape[1]
            capacity = torch.full((batch,), self.per_batch, dtype=torch.long)
        self.used = used if used is not None else capacity

    def rows(self, b, j):
        """Flat rows of positions j [n, L] of batches b [n] (j must be valid where it is used)."""
        if self.layout == "PA_BBND":
            return self.table[b[:, None], j // self.block] * self.block + j % self.block
        if self.layout == "TND":
            return self.cu[b][:, None] + j
        return b[:, None] * self.per_batch + j


def row_positions(q, layout_q, cu_q, used_q):
    """Per q row: its batch (-1: none) and position; per batch: S1act."""
    if layout_q == "BSND":
        batch, s1 = q.shape[0], q.shape[1]
        b = torch.arange(batch).repeat_interleave(s1)
        i = torch.arange(s1).repeat(batch)
        s1act = used_q if used_q is not None else torch.full((batch,), s1, dtype=torch.long)
        return b, i, s1act
    tokens, batch = q.shape[0], cu_q.numel() - 1
    row = torch.arange(tokens)
    b = torch.bucketize(row, cu_q[1:], right=True)
    b = torch.where(b < batch, b, torch.full_like(b, -1))
    i = row - cu_q[b.clamp(min=0)]
    s1act = used_q if used_q is not None else cu_q[1:] - cu_q[:-1]
    return b, i, s1act


def listed(entries, count, lo, hi):
    """Which slots of index lists [n, K] are keys: the first `count`, up to the first negative, inside [lo, hi)."""
    slot = torch.arange(entries.shape[1])[None, :]
    alive = torch.cumprod((entries >= 0).long(), dim=1).bool()
    return (slot < count[:, None]) & alive & (entries >= lo[:, None]) & (entries < hi[:, None])


class Problem:
    def __init__(self, args):
        d, dt = args.dir, args.dtype
        self.q = load(d, "q", dt)
        self.dtype = self.q.dtype
        self.n1, self.dim = self.q.shape[-2], self.q.shape[-1]
        self.sinks = load(d, "sinks", dt).float()
        cu_q = longs(load(d, "cuSeqlensQ", dt))
        self.b, self.i, s1act = row_positions(self.q, args.layout_q, cu_q, longs(load(d, "sequsedQ", dt)))
        batch = s1act.numel()
        self.ori = Kv(load(d, "oriKv", dt), args.layout_kv, batch, longs(load(d, "cuSeqlensOriKv", dt)),
                      longs(load(d, "sequsedOriKv", dt)), load(d, "oriBlockTable", dt))
        cmp = load(d, "cmpKv", dt)
        self.cmp = None if cmp is None else Kv(cmp, args.layout_kv, batch, longs(load(d, "cuSeqlensCmpKv", dt)),
                                               longs(load(d, "sequsedCmpKv", dt)), load(d, "cmpBlockTable", dt))
        self.ori_idx, self.cmp_idx = load(d, "oriSparseIndices", dt), load(d, "cmpSparseIndices", dt)
        self.ori_len, self.cmp_len = longs(load(d, "oriTopkLength", dt)), longs(load(d, "cmpTopkLength", dt))
        residual = longs(load(d, "cmpResidualKv", dt))
        self.args = args
        self.rows = self.q.reshape(-1, self.n1, self.dim)
        bc = self.b.clamp(min=0)
        self.computed = (self.b >= 0) & (self.i < s1act[bc])
        s1, s2 = s1act[bc], self.ori.used[bc]
        thr = s2 - s1 + self.i + 1
        self.lo, self.hi = torch.zeros_like(thr), s2.clone()
        if args.ori_mask_mode == 3:
            self.hi = thr.clamp(min=0).minimum(s2)
        elif args.ori_mask_mode == 4:
            if args.ori_win_left != -1:
                self.lo = (thr - args.ori_win_left - 1).clamp(min=0)
            if args.ori_win_right != -1:
                self.hi = (thr + args.ori_win_right).clamp(min=0).minimum(s2)
        self.lo = self.lo.minimum(self.hi)
        if self.cmp is not None:
            c = self.cmp.used[bc]
            restored = c * args.cmp_ratio + (residual[bc] if residual is not None else 0)
            self.cmp_thr = c.clone()
            if args.cmp_mask_mode == 3:
                self.cmp_thr = ((restored - s1 + self.i + 1).clamp(min=0) // args.cmp_ratio).minimum(c)
        self.kv = self.ori.flat if self.cmp is None else torch.cat([self.ori.flat, self.cmp.flat])

    def keys(self, rows):
        """Flat KV rows [n, L] of the visible keys of q rows `rows` and which of them are keys."""
        b = self.b[rows].clamp(min=0)
        lo, hi = self.lo[rows], self.hi[rows]
        if self.ori_idx is None:
            width = int((hi - lo).max()) if rows.numel() else 0
            j = lo[:, None] + torch.arange(width)[None, :]
            ok = j < hi[:, None]
        else:
            j = self.ori_idx.reshape(self.rows.shape[0], -1)[rows].long()
            k = j.shape[1]
            count = self.ori_len[rows] if self.args.ori_mask_mode == 0 else (hi - lo)
            ok = listed(j, count.minimum(torch.tensor(k)), lo, hi)
        parts = [(self.ori.rows(b, torch.where(ok, j, torch.zeros_like(j))), ok)]
        if self.cmp is not None:
            thr = self.cmp_thr[rows]
            if self.cmp_idx is None:
                width = int(thr.max()) if rows.numel() else 0
                c = torch.arange(width)[None, :].expand(rows.numel(), width)
                ok = c < thr[:, None]
            else:
                c = self.cmp_idx.reshape(self.rows.shape[0], -1)[rows].long()
                k = c.shape[1]
                if self.args.cmp_mask_mode == 3:
                    count = thr
                else:
                    count = self.cmp_len[rows] if self.cmp_len is not None else torch.full_like(thr, k)
                ok = listed(c, count.minimum(torch.tensor(k)), torch.zeros_like(thr), thr)
            flat = self.cmp.rows(b, torch.where(ok, c, torch.zeros_like(c))) + self.ori.flat.shape[0]
            parts.append((flat, ok))
        flat, ok = torch.cat([p[0] for p in parts], 1), torch.cat([p[1] for p in parts], 1)
        return torch.where(ok, flat, torch.zeros_like(flat)), ok  # masked slots read row 0 (a batch may hold none)

    def forward(self):
        """attnOut [q rows, N1, D] (io dtype) and lse [q rows, N1] (fp32)."""
        io = self.args.compute == "io"
        work = self.dtype if io else torch.float32
        out = torch.zeros(self.rows.shape, dtype=self.dtype)
        lse = torch.zeros(self.rows.shape[:2], dtype=torch.float32)
        todo = torch.nonzero(self.computed).reshape(-1)
        step = max(1, int(self.args.chunk_mb * 2**20 // (self.widest() * self.dim * 4)))
        for start in range(0, todo.numel(), step):
            rows = todo[start:start + step]
            flat, ok = self.keys(rows)
            k = self.kv[flat].to(work)  # [n, L, D]
            q = self.rows[rows].to(work)  # [n, N1, D]
            scores = torch.bmm(q, k.transpose(1, 2)).float() * self.args.scale  # [n, N1, L]
            scores = scores.masked_fill(~ok[:, None, :], float("-inf"))
            sink = self.sinks[None, :, None].expand(rows.numel(), self.n1, 1)
            logits = torch.cat([scores, sink], -1)
            if self.args.round_p and not io:
                values, sums = self.tiles(q, k, ok)
            else:
                p = torch.softmax(logits, -1)[..., :-1].to(work)
                values, sums = torch.bmm(p, k).to(self.dtype), torch.logsumexp(logits, -1)
            unseen = ~ok.any(1)  # out 0 and lse 0, not the sink's (and no NaN from a -inf sink)
            values[unseen] = 0
            sums[unseen] = 0
            out[rows] = values
            lse[rows] = sums
        return out, lse

    def tiles(self, q, k, ok):
        """The op's native bf16 path: the keys (compacted, in order) in tiles of 128, an online softmax from m = sink,
        l = 1, each tile's P = exp(s - m') rounded to the io dtype before P.V (l sums the fp32 P)."""
        order = torch.sort((~ok).int(), dim=1, stable=True).indices
        ok = torch.gather(ok, 1, order)
        k = torch.gather(k, 1, order[:, :, None].expand(-1, -1, k.shape[2]))
        n = q.shape[0]
        top = self.sinks[None, :].expand(n, self.n1).clone()
        total = torch.ones(n, self.n1)
        acc = torch.zeros(n, self.n1, self.dim)
        for t in range(0, k.shape[1], 128):
            kt, okt = k[:, t:t + 128], ok[:, t:t + 128]
            s = (torch.bmm(q, kt.transpose(1, 2)) * self.args.scale).masked_fill(~okt[:, None, :], float("-inf"))
            new = torch.maximum(top, s.max(-1).values)
            alpha = torch.where(new == float("-inf"), torch.ones(()), torch.exp(top - new))
            e = torch.where(new[..., None] == float("-inf"), torch.zeros(()), torch.exp(s - new[..., None]))
            total = total * alpha + e.sum(-1)
            acc = acc * alpha[..., None] + torch.bmm(e.to(self.dtype).float(), kt)
            top = new
        return (acc / total[..., None]).to(self.dtype), top + torch.log(total)

    def widest(self):
        """The most keys a row can gather (an upper bound: the window or K, plus the compressed rows or K2)."""
        width = int((self.hi - self.lo).max()) if self.ori_idx is None else self.ori_idx.shape[-1]
        if self.cmp is not None:
            width += int(self.cmp_thr.max()) if self.cmp_idx is None else self.cmp_idx.shape[-1]
        return max(width, 1)


def check(ours_path, reference, dtype_text, report):
    """Upstream's criterion (see the module docstring) of the op's attnOut against the reference; prints it (and
    writes it to `report`), returns whether it passed."""
    ours = load(os.path.dirname(ours_path), os.path.basename(ours_path)[:-4], dtype_text).float().reshape(-1)
    ref = reference.float().reshape(-1)
    rtol, atol = (2.0**-7, 1e-4) if dtype_text == "bf16" else (0.005, 2.5e-5)
    diff = (ours - ref).abs()
    close = diff <= atol + rtol * ref.abs()
    failing = diff[~close] / (torch.maximum(torch.maximum(ours.abs(), ref.abs()), torch.tensor(2.0**-14 / 0.005))[~close]
                              + 2e-9)
    share = close.float().mean().item() * 100
    worst = failing.max().item() if failing.numel() else 0.0
    passed = share >= 99.5 and worst < 10
    line = (f"{'PASS' if passed else 'FAIL'} {share:.4f}% close, max |diff| {diff.max().item():.3g}, "
            f"max relative error of a failing element {worst:.3g}")
    print("check: " + line)
    if report:
        with open(report, "w") as handle:
            handle.write(line + "\n")
    return passed


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
    parser.add_argument("--round-p", action="store_true")
    parser.add_argument("--chunk-mb", type=float, default=128.0)
    parser.add_argument("--check")
    parser.add_argument("--check-report")
    parser.add_argument("--tensors")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    global PASSED
    PASSED = None if args.tensors is None else set(args.tensors.split(","))
    problem = Problem(args)
    if args.check:
        start = time.perf_counter()
        with torch.no_grad():
            out, _ = problem.forward()
        seconds = time.perf_counter() - start
        passed = check(args.check, out, args.dtype, args.check_report)
        print(f"seconds {seconds!r}")
        sys.exit(0 if passed else 1)

    def timed():
        start = time.perf_counter()
        with torch.no_grad():
            problem.forward()
        return time.perf_counter() - start

    print_fastest(timed, args.repeat)


if __name__ == "__main__":
    main()
