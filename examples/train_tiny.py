#!/usr/bin/env python3
"""Trains a tiny decoder block on the CPU twice, once on gradkit's operators and once on the pure-torch reference,
and prints both loss curves (docs/python.md, "train_tiny").

The block: token embedding copied into N = 4 residual streams (mHC), then two sub-blocks, attention and a ReLU
MLP, each with dropout on its output and wrapped as --residual says; the head averages the streams.
  --residual hc    (default) entered through the mHC pre-mapping (gradkit.mhc_pre: h_in, h_post, h_res from the
                   fp32 streams) and left through the post-mapping in plain torch (streams = h_res . streams +
                   h_post * output; h_res unconstrained).
  --residual mhc   the whole mHC layer: each sub-block wrapped in gradkit.nn.HyperConnection (MhcPre, MhcSinkhorn
                   projecting h_res onto the doubly stochastic matrices, MhcPost, and their backwards); the streams
                   are bfloat16, as the operators take them. The reference variants run the same module with
                   reference=torch.float32 / float64 (gradkit.reference's formulas in pure torch).
The task is synthetic, the loss the cross entropy of predicting each next token of arithmetic sequences modulo 16
(stride 1, 2 or 3).

Operators per variant:
  gradkit     gradkit.mhc_pre (--residual mhc: gradkit.nn.HyperConnection), gradkit.relu (ThresholdBackward),
              gradkit.dropout (native_dropout + V3Grad)
  reference   gradkit.reference.mhc_pre (--residual mhc: HyperConnection(reference=torch.float32)), torch.relu,
              x * keep / (1 - p) in torch
Both variants drop the same elements: the keep mask is a random input of the step, drawn from gradkit's dropout
stream (seed = step, Philox subsequence = the sample's index in the global batch). Per-sample subsequences also
make a sample's mask independent of which process holds it, so --world-size 2 sees the single-process masks.
Attention (--attention):
  torch        causal softmax attention in plain torch (both variants).
  compressor   compressed attention: the block input h is lifted to H = 1024 (a linear layer, then bfloat16) and
               folded by the KV compressor (gradkit.compressor / gradkit.reference.compressor: D = 128, coff = 2,
               cmp_ratio = 4, the C4Li configuration; BSH, start_pos 0, no state cache) into one compressed row
               per 4 tokens; keys and values are linear maps of those rows. Query t attends to the rows of the
               blocks complete at t (row j pools positions up to 4j + 3, so it is visible from t = 4j + 3 on:
               causal at block granularity) and to its own token's key and value (so that no query is left with
               nothing to attend to). The compressor's weights are float32 parameters cast to bfloat16 per step.
  csa          DeepSeek-V4's compressed sparse attention (gradkit.nn.CompressedSparseAttention, mode "csa"): the
               block input is lifted to H = 1024; 1 head of D = 512 attends, with a sink, over a 128-row causal window
               of the original KV and over the top-2 of the C4A compressor's rows (cmp_ratio 4) that the lightning
               indexer (C4Li keys, 4 heads) picks; the indexer's KL loss against the attention's head-averaged
               softmax (detached) is added to the cross entropy with weight INDEXER_LOSS_WEIGHT / tokens. The
               reference variants run the same module with reference=torch.float32 / float64.
  hca          the same layer in mode "hca": every complete compressed row (no indexer), the compressor C128A-like
               (coff 1) with cmp_ratio 8 instead of 128 so that SEQ = 16 tokens give compressed rows.
  flash        causal multi-head attention (FLASH_HEADS = 4 heads of D = 16, BSH layout, sparse_mode 3 with the
               [2048, 2048] causal template) through gradkit.flash_attention (aclnnFlashAttentionScoreV2 +
               aclnnFlashAttentionScoreGradV2, fp32); the reference runs gradkit.reference.flash_attention (the same
               attention written in torch) in fp32, reference64 in fp64. The model's parameters are those of
               --attention torch.

  --world-size 2   the same training as two processes under torch.distributed (gloo, DistributedDataParallel),
                   each on half of the same global batch; rank 0 prints the curves of the global-batch loss.
  --plot FILE      writes a PNG of the two curves (matplotlib).
  --json FILE      writes the curves as JSON (what tests/python/test_train_tiny.py reads).
"""
import argparse
import importlib.util
import json
import math
import os
import socket
import sys

import torch
import torch.nn.functional as F

try:
    import gradkit
except ImportError:  # run from the source tree: the module built into build/python
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "python"))
    import gradkit
from gradkit import reference
from gradkit.nn import HyperConnection

VOCAB, SEQ, DIM, STREAMS, HIDDEN = 16, 16, 64, 4, 128
DROPOUT = 0.1
# --attention compressor: the compressor's hidden size (its smallest), head dim, overlap and ratio (C4Li).
CMP_HIDDEN, CMP_DIM, CMP_COFF, CMP_RATIO = 1024, 128, 2, 4
# --attention flash: the heads DIM is split into.
FLASH_HEADS = 4
# --attention csa / hca: the layer's hidden size (the compressor's smallest), heads, top-k and the HCA ratio (scaled
# down from 128); the weight of the indexer's KL loss (a sum over tokens) per token; the default global batch (half
# of the other modes': the layer's 1024-wide fp32 projections dominate the step, on Debian's torch at about
# 2 GFLOP/s).
SPARSE_HIDDEN, SPARSE_HEADS, SPARSE_TOPK, HCA_RATIO, INDEXER_LOSS_WEIGHT, SPARSE_BATCH = 1024, 1, 2, 8, 0.1, 4


class Ops:
    """The operators one variant trains with."""

    def __init__(self, name, attention):
        self.name = name
        self.attention_kind = attention
        self.causal_template = gradkit.flash_attention_causal_mask() if attention == "flash" else None

    def mhc_pre(self, x, phi, alpha, bias, gamma):
        if self.name == "gradkit":
            return gradkit.mhc_pre(x, phi, alpha, bias, gamma)
        if self.name == "reference64":  # the reference with mHC evaluated in fp64 (outputs rounded to fp32 / bf16)
            h_in, h_post, h_res = reference.mhc_pre(x, phi, alpha, bias, gamma, compute=torch.float64)
            return h_in, h_post.float(), h_res.float()
        return reference.mhc_pre(x, phi, alpha, bias, gamma)

    def relu(self, x):
        return gradkit.relu(x) if self.name == "gradkit" else torch.relu(x)

    def dropout(self, x, step, first_sample):
        """Per-sample dropout: sample b of this batch uses seed = step, offset = 4 * (first_sample + b)."""
        outputs = []
        for b in range(x.shape[0]):
            offset = 4 * (first_sample + b)
            if self.name == "gradkit":
                outputs.append(gradkit.dropout(x[b], DROPOUT, seed=step, offset=offset))
            else:
                outputs.append(reference.dropout(x[b], keep_mask(x[b].shape, step, offset), DROPOUT))
        return torch.stack(outputs)

    def attention(self, q, k, v):
        if self.attention_kind == "flash":
            return self.flash_attention(q, k, v)
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        causal = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        return torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1) @ v

    def flash_attention(self, q, k, v):
        """Causal attention of q, k, v [B, SEQ, DIM] (BSH) with FLASH_HEADS heads, scale 1/sqrt(DIM / FLASH_HEADS)."""
        mask = self.causal_template
        if self.name == "gradkit":
            return gradkit.flash_attention(q, k, v, FLASH_HEADS, "BSH", atten_mask=mask, sparse_mode=3)
        compute = torch.float64 if self.name == "reference64" else torch.float32
        scale = 1 / math.sqrt(DIM // FLASH_HEADS)
        out = reference.flash_attention(q, k, v, FLASH_HEADS, "BSH", scale=scale, atten_mask=mask, sparse_mode=3,
                                        compute=compute)
        return out.to(q.dtype)

    def compressor(self, x, wkv, wgate, ape):
        """cmp_kv [B, SEQ / CMP_RATIO, CMP_DIM] (bfloat16) of x [B, SEQ, CMP_HIDDEN] (bfloat16), start_pos 0."""
        if self.name == "gradkit":
            return gradkit.compressor(x, wkv, wgate, ape, CMP_RATIO, coff=CMP_COFF)
        compute = torch.float64 if self.name == "reference64" else torch.float32
        return reference.compressor(x, wkv, wgate, ape, CMP_RATIO, coff=CMP_COFF, compute=compute)


class SparseAttentionBlock(torch.nn.Module):
    """--attention csa / hca: h lifted to SPARSE_HIDDEN, gradkit.nn.CompressedSparseAttention (reference mode for the
    reference variants), back to DIM. forward returns (output, the indexer's KL loss or None)."""

    def __init__(self, generator, linear, mode, variant):
        super().__init__()
        compute = {"gradkit": None, "reference": torch.float32, "reference64": torch.float64}[variant]
        self.lift, self.down = linear(DIM, SPARSE_HIDDEN), linear(SPARSE_HIDDEN, DIM)
        self.attention = gradkit.nn.CompressedSparseAttention(
            SPARSE_HIDDEN, SPARSE_HEADS, mode=mode, topk=SPARSE_TOPK, cmp_ratio=None if mode == "csa" else HCA_RATIO,
            reference=compute, generator=generator)

    def forward(self, h):
        y, indexer_loss = self.attention(self.lift(h))
        return self.down(y), indexer_loss


def keep_mask(shape, seed, offset):
    """The keep mask gradkit.dropout draws for (seed, offset), as a bool tensor (a random input of the step)."""
    _, mask = gradkit.ops.native_dropout(torch.ones(shape), DROPOUT, seed=seed, offset=offset)
    return gradkit.ops.unpack_dropout_mask(mask, shape)


class MhcParams(torch.nn.Module):
    """phi, alpha, bias, gamma of one mHC pre-mapping: starts as 'average the streams, keep them, add the output'."""

    def __init__(self, generator):
        super().__init__()
        n, rows = STREAMS, STREAMS * STREAMS + 2 * STREAMS
        self.phi = torch.nn.Parameter(torch.randn(rows, n * DIM, generator=generator) * 0.02)
        self.alpha = torch.nn.Parameter(torch.tensor([1.0, 1.0, 0.1]))
        bias = torch.zeros(rows)
        bias[2 * n:] = torch.eye(n).reshape(-1)  # h_res starts near the identity
        self.bias = torch.nn.Parameter(bias)
        self.gamma = torch.nn.Parameter(torch.ones(n, DIM))


class CompressedAttention(torch.nn.Module):
    """Attention over compressed KV rows (the module docstring, --attention compressor)."""

    def __init__(self, generator, linear):
        super().__init__()
        channels = CMP_COFF * CMP_DIM
        self.lift = linear(DIM, CMP_HIDDEN)
        self.wkv = torch.nn.Parameter(torch.randn(channels, CMP_HIDDEN, generator=generator) / math.sqrt(CMP_HIDDEN))
        self.wgate = torch.nn.Parameter(torch.randn(channels, CMP_HIDDEN, generator=generator) / math.sqrt(CMP_HIDDEN))
        self.ape = torch.nn.Parameter(torch.randn(CMP_RATIO, channels, generator=generator) * 0.1)
        self.key, self.value = linear(CMP_DIM, DIM), linear(CMP_DIM, DIM)

    def forward(self, ops, q, k, v, h):
        x = self.lift(h).to(torch.bfloat16)
        rows = ops.compressor(x, self.wkv.to(torch.bfloat16), self.wgate.to(torch.bfloat16), self.ape).float()
        keys, values = self.key(rows), self.value(rows)  # [B, SEQ / CMP_RATIO, DIM]
        scale = 1 / math.sqrt(q.shape[-1])
        scores = q @ keys.transpose(-1, -2) * scale  # [B, SEQ, blocks]
        # Row j pools positions up to CMP_RATIO * (j + 1) - 1: visible to the queries from there on.
        last = CMP_RATIO * torch.arange(1, keys.shape[-2] + 1) - 1
        visible = torch.arange(q.shape[-2])[:, None] >= last[None, :]
        scores = scores.masked_fill(~visible, float("-inf"))
        own = (q * k).sum(-1, keepdim=True) * scale  # each query's own token
        weights = torch.softmax(torch.cat([scores, own], -1), dim=-1)
        return weights[..., :-1] @ values + weights[..., -1:] * v


# --residual mhc: the precision each variant's HyperConnection computes in (None: gradkit's operators).
HYPER_CONNECTION_REFERENCE = {"gradkit": None, "reference": torch.float32, "reference64": torch.float64}


def run_body(h, body):
    """A HyperConnection's sub-layer: the body of this step (it closes over the step's operators and dropout seeds),
    given h_in in fp32."""
    return body(h.float())


class TinyDecoder(torch.nn.Module):
    def __init__(self, seed=0, attention="torch", residual="hc", variant="gradkit"):
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        self.residual = residual

        def linear(inputs, outputs):
            layer = torch.nn.Linear(inputs, outputs)
            with torch.no_grad():
                layer.weight.copy_(torch.randn(outputs, inputs, generator=generator) / math.sqrt(inputs))
                layer.bias.zero_()
            return layer

        self.embed = torch.nn.Embedding(VOCAB, DIM)
        with torch.no_grad():
            self.embed.weight.copy_(torch.randn(VOCAB, DIM, generator=generator))
        self.position = torch.nn.Parameter(torch.randn(SEQ, DIM, generator=generator) * 0.5)
        if residual == "mhc":  # the same draws as MhcParams: both modes start from the same weights
            reference_compute = HYPER_CONNECTION_REFERENCE[variant]
            self.mhc_attention, self.mhc_mlp = (
                HyperConnection(run_body, n=STREAMS, dim=DIM, reference=reference_compute, generator=generator)
                for _ in range(2))
        else:
            self.mhc_attention = MhcParams(generator)
            self.mhc_mlp = MhcParams(generator)
        self.q, self.k, self.v, self.o = (linear(DIM, DIM) for _ in range(4))
        self.up, self.down = linear(DIM, HIDDEN), linear(HIDDEN, DIM)
        self.head = linear(DIM, VOCAB)
        if attention == "compressor":  # drawn last: the other parameters are those of --attention torch
            self.compressed = CompressedAttention(generator, linear)
        if attention in ("csa", "hca"):
            self.sparse = SparseAttentionBlock(generator, linear, attention, variant)
        self.indexer_loss = None  # the last forward's (--attention csa)

    def sub_block(self, ops, mhc, streams, body):
        if self.residual == "mhc":
            return mhc(streams, body)
        p = mhc
        h_in, h_post, h_res = ops.mhc_pre(streams.to(torch.bfloat16), p.phi, p.alpha, p.bias, p.gamma)
        out = body(h_in.float())
        mixed = torch.einsum("bsnm,bsmd->bsnd", h_res, streams)
        return mixed + h_post.unsqueeze(-1) * out.unsqueeze(-2)

    def forward(self, tokens, ops, step, first_sample):
        x = self.embed(tokens) + self.position
        streams = x.unsqueeze(-2).expand(-1, -1, STREAMS, -1)
        if self.residual == "mhc":
            streams = streams.to(torch.bfloat16)

        def attention(h):
            if ops.attention_kind == "compressor":
                out = self.o(self.compressed(ops, self.q(h), self.k(h), self.v(h), h))
            elif ops.attention_kind in ("csa", "hca"):
                out, self.indexer_loss = self.sparse(h)
            else:
                out = self.o(ops.attention(self.q(h), self.k(h), self.v(h)))
            return ops.dropout(out, 2 * step, first_sample)

        def mlp(h):
            return ops.dropout(self.down(ops.relu(self.up(h))), 2 * step + 1, first_sample)

        streams = self.sub_block(ops, self.mhc_attention, streams, attention)
        streams = self.sub_block(ops, self.mhc_mlp, streams, mlp)
        h = streams.float().mean(-2)
        h = h * torch.rsqrt(h.square().mean(-1, keepdim=True) + 1e-6)
        return self.head(h)


def batch(step, size):
    """The global batch of a step: arithmetic sequences modulo VOCAB, random start, step 1, 2 or 3 per sequence."""
    generator = torch.Generator().manual_seed(1000 + step)
    start = torch.randint(0, VOCAB, (size, 1), generator=generator)
    stride = torch.randint(1, 4, (size, 1), generator=generator)
    return (start + stride * torch.arange(SEQ)) % VOCAB


def step_loss(model, tokens, ops, step, first_sample):
    logits = model(tokens, ops, step, first_sample)
    # Predict token t+1 from the tokens up to t, from the second position on (one token does not tell the stride).
    loss = F.cross_entropy(logits[:, 1:-1].reshape(-1, VOCAB), tokens[:, 2:].reshape(-1))
    indexer_loss = getattr(model, "module", model).indexer_loss
    if indexer_loss is not None:  # --attention csa: the indexer learns from its KL loss, per token
        loss = loss + INDEXER_LOSS_WEIGHT * indexer_loss / tokens.numel()
    return loss


def train(variant, args, rank=0, world_size=1, first_gradients=None):
    """Trains one variant; returns the global-batch loss of every step. first_gradients (a dict), when given,
    receives the (global-batch) gradient of every parameter at step 0."""
    ops = Ops(variant, args.attention)
    model = TinyDecoder(seed=args.seed, attention=args.attention, residual=args.residual, variant=variant)
    if world_size > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    local = args.batch // world_size
    losses = []
    for step in range(args.steps):
        tokens = batch(step, args.batch)[rank * local:(rank + 1) * local]
        loss = step_loss(model, tokens, ops, step, rank * local)
        optimizer.zero_grad()
        loss.backward()  # DDP averages the gradients over the ranks: the global-batch mean loss's gradient
        if step == 0 and first_gradients is not None:
            first_gradients.update({name: p.grad.clone() for name, p in model.named_parameters()
                                    if p.grad is not None})  # --attention csa / hca: q, k, v, o take no part
        optimizer.step()
        value = loss.detach().clone()
        if world_size > 1:
            torch.distributed.all_reduce(value)
            value /= world_size
        losses.append(value.item())
    return losses


def run_variants(args, rank=0, world_size=1):
    """The loss curve of each variant, and under "step0_gradients" [||g - g_reference||, ||g_reference||] of each
    parameter's step-0 gradient (the training curves hide small gradient errors; these do not)."""
    curves, gradients = {}, {}
    for variant in args.variants:
        gradients[variant] = {}
        curves[variant] = train(variant, args, rank, world_size, gradients[variant])
    if "reference" in gradients:
        base = gradients["reference"]
        curves["step0_gradients"] = {
            variant: {name: [(g - base[name]).norm().item(), base[name].norm().item()] for name, g in grads.items()}
            for variant, grads in gradients.items() if variant != "reference"}
    return curves


def distributed_worker(rank, args, port, path):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    torch.distributed.init_process_group("gloo", rank=rank, world_size=args.world_size)
    try:
        curves = run_variants(args, rank, args.world_size)
        if rank == 0:
            with open(path, "w") as f:
                json.dump(curves, f)
    finally:
        torch.distributed.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch", type=int, help="global batch (split over --world-size; default 8, 4 for "
                        "--attention csa / hca)")
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--world-size", type=int, default=1)
    parser.add_argument("--attention", choices=["torch", "flash", "compressor", "csa", "hca"], default="torch")
    parser.add_argument("--residual", choices=["hc", "mhc"], default="hc",
                        help="mhc: every sub-block wrapped in gradkit.nn.HyperConnection (the whole mHC layer)")
    parser.add_argument("--variants", nargs="+", choices=["gradkit", "reference", "reference64"],
                        default=["gradkit", "reference"],
                        help="reference64: the reference with mHC in fp64, to see how far two valid references "
                             "drift apart")
    parser.add_argument("--plot", metavar="FILE")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args()
    if args.batch is None:  # csa / hca: a 1024-wide layer, whose fp32 matmuls dominate on a generic BLAS
        args.batch = SPARSE_BATCH if args.attention in ("csa", "hca") else 8
    if args.batch % args.world_size:
        parser.error("--batch must be a multiple of --world-size")
    if args.plot and importlib.util.find_spec("matplotlib") is None:  # before training, not after the last step
        parser.error("--plot needs matplotlib (pip install 'gradkit[plot]', or Debian's python3-matplotlib)")

    if args.world_size == 1:
        curves = run_variants(args)
    else:
        import tempfile

        import torch.multiprocessing as mp

        with tempfile.TemporaryDirectory() as scratch:
            path = os.path.join(scratch, "curves.json")
            mp.spawn(distributed_worker, args=(args, free_port(), path), nprocs=args.world_size, join=True)
            with open(path) as f:
                curves = json.load(f)

    ran = list(args.variants)  # the variants asked for, in their order (any one may run alone)
    print("step  " + "  ".join(f"{v:<11}" for v in ran) + f"(world size {args.world_size}, global batch {args.batch})")
    for step, losses in enumerate(zip(*(curves[v] for v in ran))):
        print(f"{step:4d}  " + "  ".join(f"{loss:.6f}   " for loss in losses))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(curves, f)
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        figure, axes = plt.subplots(figsize=(6, 4))
        labels = {"gradkit": "gradkit operators", "reference": "pure-torch reference",
                  "reference64": "pure-torch reference, mHC in fp64"}
        for variant in ran:
            axes.plot(curves[variant], "-" if variant == "gradkit" else "--", label=labels[variant])
        axes.set_xlabel("step")
        axes.set_ylabel("cross entropy")
        axes.set_title(f"train_tiny (--residual {args.residual}, --attention {args.attention}, "
                       f"world size {args.world_size})")
        axes.legend()
        figure.savefig(args.plot, dpi=100, bbox_inches="tight")
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
