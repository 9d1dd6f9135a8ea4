#!/usr/bin/env python3
"""Speed peer for `gradkit bench` (BlockAttentionResiduals and BlockAttentionResidualsGrad rows): times the PyTorch
formulas of include/aclnnop/aclnn_block_attention_residuals.h on the case's tensors. The N + 1 values per token are
blockRes and partialBlock stacked along dim 1 ([T, N + 1, H]); invNorm = rsqrt(mean over H of v^2 + normEps), the
scores (v @ (normWeight * projWeight)) * invNorm, their softmax, and the probability-weighted sum of the values, cast
back to the inputs' dtype. The inputs keep their dtype (bf16 / fp16 / fp32); the formulas run in fp32 as the op's
(--compute fp32, the default) or in the inputs' dtype (--compute io; the RMS stays fp32; fp16 needs a current PyTorch:
Debian's 1.13 has no fp16 products on the CPU).

--mode forward times the forward as training runs it (autograd recording its graph; --no-grad: under
torch.no_grad, as needBackward false); --mode backward times the forward + autograd backward of hiddenStates with the
gradient gradHiddenStates.npy (ones when --dir lacks it), the gradients of all four inputs.

Loads partialBlock.npy, blockRes.npy, projWeight.npy, normWeight.npy from --dir (bf16 tensors arrive as their raw
uint16 bits). Uses the same thread count as gradkit, warms up once, then prints the fastest of --repeat runs as
"seconds <x>".
"""
import argparse
import os
import time

import numpy as np
import torch

from peer_timing import print_fastest


def load(path, dtype):
    array = np.load(path)
    if dtype == "bf16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def forward(partial, block_res, proj, norm, norm_eps, compute):
    values = torch.cat([block_res, partial.unsqueeze(1)], dim=1).to(compute)  # [T, N + 1, H]
    # [T, N + 1]: the RMS in fp32 (at least) whatever --compute says, as the op's
    rms_dtype = torch.promote_types(compute, torch.float32)
    inv_norm = torch.rsqrt(values.square().mean(dim=-1, dtype=rms_dtype) + norm_eps).to(compute)
    weight = norm.to(compute) * proj.reshape(-1).to(compute)  # [H]
    scores = (values @ weight) * inv_norm
    probs = torch.softmax(scores, dim=-1)
    hidden = torch.bmm(probs.unsqueeze(1), values).squeeze(1)  # [T, H]
    return hidden.to(partial.dtype), inv_norm, probs


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--dtype", required=True)
    parser.add_argument("--mode", choices=["forward", "backward"], required=True)
    parser.add_argument("--norm-eps", type=float, default=1e-6)
    parser.add_argument("--no-grad", action="store_true")
    parser.add_argument("--compute", choices=["fp32", "io"], default="fp32")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    partial, block_res, proj, norm = (
        load(os.path.join(args.dir, name + ".npy"), args.dtype)
        for name in ("partialBlock", "blockRes", "projWeight", "normWeight")
    )
    compute = partial.dtype if args.compute == "io" else torch.float32
    backward = args.mode == "backward"
    recording = backward or not args.no_grad
    leaves = [partial, block_res, proj, norm]
    for t in leaves:
        t.requires_grad_(recording)
    grad_path = os.path.join(args.dir, "gradHiddenStates.npy")
    grad = load(grad_path, args.dtype) if os.path.exists(grad_path) else torch.ones_like(partial)

    def timed():
        start = time.perf_counter()
        if backward:
            hidden, _, _ = forward(partial, block_res, proj, norm, args.norm_eps, compute)
            hidden.backward(grad)
            for t in leaves:
                t.grad = None
        elif recording:
            forward(partial, block_res, proj, norm, args.norm_eps, compute)
        else:
            with torch.no_grad():
                forward(partial, block_res, proj, norm, args.norm_eps, compute)
        return time.perf_counter() - start

    print_fastest(timed, args.repeat)


if __name__ == "__main__":
    main()
