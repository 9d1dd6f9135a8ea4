#!/usr/bin/env python3
"""Speed peer for `gradkit bench` (FlashAttentionScore and FlashAttentionScoreGrad rows): times PyTorch's attention on
the same data, in the io dtype, with gradkit's thread count.

Without dropout and pse: torch.nn.functional.scaled_dot_product_attention restricted to its flash backend (the CPU
flash kernel; is_causal for sparse mode 2, or 3 with S1 = S2). With dropout or pse, which that kernel does not fuse:
the math path written out with the same semantics (spec fag.md 1.2: scores, pse before or after the scale, the causal
mask, softmax, the same packed keep mask scaled by 1/keep_prob, times V). --mode forward times the forward alone (no
autograd); --mode backward runs the forward once and times torch.autograd.grad of out with dy (the backward alone,
as gradkit's backward takes the forward's out and statistics).

Loads from --dir: q.npy, k.npy, v.npy, dy.npy (backward) in --layout (BNSD, BSND, BSH, SBH; bf16 tensors arrive as
their raw uint16 bits), drop_mask.npy (uint8, bit e of the flat [B, N1, S1, S2] order, LSB first) when present,
pse.npy when present (--pse BNSS/BN1S/1NSS: a table, N/BN: ALiBi slopes turned into -slope * |j - i| (pse type 2)
or -slope * sqrt(|j - i|) (3) before timing). Prints the fastest of --repeat runs after one warm-up as "seconds <x>".
"""
import argparse
import os
import time

import numpy as np
import torch


def load(path, dtype):
    array = np.load(path)
    if dtype == "bf16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def to_bnsd(x, layout, heads):
    """A layout tensor as [B, N, S, D]."""
    if layout == "BNSD":
        return x.contiguous()
    if layout == "BSND":
        return x.permute(0, 2, 1, 3).contiguous()
    if layout == "BSH":
        b, s, h = x.shape
        return x.reshape(b, s, heads, h // heads).permute(0, 2, 1, 3).contiguous()
    if layout == "SBH":
        s, b, h = x.shape
        return x.reshape(s, b, heads, h // heads).permute(1, 2, 0, 3).contiguous()
    raise SystemExit(f"layout {layout} is not supported by the peer")


def bias_of(pse, kind, pse_type, b, n, s1, s2, dtype):
    """The additive bias [B|1, N, S1|1, S2] of the pse tensor."""
    if kind in ("N", "BN"):
        slopes = pse.reshape(-1, n).float()  # [1 or B, N]
        i = torch.arange(s1).view(-1, 1)
        j = torch.arange(s2).view(1, -1)
        distance = (j - i).abs().float()
        if pse_type == 3:
            distance = distance.sqrt()
        return (-slopes[:, :, None, None] * distance).to(dtype)
    return pse.to(dtype)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--dtype", required=True)
    parser.add_argument("--mode", choices=["forward", "backward"], required=True)
    parser.add_argument("--layout", default="BNSD")
    parser.add_argument("--heads", type=int, required=True)
    parser.add_argument("--kv-heads", type=int, required=True)
    parser.add_argument("--scale", type=float, required=True)
    parser.add_argument("--keep-prob", type=float, default=1.0)
    parser.add_argument("--pse", default="none")
    parser.add_argument("--pse-type", type=int, default=1)
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    path = lambda name: os.path.join(args.dir, name + ".npy")  # noqa: E731
    q = to_bnsd(load(path("q"), args.dtype), args.layout, args.heads)
    k = to_bnsd(load(path("k"), args.dtype), args.layout, args.kv_heads)
    v = to_bnsd(load(path("v"), args.dtype), args.layout, args.kv_heads)
    group = args.heads // args.kv_heads
    if group > 1:
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
    b, n, s1, _ = q.shape
    s2 = k.shape[2]
    dtype = q.dtype

    keep = None
    if os.path.exists(path("drop_mask")):
        bits = np.unpackbits(np.load(path("drop_mask")), bitorder="little")[: b * n * s1 * s2]
        keep = torch.from_numpy(bits.reshape(b, n, s1, s2).astype(np.bool_))
    bias = None
    if args.pse != "none" and os.path.exists(path("pse")):
        bias = bias_of(load(path("pse"), args.dtype if args.pse not in ("N", "BN") else "fp32"), args.pse,
                       args.pse_type, b, n, s1, s2, dtype)
    causal_mask = torch.ones(s1, s2, dtype=torch.bool).triu(1) if args.causal else None
    math_path = keep is not None or bias is not None

    def attention(q, k, v):
        if not math_path:
            from torch.nn.attention import SDPBackend, sdpa_kernel
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=args.causal,
                                                                        scale=args.scale)
        scores = q @ k.transpose(-1, -2)
        if bias is not None and args.pse_type == 1:
            scores = (scores + bias) * args.scale
        else:
            scores = scores * args.scale
            if bias is not None:
                scores = scores + bias
        if causal_mask is not None:
            scores = scores.masked_fill(causal_mask, float("-inf"))
        p = torch.softmax(scores, dim=-1)
        if keep is not None:
            p = p * keep * (1.0 / args.keep_prob)
        return p @ v

    if args.mode == "backward":
        dy = to_bnsd(load(path("dy"), args.dtype), args.layout, args.heads)
        leaves = [t.requires_grad_(True) for t in (q, k, v)]
        out = attention(*leaves)

        def step():
            torch.autograd.grad(out, leaves, dy, retain_graph=True)
    else:
        def step():
            with torch.no_grad():
                attention(q, k, v)

    step()  # warm-up
    best = float("inf")
    for _ in range(max(args.repeat, 1)):
        start = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - start)
    print(f"seconds {best!r}")


if __name__ == "__main__":
    main()
