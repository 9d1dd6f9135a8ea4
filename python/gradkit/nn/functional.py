"""Drop-ins for torch.nn.functional on gradkit's kernels.

scaled_dot_product_attention has the signature and semantics of torch.nn.functional.scaled_dot_product_attention on
the CPU, computed by gradkit's flash attention (BNSD layout) through gradkit.autograd.flash_attention (its torch.ops.gradkit
custom op while torch.compile / torch.export trace, on torch >= 2.4)."""
import math

import torch

from .. import autograd

__all__ = ["scaled_dot_product_attention"]

_TEMPLATE = 2048  # the compressed causal mask of sparse mode 2 (gradkit.ops' flash attention docs)


def _as_bnsd(x, name):
    """x (..., S, E) as [B, H, S, E] with the leading dims before H folded into B."""
    if x.dim() < 3:
        raise ValueError(f"scaled_dot_product_attention: {name} must have at least 3 dims (..., heads, seq, dim), "
                         f"given shape {tuple(x.shape)}")
    return x if x.dim() == 4 else x.reshape((-1,) + tuple(x.shape[-3:]))


def _mask_operands(attn_mask, lead, shape, dtype):
    """SDPA's attn_mask as gradkit's (atten_mask, pse): a bool mask (True = takes part) becomes atten_mask (True =
    masked out) of shape [L, S] or [B | 1, 1, L, S] or [B, H, L, S]; a float mask becomes an additive pse (pse_type 0:
    scale * Q.K^T + pse) of shape [B, H, L, S], [B, H, 1, S] or [1, H, L, S]."""
    if attn_mask is None:
        return None, None
    b, h, rows, cols = shape
    full = lead + (h, rows, cols)  # the query's own leading dims: a mask broadcasts against them
    if attn_mask.dtype == torch.bool:
        masked = ~attn_mask
        if masked.dim() == 2 and tuple(masked.shape) == (rows, cols):
            return masked.contiguous(), None
        return masked.expand(full).reshape(b, h, rows, cols).contiguous(), None
    bias = attn_mask.to(dtype)
    if bias.dim() == 4 and tuple(bias.shape) in ((b, h, rows, cols), (b, h, 1, cols), (1, h, rows, cols)):
        return None, bias.contiguous()
    return None, bias.expand(full).reshape(b, h, rows, cols).contiguous()


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value per head, as torch.nn.functional.scaled_dot_product_attention:
    query (..., Hq, L, E), key (..., Hkv, S, E), value (..., Hkv, S, Ev) -> (..., Hq, L, Ev); float32, float16,
    bfloat16. attn_mask: bool (True takes part) or float (added to the scaled scores), broadcastable to
    (..., Hq, L, S); is_causal: the top-left causal mask (not with attn_mask); scale None: 1 / sqrt(E); enable_gqa:
    Hq a multiple of Hkv, each key/value head serving Hq / Hkv query heads. dropout_p > 0 drops with gradkit's Philox
    stream, its seed drawn from torch's generator. Gradients flow to query, key and value (none to a float mask)."""
    if is_causal and attn_mask is not None:
        raise RuntimeError("scaled_dot_product_attention: is_causal and attn_mask cannot both be set")
    lead = tuple(query.shape[:-3])
    q, k, v = _as_bnsd(query, "query"), _as_bnsd(key, "key"), _as_bnsd(value, "value")
    heads, kv_heads = q.shape[1], k.shape[1]
    if heads != kv_heads and not enable_gqa:
        raise RuntimeError(f"scaled_dot_product_attention: query has {heads} heads and key {kv_heads}: pass "
                           f"enable_gqa=True for grouped-query attention")
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    atten_mask, pse = _mask_operands(attn_mask, lead, (q.shape[0], heads, q.shape[2], k.shape[2]), query.dtype)
    sparse_mode = 0
    if is_causal:
        atten_mask = torch.ones(_TEMPLATE, _TEMPLATE, dtype=torch.bool).triu(1)
        sparse_mode = 2  # leftUpCausal: SDPA's top-left alignment
    keep_prob = 1.0 - float(dropout_p)
    seed = int(torch.randint(0, 2**62, (1,), dtype=torch.int64).item()) if keep_prob < 1.0 else None
    out = autograd.flash_attention(q, k, v, heads, "BNSD", pse=pse, atten_mask=atten_mask, scale=scale,
                                   keep_prob=keep_prob, sparse_mode=sparse_mode, pse_type=0, seed=seed)
    return out.reshape(lead + tuple(out.shape[1:])) if len(lead) != 1 else out
