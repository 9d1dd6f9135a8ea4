#!/usr/bin/env python3
"""Speed peer for `gradkit bench` (Compressor and CompressorGrad rows): times the PyTorch reference forward of spec
compressor.md 4.1 in fp32 (--compute fp32) or in the inputs' own dtype (--compute io: what a bf16 user runs, its
matmuls on AMX where the CPU has it), alone (--mode forward) or with its autograd backward from d_cmp_kv (--mode
backward).

The forward is vectorised (a loop over blocks in Python would time the interpreter): both projections as matmuls,
the APE added by position, one gather of every compressed block's coff*cmp_ratio rows (this call's tokens, the
state-cache history before start_pos, or padding with score -inf) from a table of index tensors, a softmax over
those rows per channel and the weighted sum. The index tensors depend only on the layout and are built once before
timing; the timed step starts from the io-dtype x, wkv, wgate (converted to fp32 inside, so autograd returns
gradients in their dtype) and the fp32 ape.

Loads from --dir: x.npy (bf16 tensors arrive as their raw uint16 bits), wkv.npy, wgate.npy and, when present,
ape.npy (else random), cu_seqlens.npy (TH layout), seqused.npy, start_pos.npy, state_cache.npy with block_table.npy
(the history; else random values) and d_cmp_kv.npy (--mode backward; else random). Uses the same thread count as
gradkit, warms up once, then prints the fastest of --repeat runs as "seconds <x>" (the warm-up alone when it took
over peer_timing.LONG_STEP_SECONDS).

Importable: tests/python/test_compressor_torch.py checks plan() and forward() against a literal fp64 reading of
spec 4.1.
"""
import argparse
import os
import time
from types import SimpleNamespace

import numpy as np
import torch

from peer_timing import print_fastest



def cpu_has_bf16_units():
    """True when /proc/cpuinfo lists avx512_bf16 or amx_bf16 (where torch's bf16 matmuls run in hardware)."""
    try:
        with open("/proc/cpuinfo") as handle:
            flags = next((line.split() for line in handle if line.startswith("flags")), [])
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def plan(th, batch, seq, tokens, cu_seqlens, seqused, start_pos, cmp_ratio, coff):
    """The gather of spec 3.3/3.4 for one layout (numpy int arrays or None for the optional ones). Returns:
    rows (output row of each compressed row), src ([V, N] index into [tokens | history | one padding entry]),
    half ([N]: 0 = previous block for coff 2, the interleaved order of spec 3.6), history (list of (b, p) read
    from the state cache), ape_index / ape_mask ([T]: p mod cr of every used token), output_rows."""
    cr, n = cmp_ratio, coff * cmp_ratio
    if th:
        first = np.asarray(cu_seqlens[:-1], dtype=np.int64)
        length = np.diff(np.asarray(cu_seqlens, dtype=np.int64))
        output_rows = min(tokens, tokens // cr + batch)
    else:
        first = np.arange(batch, dtype=np.int64) * seq
        length = np.full(batch, seq, dtype=np.int64)
        output_rows = batch * ((seq + cr - 1) // cr)
    used = length if seqused is None else np.asarray(seqused, dtype=np.int64)
    sp = np.zeros(batch, dtype=np.int64) if start_pos is None else np.asarray(start_pos, dtype=np.int64)
    r = np.arange(n) // coff
    half = np.arange(n) % coff
    rows, srcs, history = [], [], []
    ape_index = np.zeros(tokens, dtype=np.int64)
    ape_mask = np.zeros(tokens, dtype=np.float64)
    packed = 0
    for b in range(batch):
        u = int(used[b])
        ape_index[first[b]:first[b] + u] = (sp[b] + np.arange(u)) % cr
        ape_mask[first[b]:first[b] + u] = 1.0
        blocks = max(0, (sp[b] + u) // cr - sp[b] // cr)
        if blocks == 0:
            continue
        q = sp[b] // cr + np.arange(blocks)[:, None]
        p = (q - (coff - 1) + half[None, :]) * cr + r[None, :]  # [blocks, N] absolute positions
        cached = (p >= 0) & (p < sp[b])
        positions = np.unique(p[cached])
        src = np.where(p < 0, -1, first[b] + p - sp[b])
        src = np.where(cached, tokens + len(history) + np.searchsorted(positions, p), src)
        history += [(b, int(pos)) for pos in positions]
        srcs.append(src)
        start = packed if th else b * ((seq + cr - 1) // cr)
        rows.append(np.arange(start, start + blocks))
        packed += blocks
    src = np.concatenate(srcs) if srcs else np.zeros((0, n), dtype=np.int64)
    src = np.where(src < 0, tokens + len(history), src)  # the padding entry follows the history
    return SimpleNamespace(rows=torch.from_numpy(np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)),
                           src=torch.from_numpy(src.astype(np.int64)), half=torch.from_numpy(half),
                           history=history, ape_index=torch.from_numpy(ape_index),
                           ape_mask=torch.from_numpy(ape_mask), output_rows=output_rows, coff=coff)


def forward(x, wkv, wgate, ape, p, hist_kv, hist_score, dtype=torch.float32):
    """Spec 4.1 on a plan `p`: x [T, H] (or [B, S, H]), wkv / wgate [coff*D, H], ape [cr, coff*D], hist_kv /
    hist_score [len(p.history), coff*D] (constants). Computes in `dtype`; returns cmp_kv [rows, D] (padding rows 0,
    not rounded), softmax_score and kv [V, N, D] (interleaved rows, valid rows only)."""
    channels = wkv.shape[0]
    d = channels // p.coff
    xf = x.reshape(-1, x.shape[-1]).to(dtype)
    kv = xf @ wkv.to(dtype).t()
    gate = xf @ wgate.to(dtype).t() + ape.to(dtype)[p.ape_index] * p.ape_mask.to(dtype)[:, None]
    kv_all = torch.cat([kv, hist_kv.to(dtype), kv.new_zeros(1, channels)]).view(-1, p.coff, d)
    gate_all = torch.cat([gate, hist_score.to(dtype), gate.new_full((1, channels), float("-inf"))])
    gate_all = gate_all.view(-1, p.coff, d)
    k = kv_all[p.src, p.half]  # [V, N, D]
    z = gate_all[p.src, p.half]
    s = torch.softmax(z, dim=1)
    compressed = (s * k).sum(1)
    out = compressed.new_zeros(p.output_rows, d).index_copy(0, p.rows, compressed)
    return out, s, k


def history_from_cache(p, cache, table, cache_mode):
    """The history rows p.history reads, from the state cache [blocks, block_size, 2*coff*D] through the table."""
    block_size, width = cache.shape[1], cache.shape[2]
    flat = cache.reshape(-1, width)
    rows = []
    for b, pos in p.history:
        block = table[b] if cache_mode == 2 else table[b][pos // block_size]
        rows.append(int(block) * block_size + pos % block_size)
    picked = flat[torch.tensor(rows, dtype=torch.int64)] if rows else flat.new_zeros(0, width)
    return picked[:, :width // 2], picked[:, width // 2:]


def load(path, dtype=None):
    array = np.load(path)
    if dtype == "bf16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--dtype", required=True)
    parser.add_argument("--mode", choices=["forward", "backward"], required=True)
    parser.add_argument("--cmp-ratio", type=int, required=True)
    parser.add_argument("--coff", type=int, default=1)
    parser.add_argument("--cache-mode", type=int, default=1)
    parser.add_argument("--compute", choices=["fp32", "io"], default="fp32")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    path = lambda name: os.path.join(args.dir, name + ".npy")  # noqa: E731
    optional = lambda name: np.load(path(name)) if os.path.exists(path(name)) else None  # noqa: E731
    x = load(path("x"), args.dtype)
    wkv = load(path("wkv"), args.dtype)
    wgate = load(path("wgate"), args.dtype)
    channels, hidden = wkv.shape
    generator = torch.Generator().manual_seed(0)
    ape = load(path("ape")) if os.path.exists(path("ape")) else torch.rand(args.cmp_ratio, channels,
                                                                           generator=generator) - 0.5
    cu_seqlens = optional("cu_seqlens")
    th = x.dim() == 2
    batch = len(cu_seqlens) - 1 if th else x.shape[0]
    p = plan(th, batch, 0 if th else x.shape[1], x.shape[0] if th else x.shape[0] * x.shape[1], cu_seqlens,
             optional("seqused"), optional("start_pos"), args.cmp_ratio, args.coff)
    if os.path.exists(path("state_cache")):
        hist_kv, hist_score = history_from_cache(p, load(path("state_cache")), np.load(path("block_table")),
                                                 args.cache_mode)
    else:
        hist_kv = torch.rand(len(p.history), channels, generator=generator) * 2 - 1
        hist_score = torch.rand(len(p.history), channels, generator=generator) * 2 - 1
    compute = x.dtype if args.compute == "io" else torch.float32
    if compute == torch.bfloat16 and not cpu_has_bf16_units():
        # Measured on AVX2: one bf16 autograd step of the C4A shape ran past 5 minutes (gradkit: 0.9 s).
        raise SystemExit("skipped: this CPU has no bf16 matmul units (avx512_bf16 / amx_bf16); torch's bf16 step "
                         "takes minutes here")
    backward = args.mode == "backward"
    if backward:
        d_cmp_kv = (load(path("d_cmp_kv"), args.dtype) if os.path.exists(path("d_cmp_kv"))
                    else torch.rand(p.output_rows, channels // args.coff, generator=generator))
        d_cmp_kv = d_cmp_kv.reshape(p.output_rows, -1).to(compute)
        leaves = [x, wkv, wgate, ape]
        for t in leaves:
            t.requires_grad_(True)

    def step():
        out, _, _ = forward(x, wkv, wgate, ape, p, hist_kv, hist_score, compute)
        if backward:
            out.backward(d_cmp_kv)
            for t in leaves:
                t.grad = None
        else:
            out.to(x.dtype)

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
