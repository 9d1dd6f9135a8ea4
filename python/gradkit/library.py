"""gradkit's operators as PyTorch custom operators (torch.library, torch >= 2.4), under torch.ops.gradkit.*:
each has a fake (meta) kernel computing its outputs' shapes and dtypes from the library's own size model, so that
torch.compile(fullgraph=True) and torch.export trace them, and its backward registered with setup_context, so that
autograd and torch.func see them. gradkit.autograd keeps the torch.autograd.Function path for older torch (Debian's
1.13); gradkit.nn.functional picks this one where it exists.

Each op takes every argument explicitly (no defaults, no random draws inside: a dropout seed is drawn by the caller),
so that the same inputs give the same outputs, as torch.library.opcheck requires. The backward ops have no backward
of their own: a second derivative raises."""
from typing import List, Optional, Tuple

import torch

from . import ops

NAMESPACE = "gradkit"
AVAILABLE = hasattr(torch, "library") and hasattr(torch.library, "custom_op")

Tensor = torch.Tensor


def _fa_options(scale, keep_prob, pre_tokens, next_tokens, sparse_mode, pse_type, prefix, actual_seq_qlen,
                actual_seq_kvlen, q_start_idx, kv_start_idx, seed, offset, inner_precise):
    """The keyword arguments gradkit.ops' flash attention entry points take."""
    return dict(scale=scale, keep_prob=keep_prob, pre_tokens=pre_tokens, next_tokens=next_tokens,
                sparse_mode=sparse_mode, pse_type=pse_type, prefix=prefix, actual_seq_qlen=actual_seq_qlen,
                actual_seq_kvlen=actual_seq_kvlen, q_start_idx=q_start_idx, kv_start_idx=kv_start_idx, seed=seed,
                offset=offset, inner_precise=inner_precise)


if AVAILABLE:

    @torch.library.custom_op(f"{NAMESPACE}::flash_attention_score", mutates_args=())
    def flash_attention_score(query: Tensor, key: Tensor, value: Tensor, pse: Optional[Tensor],
                              atten_mask: Optional[Tensor], drop_mask: Optional[Tensor], head_num: int,
                              input_layout: str, scale: float, keep_prob: float, pre_tokens: int, next_tokens: int,
                              sparse_mode: int, pse_type: int, prefix: Optional[List[int]],
                              actual_seq_qlen: Optional[List[int]], actual_seq_kvlen: Optional[List[int]],
                              q_start_idx: Optional[List[int]], kv_start_idx: Optional[List[int]], seed: int,
                              offset: int, inner_precise: int) -> Tuple[Tensor, Tensor, Tensor]:
        """gradkit.ops.flash_attention_score as a custom op: (attention_out, softmax_max, softmax_sum)."""
        out = ops.flash_attention_score(
            query, key, value, head_num, input_layout, pse=pse, atten_mask=atten_mask, drop_mask=drop_mask,
            **_fa_options(scale, keep_prob, pre_tokens, next_tokens, sparse_mode, pse_type, prefix, actual_seq_qlen,
                          actual_seq_kvlen, q_start_idx, kv_start_idx, seed, offset, inner_precise))
        return out.attention_out, out.softmax_max, out.softmax_sum

    @flash_attention_score.register_fake
    def _(query, key, value, pse, atten_mask, drop_mask, head_num, input_layout, scale, keep_prob, pre_tokens,
          next_tokens, sparse_mode, pse_type, prefix, actual_seq_qlen, actual_seq_kvlen, q_start_idx, kv_start_idx,
          seed, offset, inner_precise):
        sizes = ops._fa_sizes(query, key, value, head_num, input_layout, actual_seq_qlen, actual_seq_kvlen)
        out = query.new_empty(tuple(sizes["out_shape"]))
        stats = tuple(sizes["stats_shape"])
        return out, query.new_empty(stats, dtype=torch.float32), query.new_empty(stats, dtype=torch.float32)

    @torch.library.custom_op(f"{NAMESPACE}::flash_attention_score_grad", mutates_args=())
    def flash_attention_score_grad(query: Tensor, key: Tensor, value: Tensor, dy: Tensor, pse: Optional[Tensor],
                                   atten_mask: Optional[Tensor], drop_mask: Optional[Tensor], softmax_max: Tensor,
                                   softmax_sum: Tensor, attention_in: Tensor, head_num: int, input_layout: str,
                                   scale: float, keep_prob: float, pre_tokens: int, next_tokens: int,
                                   sparse_mode: int, pse_type: int, prefix: Optional[List[int]],
                                   actual_seq_qlen: Optional[List[int]], actual_seq_kvlen: Optional[List[int]],
                                   q_start_idx: Optional[List[int]], kv_start_idx: Optional[List[int]], seed: int,
                                   offset: int, inner_precise: int) -> Tuple[Tensor, Tensor, Tensor]:
        """gradkit.ops.flash_attention_score_grad as a custom op: (dq, dk, dv)."""
        grads = ops.flash_attention_score_grad(
            query, key, value, dy.contiguous(), head_num, input_layout, softmax_max, softmax_sum, attention_in,
            pse=pse, atten_mask=atten_mask, drop_mask=drop_mask,
            **_fa_options(scale, keep_prob, pre_tokens, next_tokens, sparse_mode, pse_type, prefix, actual_seq_qlen,
                          actual_seq_kvlen, q_start_idx, kv_start_idx, seed, offset, inner_precise))
        return grads.dq, grads.dk, grads.dv

    @flash_attention_score_grad.register_fake
    def _(query, key, value, dy, *rest):
        return query.new_empty(query.shape), key.new_empty(key.shape), value.new_empty(value.shape)

    _FA_TENSORS = ("query", "key", "value", "pse", "atten_mask", "drop_mask")
    _FA_ATTRIBUTES = ("head_num", "input_layout", "scale", "keep_prob", "pre_tokens", "next_tokens", "sparse_mode",
                      "pse_type", "prefix", "actual_seq_qlen", "actual_seq_kvlen", "q_start_idx", "kv_start_idx",
                      "seed", "offset", "inner_precise")

    def _fa_setup_context(ctx, inputs, output):
        named = dict(zip(_FA_TENSORS + _FA_ATTRIBUTES, inputs))
        ctx.save_for_backward(*(named[k] for k in _FA_TENSORS), *output)
        ctx.attributes = [named[k] for k in _FA_ATTRIBUTES]

    def _fa_backward(ctx, grad_out, _grad_max, _grad_sum):
        query, key, value, pse, atten_mask, drop_mask, out, softmax_max, softmax_sum = ctx.saved_tensors
        dq, dk, dv = flash_attention_score_grad(query, key, value, grad_out, pse, atten_mask, drop_mask, softmax_max,
                                                softmax_sum, out, *ctx.attributes)
        return (dq, dk, dv) + (None,) * (len(_FA_TENSORS) - 3 + len(_FA_ATTRIBUTES))

    flash_attention_score.register_autograd(_fa_backward, setup_context=_fa_setup_context)
