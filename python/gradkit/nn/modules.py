"""torch.nn.Modules around the gradkit operators that carry parameters."""
import torch

from .. import autograd, reference

__all__ = ["MhcPre", "HyperConnection", "Compressor"]


class MhcPre(torch.nn.Module):
    """The mHC pre-mapping (gradkit.mhc_pre, aclnnMhcPre; docs/mhc.md) with its parameters: phi [2N + N*N, N*D],
    alpha [3], bias [2N + N*N] and, with norm_weight, gamma [N, D] (float32). forward(x) takes the N streams x
    [T, N, D] or [B, S, N, D] (bfloat16 / float16) and returns (h_in, h_post, h_res): the sub-layer's input, the
    post weights and the residual mixing logits. The initial values make it start as "average the streams, keep
    them": phi ~ N(0, init_std^2), alpha [1, 1, 0.1], bias 0 with the h_res part the identity, gamma 1."""

    def __init__(self, streams, dim, *, norm_weight=True, norm_eps=1e-6, hc_eps=1e-6, op_impl_mode=None,
                 init_std=0.02, generator=None):
        super().__init__()
        n, rows = int(streams), 2 * int(streams) + int(streams) ** 2
        self.streams, self.dim = n, int(dim)
        self.norm_eps, self.hc_eps, self.op_impl_mode = float(norm_eps), float(hc_eps), op_impl_mode
        self.phi = torch.nn.Parameter(torch.randn(rows, n * self.dim, generator=generator) * init_std)
        self.alpha = torch.nn.Parameter(torch.tensor([1.0, 1.0, 0.1]))
        bias = torch.zeros(rows)
        bias[2 * n:] = torch.eye(n).reshape(-1)
        self.bias = torch.nn.Parameter(bias)
        self.gamma = torch.nn.Parameter(torch.ones(n, self.dim)) if norm_weight else None

    def forward(self, x):
        return autograd.mhc_pre(x, self.phi, self.alpha, self.bias, self.gamma, norm_eps=self.norm_eps,
                                hc_eps=self.hc_eps, op_impl_mode=self.op_impl_mode)

    def extra_repr(self):
        return f"streams={self.streams}, dim={self.dim}, norm_weight={self.gamma is not None}"


class HyperConnection(torch.nn.Module):
    """A sub-layer wrapped in the whole mHC (manifold-constrained hyper-connections; docs/mhc.md, "The layer"):
    forward(x, *args, **kwargs) maps the n residual streams x [T, n, D] or [B, S, n, D] (bfloat16 / float16) to
    the next block's streams, x's shape and dtype:

        h_in, h_post, logits = mhc_pre(x)             the sub-layer's input [.., D] in x's dtype, post weights [.., n]
        h_res = mhc_sinkhorn(logits [.., n, n])       doubly stochastic (num_iters rounds, sinkhorn_eps)
        out   = sublayer(h_in, *args, **kwargs)       any callable returning h_in's shape (cast to x's dtype)
        next  = mhc_post(x, h_res, out, h_post)       h_res^T x + out (x) h_post per token

    Backward runs aclnnMhcPostBackward, the sub-layer's own backward, aclnnMhcSinkhornBackward and
    aclnnMhcPreBackward (which takes MhcPostBackward's gradient of x in the same call). The parameters are those
    of gradkit.nn.MhcPre (self.pre: phi, alpha, bias and, with norm_weight, gamma; the same initial values: the
    layer starts as "average the streams into the sub-layer, keep them, add its output"); a sublayer that is a
    torch.nn.Module is registered as a child.

    fused=True computes the pre-mapping and the Sinkhorn projection in one call (mhc_pre_sinkhorn, upstream's
    A2/A3 path): n = 4, num_iters = 20, no norm weight, hc_eps as the Sinkhorn's eps, HF32 matmul operands, D a
    multiple of 128 (the Ascend910B / Ascend910_93 profiles) or 4096 / 7168 (Ascend950); note that its Sinkhorn
    is upstream's other variant (exp(z - rowmax), row normalisation first). reference=torch.float32 or float64
    runs the same layer in pure torch (gradkit.reference's formulas in that precision, rounded to x's dtype where
    the operators store it): the check of the operators, with the same parameters and the same interface.

    The streams are the caller's: expand the embedding once before the first block, e.g.
    x = h.unsqueeze(-2).expand(*h.shape[:-1], n, h.shape[-1]).to(torch.bfloat16), and reduce them before the head,
    e.g. h = x.float().mean(-2) (or a learned combination)."""

    def __init__(self, sublayer, n=4, dim=None, *, num_iters=20, sinkhorn_eps=1e-6, norm_weight=None, norm_eps=1e-6,
                 hc_eps=1e-6, op_impl_mode=None, fused=False, reference=None, init_std=0.02, generator=None):
        super().__init__()
        if dim is None:
            raise TypeError("HyperConnection: dim (the width D of each stream) is required")
        if not callable(sublayer):
            raise TypeError(f"HyperConnection: sublayer must be callable, got {type(sublayer).__name__}")
        if norm_weight is None:
            norm_weight = not fused
        if fused and norm_weight:
            raise ValueError("HyperConnection: fused=True has no norm weight (aclnnMhcPreSinkhorn takes no gamma); "
                             "pass norm_weight=False or leave it unset")
        if reference not in (None, torch.float32, torch.float64):
            raise ValueError(f"HyperConnection: reference must be None, torch.float32 or torch.float64, got "
                             f"{reference}")
        self.sublayer = sublayer
        self.pre = MhcPre(n, dim, norm_weight=norm_weight, norm_eps=norm_eps, hc_eps=hc_eps, op_impl_mode=op_impl_mode,
                          init_std=init_std, generator=generator)
        self.n, self.dim, self.num_iters = int(n), int(dim), int(num_iters)
        self.sinkhorn_eps, self.fused, self.reference = float(sinkhorn_eps), bool(fused), reference

    def forward(self, x, *args, **kwargs):
        h_in, h_post, h_res = self._pre_and_sinkhorn(x)
        out = self.sublayer(h_in, *args, **kwargs)
        if tuple(out.shape) != tuple(h_in.shape):
            raise ValueError(f"HyperConnection: the sublayer must return its input's shape {tuple(h_in.shape)}, "
                             f"got {tuple(out.shape)}")
        out = out.to(x.dtype)
        if self.reference is not None:
            return reference.mhc_post(x, h_res, out, h_post, compute=self.reference)
        return autograd.mhc_post(x, h_res, out, h_post)

    def _pre_and_sinkhorn(self, x):
        """(h_in, h_post, h_res [.., n, n] doubly stochastic) of the streams x."""
        p, n, lead = self.pre, self.n, x.shape[:-2]
        if self.fused:
            numbers = dict(hc_mult=n, num_iters=self.num_iters, hc_eps=p.hc_eps, norm_eps=p.norm_eps)
            if self.reference is not None:
                h_in, h_post, h_res = reference.mhc_pre_sinkhorn(x, p.phi, p.alpha, p.bias, compute=self.reference,
                                                                 **numbers)
            else:
                h_in, h_post, h_res = autograd.mhc_pre_sinkhorn(x, p.phi, p.alpha, p.bias, **numbers)
            return h_in, h_post, h_res.reshape(*lead, n, n)
        if self.reference is not None:
            h_in, h_post, logits = reference.mhc_pre(x, p.phi, p.alpha, p.bias, p.gamma, norm_eps=p.norm_eps,
                                                     hc_eps=p.hc_eps, compute=self.reference,
                                                     hf32=p.op_impl_mode == 1)
            h_res = reference.mhc_sinkhorn(logits, self.sinkhorn_eps, self.num_iters, compute=self.reference)
            return h_in, h_post, h_res
        h_in, h_post, logits = p(x)
        return h_in, h_post, autograd.mhc_sinkhorn(logits.reshape(*lead, n, n), self.sinkhorn_eps, self.num_iters)

    def extra_repr(self):
        mode = "fused" if self.fused else f"sinkhorn_eps={self.sinkhorn_eps}"
        backend = "" if self.reference is None else f", reference={self.reference}"
        return f"n={self.n}, dim={self.dim}, num_iters={self.num_iters}, {mode}{backend}"


class Compressor(torch.nn.Module):
    """The KV compressor of DeepSeek-V4's compressed attention (gradkit.compressor, aclnnCompressor; docs/compressor.md)
    with its parameters: wkv and wgate [coff * head_dim, hidden] in `dtype` (bfloat16 / float16) and ape
    [cmp_ratio, coff * head_dim] (float32). forward(x, ...) folds every cmp_ratio tokens of x (BSH [B, S, hidden] or
    TH [T, hidden] with cu_seqlens) into one row of cmp_kv ([.., head_dim], x's dtype); the keyword arguments are
    gradkit.compressor's (a state cache for decoding, per-batch lengths and start positions). wkv and wgate start as
    N(0, init_std^2), ape at 0 (no position preference)."""

    def __init__(self, hidden, head_dim, cmp_ratio, *, coff=1, dtype=torch.bfloat16, init_std=0.02, generator=None):
        super().__init__()
        self.hidden, self.head_dim, self.cmp_ratio, self.coff = int(hidden), int(head_dim), int(cmp_ratio), int(coff)
        rows = self.coff * self.head_dim
        self.wkv = torch.nn.Parameter((torch.randn(rows, self.hidden, generator=generator) * init_std).to(dtype))
        self.wgate = torch.nn.Parameter((torch.randn(rows, self.hidden, generator=generator) * init_std).to(dtype))
        self.ape = torch.nn.Parameter(torch.zeros(self.cmp_ratio, rows))

    def forward(self, x, *, state_cache=None, state_block_table=None, cu_seqlens=None, seqused=None, start_pos=None,
                cache_mode=1):
        return autograd.compressor(x, self.wkv, self.wgate, self.ape, self.cmp_ratio, state_cache=state_cache,
                                   state_block_table=state_block_table, cu_seqlens=cu_seqlens, seqused=seqused,
                                   start_pos=start_pos, coff=self.coff, cache_mode=cache_mode)

    def extra_repr(self):
        return f"hidden={self.hidden}, head_dim={self.head_dim}, cmp_ratio={self.cmp_ratio}, coff={self.coff}"
