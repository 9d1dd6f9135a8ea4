"""torch.nn.Modules around the gradkit operators that carry parameters."""
import torch

from .. import autograd

__all__ = ["MhcPre", "Compressor"]


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
