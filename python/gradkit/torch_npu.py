"""torch_npu's public functions for the operators gradkit implements, with torch_npu's names, positional
arguments and keywords, so that a script written for Ascend runs on the CPU by changing its import:

    import gradkit.torch_npu as torch_npu

Names found in torch_npu's documentation and op-plugin sources (docs/python.md lists them):
  _npu_dropout(self, p) -> (Tensor, Tensor)
  npu_mhc_pre(x, phi, alpha, bias, *, gamma=None, norm_eps=1e-6, hc_eps=1e-6, out_flag=0, inner_precise=0)
      -> (h_in, h_post, h_res, inv_rms, h_mix, h_pre)
  npu_mhc_pre_backward(x, phi, alpha, grad_h_in, grad_h_post, grad_h_res, inv_rms, h_mix, h_pre, h_post, *,
      gamma=None, hc_eps=1e-6, grad_x_post=None) -> (grad_x, grad_phi, grad_alpha, grad_bias, grad_gamma)
  npu_fusion_attention(query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None,
      scale=1., keep_prob=1., pre_tockens=2147483647, next_tockens=2147483647, inner_precise=0, prefix=None,
      actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False)
      -> (attention_out, softmax_max, softmax_sum, softmax_out, seed, offset, numels)
  npu_fusion_attention_grad(query, key, value, dy, head_num, input_layout, *, pse=None, padding_mask=None,
      atten_mask=None, softmax_max=None, softmax_sum=None, softmax_in=None, attention_in=None, scale_value=1.,
      keep_prob=1., pre_tockens=2147483647, next_tockens=2147483647, inner_precise=0, seed=0, offset=0, numels=0,
      prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False)
      -> (dq, dk, dv, dpse)
  npu_fusion_attention_v2 / npu_fusion_attention_grad_v2: the same with keywords pre_tokens / next_tokens, pse_type,
      q_start_idx, kv_start_idx (MindSpeed's fusion attention v2 interface)
Like torch_npu's, these are plain operator calls without autograd (use gradkit.dropout / gradkit.mhc_pre /
gradkit.flash_attention for that). The compressor has no torch_npu
function (torch_npu.npu_compressor / torch.ops.custom.npu_compressor are a different inference operator with RMSNorm
and RoPE): upstream exposes it in its torch extension, whose names are gradkit.cann_ops_transformer."""
import torch

from . import ops

__all__ = ["_npu_dropout", "npu_mhc_pre", "npu_mhc_pre_backward", "npu_fusion_attention", "npu_fusion_attention_grad",
           "npu_fusion_attention_v2", "npu_fusion_attention_grad_v2"]


def _npu_dropout(self, p):
    """Dropout with a seed from torch's global generator: (output, packed UINT8 keep mask)."""
    return ops.native_dropout(self, p, True)


def npu_mhc_pre(x, phi, alpha, bias, *, gamma=None, norm_eps=1e-6, hc_eps=1e-6, out_flag=0, inner_precise=0):
    """aclnnMhcPre (inner_precise 0) or aclnnMhcPreV2 with HF32 matmul operands (inner_precise 1). out_flag 1
    also writes inv_rms, h_mix and h_pre (the backward's caches); with out_flag 0 they are returned as zeros of
    their shapes (torch_npu returns them unwritten)."""
    if out_flag not in (0, 1):
        raise ValueError(f"out_flag must be 0 or 1, but got {out_flag}.")
    if inner_precise not in (0, 1):
        raise ValueError(f"inner_precise must be 0 or 1, but got {inner_precise}.")
    mode = None if inner_precise == 0 else 1
    out = ops.mhc_pre(x, phi, alpha, bias, gamma, norm_eps=norm_eps, hc_eps=hc_eps, op_impl_mode=mode,
                      caches=bool(out_flag))
    if out_flag:
        return tuple(out)
    lead, n, rows = tuple(x.shape[:-2]), x.shape[-2], phi.shape[0]
    zeros = torch.zeros
    return (out.h_in, out.h_post, out.h_res, zeros(lead), zeros(lead + (rows,)), zeros(lead + (n,)))


def npu_mhc_pre_backward(x, phi, alpha, grad_h_in, grad_h_post, grad_h_res, inv_rms, h_mix, h_pre, h_post, *,
                         gamma=None, hc_eps=1e-6, grad_x_post=None):
    """aclnnMhcPreBackward: (grad_x, grad_phi, grad_alpha, grad_bias, grad_gamma). Without gamma, grad_gamma is a
    zero [N, D] tensor (torch_npu returns it unwritten)."""
    grad_gamma = None if gamma is not None else torch.zeros(tuple(x.shape[-2:]))
    grads = ops.mhc_pre_backward(x, phi, alpha, grad_h_in, grad_h_post, grad_h_res, inv_rms, h_mix, h_pre, h_post,
                                 gamma, grad_x_post=grad_x_post, hc_eps=hc_eps, grad_gamma=grad_gamma)
    return tuple(grads)


def _fa_numels(query, key, value, head_num, input_layout, actual_seq_qlen, actual_seq_kvlen):
    """The dropout elements of a call: B * N1 * S1 * S2, or N1 * sum(S1_b * S2_b) for TND."""
    return ops._fa_sizes(query, key, value, head_num, input_layout, actual_seq_qlen,
                         actual_seq_kvlen)["dropout_elements"]


def npu_fusion_attention(query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None,
                         scale=1., keep_prob=1., pre_tockens=2147483647, next_tockens=2147483647, inner_precise=0,
                         prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
                         gen_mask_parallel=True, sync=False, *, pse_type=1, q_start_idx=None, kv_start_idx=None):
    """The flash attention forward (gradkit.ops.flash_attention_score; no autograd, as torch_npu's). Returns
    (attention_out, softmax_max, softmax_sum, softmax_out, seed, offset, numels): softmax_out is an empty tensor (as
    torch_npu's), and with keep_prob < 1 seed (from torch's global generator), offset (0) and numels (the dropout
    elements) name the Philox keep mask that npu_fusion_attention_grad draws again (0, 0, 0 without dropout).
    padding_mask is not supported (upstream neither); gen_mask_parallel and sync do not apply on the CPU. The masks
    differ from an A2 NPU's (whose generator is not public): they are the Ascend950 in-kernel stream's."""
    if padding_mask is not None:
        raise ValueError("padding_mask is not supported (torch_npu neither)")
    dropout = float(keep_prob) < 1.0
    out = ops.flash_attention_score(query, key, value, head_num, input_layout, pse=pse, atten_mask=atten_mask,
                                    scale=scale, keep_prob=keep_prob, pre_tokens=pre_tockens,
                                    next_tokens=next_tockens, inner_precise=inner_precise, prefix=prefix,
                                    actual_seq_qlen=actual_seq_qlen, actual_seq_kvlen=actual_seq_kvlen,
                                    sparse_mode=sparse_mode, pse_type=pse_type, q_start_idx=q_start_idx,
                                    kv_start_idx=kv_start_idx)
    numels = _fa_numels(query, key, value, head_num, input_layout, actual_seq_qlen, actual_seq_kvlen) if dropout else 0
    softmax_out = torch.empty(0, dtype=query.dtype)
    if not dropout:
        return out.attention_out, out.softmax_max, out.softmax_sum, softmax_out, 0, 0, 0
    return out.attention_out, out.softmax_max, out.softmax_sum, softmax_out, out.seed, out.offset, numels


def npu_fusion_attention_grad(query, key, value, dy, head_num, input_layout, *, pse=None, padding_mask=None,
                              atten_mask=None, softmax_max=None, softmax_sum=None, softmax_in=None, attention_in=None,
                              scale_value=1., keep_prob=1., pre_tockens=2147483647, next_tockens=2147483647,
                              inner_precise=0, seed=0, offset=0, numels=0, prefix=None, actual_seq_qlen=None,
                              actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False,
                              d_scale_q=None, d_scale_k=None, d_scale_v=None, d_scale_dy=None, d_scale_o=None,
                              out_dtype=None, fp8_format=None, pse_type=1, q_start_idx=None, kv_start_idx=None):
    """The flash attention backward (gradkit.ops.flash_attention_score_grad) from npu_fusion_attention's
    softmax_max, softmax_sum, attention_out (attention_in) and, with keep_prob < 1, its seed and offset. Returns (dq,
    dk, dv, dpse); dpse is not computed (upstream neither): zeros of pse's shape, or an empty tensor without pse.
    softmax_in and numels are not read. FP8 (torch_npu's keywords d_scale_q / d_scale_k / d_scale_v / d_scale_dy /
    d_scale_o and out_dtype; fp8_format is gradkit's, for uint8 code tensors): see
    gradkit.ops.flash_attention_score_grad."""
    if padding_mask is not None:
        raise ValueError("padding_mask is not supported (torch_npu neither)")
    grads = ops.flash_attention_score_grad(query, key, value, dy, head_num, input_layout, softmax_max, softmax_sum,
                                           attention_in, pse=pse, atten_mask=atten_mask, scale=scale_value,
                                           keep_prob=keep_prob, pre_tokens=pre_tockens, next_tokens=next_tockens,
                                           inner_precise=inner_precise, prefix=prefix,
                                           actual_seq_qlen=actual_seq_qlen, actual_seq_kvlen=actual_seq_kvlen,
                                           sparse_mode=sparse_mode, seed=seed, offset=offset, d_scale_q=d_scale_q,
                                           d_scale_k=d_scale_k, d_scale_v=d_scale_v, d_scale_dy=d_scale_dy,
                                           d_scale_o=d_scale_o, out_dtype=out_dtype, fp8_format=fp8_format,
                                           pse_type=pse_type, q_start_idx=q_start_idx, kv_start_idx=kv_start_idx)
    dpse = torch.empty(0, dtype=grads.dq.dtype) if pse is None else torch.zeros_like(pse)
    return grads.dq, grads.dk, grads.dv, dpse


def npu_fusion_attention_v2(query, key, value, head_num, input_layout, *, pse=None, padding_mask=None, atten_mask=None,
                            scale=1., keep_prob=1., pre_tokens=2147483647, next_tokens=2147483647, inner_precise=0,
                            prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
                            gen_mask_parallel=True, sync=False, pse_type=1, q_start_idx=None, kv_start_idx=None):
    """npu_fusion_attention's v2 form (keywords pre_tokens / next_tokens, plus pse_type 0..3 and the q_start_idx /
    kv_start_idx of the generated ALiBi bias: aclnnFlashAttentionScoreV2 / VarLenScoreV2). Same returns."""
    return npu_fusion_attention(query, key, value, head_num, input_layout, pse, padding_mask, atten_mask, scale,
                                keep_prob, pre_tokens, next_tokens, inner_precise, prefix, actual_seq_qlen,
                                actual_seq_kvlen, sparse_mode, gen_mask_parallel, sync, pse_type=pse_type,
                                q_start_idx=q_start_idx, kv_start_idx=kv_start_idx)


def npu_fusion_attention_grad_v2(query, key, value, dy, head_num, input_layout, *, pse=None, padding_mask=None,
                                 atten_mask=None, softmax_max=None, softmax_sum=None, softmax_in=None,
                                 attention_in=None, scale_value=1., keep_prob=1., pre_tokens=2147483647,
                                 next_tokens=2147483647, inner_precise=0, seed=0, offset=0, numels=0, prefix=None,
                                 actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True,
                                 sync=False, pse_type=1, q_start_idx=None, kv_start_idx=None, **fp8):
    """npu_fusion_attention_grad's v2 form (pre_tokens / next_tokens, pse_type, q_start_idx, kv_start_idx; the FP8
    keywords of npu_fusion_attention_grad pass through). Returns (dq, dk, dv, dpse)."""
    return npu_fusion_attention_grad(query, key, value, dy, head_num, input_layout, pse=pse, padding_mask=padding_mask,
                                     atten_mask=atten_mask, softmax_max=softmax_max, softmax_sum=softmax_sum,
                                     softmax_in=softmax_in, attention_in=attention_in, scale_value=scale_value,
                                     keep_prob=keep_prob, pre_tockens=pre_tokens, next_tockens=next_tokens,
                                     inner_precise=inner_precise, seed=seed, offset=offset, numels=numels,
                                     prefix=prefix, actual_seq_qlen=actual_seq_qlen, actual_seq_kvlen=actual_seq_kvlen,
                                     sparse_mode=sparse_mode, gen_mask_parallel=gen_mask_parallel, sync=sync,
                                     pse_type=pse_type, q_start_idx=q_start_idx, kv_start_idx=kv_start_idx, **fp8)
