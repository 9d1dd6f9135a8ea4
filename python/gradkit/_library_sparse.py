"""DeepSeek-V4's sparse attention operators as PyTorch custom operators (torch.library, torch >= 2.4), under
torch.ops.gradkit.* (gradkit.library imports this module; docs/python.md "torch.compile and torch.export"):

  sparse_flash_mla(q, ori_kv, cmp_kv, sinks, cmp_sparse_indices, <lengths>, <attributes>) -> (out, lse)
      aclnnSparseFlashMla; backward: sparse_flash_mla_grad (aclnnSparseFlashMlaGrad) -> (dq, d_ori_kv, d_cmp_kv,
      d_sinks), a gradient not wanted (or of an absent cmp_kv) an empty tensor
  lightning_indexer(q, k, w, topk, <lengths>, cmp_ratio, mask_mode) -> (indices, values)
      aclnnLightningIndexerV2; not differentiable (callers pass detached inputs)
  lightning_indexer_kl_loss(q, k, w, sparse_indices, target, <lengths>, cmp_ratio, mask_mode) -> (loss, dq, dk, dw)
      aclnnSparseLightningIndexerKLLossGrad once: the loss from its softmax_out, the gradients (outputs, not
      differentiable) scaled by the loss's gradient in the registered backward
  sparse_flash_mla_softmax_l1_norm(q, cmp_kv, lse, sparse_indices, <lengths>, softmax_scale, max_seqlen_k,
                                   cmp_ratio, mask_mode) -> norm
      aclnnSparseFlashMlaSoftmaxL1Norm; not differentiable (the KL loss's target)

Every argument is explicit (the scale resolved by the caller, max_seqlen_k given for a dense TND call), so that the
fake kernels compute the outputs' shapes from the inputs' shapes alone. gradkit._autograd_sparse calls these while
torch.compile / torch.export trace (library.use_custom_ops) and its torch.autograd.Functions otherwise."""
from typing import Optional, Tuple

import torch

from . import _backward, ops

NAMESPACE = "gradkit"
Tensor = torch.Tensor


def _empty(like):
    """The placeholder of a gradient not computed: an empty float32 tensor."""
    return like.new_empty((0,), dtype=torch.float32)


@torch.library.custom_op(f"{NAMESPACE}::sparse_flash_mla", mutates_args=())
def sparse_flash_mla(q: Tensor, ori_kv: Tensor, cmp_kv: Optional[Tensor], sinks: Tensor,
                     cmp_sparse_indices: Optional[Tensor], cu_seqlens_q: Optional[Tensor],
                     cu_seqlens_ori_kv: Optional[Tensor], cu_seqlens_cmp_kv: Optional[Tensor],
                     cmp_residual_kv: Optional[Tensor], softmax_scale: float, cmp_ratio: int, ori_mask_mode: int,
                     cmp_mask_mode: int, ori_win_left: int, ori_win_right: int) -> Tuple[Tensor, Tensor]:
    """gradkit.ops.sparse_flash_mla as a custom op: (attn_out, softmax_lse)."""
    out, lse = ops.sparse_flash_mla(q, ori_kv, cmp_kv, sinks, cmp_sparse_indices=cmp_sparse_indices,
                                    cu_seqlens_q=cu_seqlens_q, cu_seqlens_ori_kv=cu_seqlens_ori_kv,
                                    cu_seqlens_cmp_kv=cu_seqlens_cmp_kv, cmp_residual_kv=cmp_residual_kv,
                                    softmax_scale=softmax_scale, cmp_ratio=cmp_ratio, ori_mask_mode=ori_mask_mode,
                                    cmp_mask_mode=cmp_mask_mode, ori_win_left=ori_win_left,
                                    ori_win_right=ori_win_right)
    return out, lse


@sparse_flash_mla.register_fake
def _(q, ori_kv, cmp_kv, sinks, cmp_sparse_indices, *rest):
    return q.new_empty(q.shape), q.new_empty(ops.smla_lse_shape(q), dtype=torch.float32)


@torch.library.custom_op(f"{NAMESPACE}::sparse_flash_mla_grad", mutates_args=())
def sparse_flash_mla_grad(q: Tensor, ori_kv: Tensor, cmp_kv: Optional[Tensor], d_out: Tensor, out: Tensor,
                          lse: Tensor, sinks: Tensor, cmp_sparse_indices: Optional[Tensor],
                          cu_seqlens_q: Optional[Tensor], cu_seqlens_ori_kv: Optional[Tensor],
                          cu_seqlens_cmp_kv: Optional[Tensor], cmp_residual_kv: Optional[Tensor],
                          softmax_scale: float, cmp_ratio: int, ori_mask_mode: int, cmp_mask_mode: int,
                          ori_win_left: int, ori_win_right: int, need_d_ori_kv: bool, need_d_cmp_kv: bool,
                          need_d_sinks: bool) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """gradkit.ops.sparse_flash_mla_grad as a custom op: (dq, d_ori_kv, d_cmp_kv, d_sinks), each gradient not
    wanted (or of an absent cmp_kv) an empty float32 tensor."""
    grads = ops.sparse_flash_mla_grad(q, ori_kv, cmp_kv, d_out.contiguous(), out, lse, sinks,
                                      cmp_sparse_indices=cmp_sparse_indices, cu_seqlens_q=cu_seqlens_q,
                                      cu_seqlens_ori_kv=cu_seqlens_ori_kv, cu_seqlens_cmp_kv=cu_seqlens_cmp_kv,
                                      cmp_residual_kv=cmp_residual_kv, softmax_scale=softmax_scale,
                                      cmp_ratio=cmp_ratio, ori_mask_mode=ori_mask_mode, cmp_mask_mode=cmp_mask_mode,
                                      ori_win_left=ori_win_left, ori_win_right=ori_win_right,
                                      need_d_ori_kv=need_d_ori_kv, need_d_cmp_kv=need_d_cmp_kv,
                                      need_d_sinks=need_d_sinks)
    return tuple(g if g is not None else _empty(q) for g in (grads.dq, grads.d_ori_kv, grads.d_cmp_kv, grads.d_sinks))


@sparse_flash_mla_grad.register_fake
def _(q, ori_kv, cmp_kv, d_out, out, lse, sinks, cmp_sparse_indices, cu_seqlens_q, cu_seqlens_ori_kv,
      cu_seqlens_cmp_kv, cmp_residual_kv, softmax_scale, cmp_ratio, ori_mask_mode, cmp_mask_mode, ori_win_left,
      ori_win_right, need_d_ori_kv, need_d_cmp_kv, need_d_sinks):
    d_ori_kv = q.new_empty(ori_kv.shape) if need_d_ori_kv else _empty(q)
    d_cmp_kv = q.new_empty(cmp_kv.shape) if need_d_cmp_kv and cmp_kv is not None else _empty(q)
    d_sinks = q.new_empty(sinks.shape, dtype=torch.float32) if need_d_sinks else _empty(q)
    return q.new_empty(q.shape), d_ori_kv, d_cmp_kv, d_sinks


_SMLA_TENSORS = ("q", "ori_kv", "cmp_kv", "sinks", "cmp_sparse_indices", "cu_seqlens_q", "cu_seqlens_ori_kv",
                 "cu_seqlens_cmp_kv", "cmp_residual_kv")
_SMLA_ATTRIBUTES = ("softmax_scale", "cmp_ratio", "ori_mask_mode", "cmp_mask_mode", "ori_win_left", "ori_win_right")


def _smla_setup_context(ctx, inputs, output):
    ctx.save_for_backward(*inputs[:len(_SMLA_TENSORS)], *output)
    ctx.attributes = inputs[len(_SMLA_TENSORS):]
    ctx.mark_non_differentiable(output[1])


def _smla_backward(ctx, d_out, _d_lse):
    q, ori_kv, cmp_kv, sinks, indices, *lengths, out, lse = ctx.saved_tensors
    need = ctx.needs_input_grad
    dq, d_ori_kv, d_cmp_kv, d_sinks = sparse_flash_mla_grad(q, ori_kv, cmp_kv, d_out, out, lse, sinks, indices,
                                                            *lengths, *ctx.attributes, need[1],
                                                            need[2] and cmp_kv is not None, need[3])
    grads = (dq if need[0] else None, d_ori_kv if need[1] else None,
             d_cmp_kv if need[2] and cmp_kv is not None else None, d_sinks if need[3] else None)
    return grads + (None,) * (len(_SMLA_TENSORS) - 4 + len(_SMLA_ATTRIBUTES))


sparse_flash_mla.register_autograd(_smla_backward, setup_context=_smla_setup_context)


@torch.library.custom_op(f"{NAMESPACE}::lightning_indexer", mutates_args=())
def lightning_indexer(q: Tensor, k: Tensor, w: Tensor, topk: int, cu_seqlens_q: Optional[Tensor],
                      cu_seqlens_k: Optional[Tensor], cmp_residual_k: Optional[Tensor], cmp_ratio: int,
                      mask_mode: int) -> Tuple[Tensor, Tensor]:
    """gradkit.ops.lightning_indexer_v2 with return_value: (sparse_indices INT32, sparse_values float32)."""
    result = ops.lightning_indexer_v2(q, k, w, topk, cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k,
                                      cmp_residual_k=cmp_residual_k, cmp_ratio=cmp_ratio, mask_mode=mask_mode,
                                      return_value=True)
    return result.sparse_indices, result.sparse_values


@lightning_indexer.register_fake
def _(q, k, w, topk, *rest):
    shape = ops.indexer_output_shape(q, topk)
    return q.new_empty(shape, dtype=torch.int32), q.new_empty(shape, dtype=torch.float32)


@torch.library.custom_op(f"{NAMESPACE}::lightning_indexer_kl_loss", mutates_args=())
def lightning_indexer_kl_loss(q: Tensor, k: Tensor, w: Tensor, sparse_indices: Tensor, target: Tensor,
                              cu_seqlens_q: Optional[Tensor], cu_seqlens_k: Optional[Tensor],
                              cmp_residual_k: Optional[Tensor], cmp_ratio: int,
                              mask_mode: int) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """The indexer's KL loss through gradkit.ops.sparse_lightning_indexer_kl_loss_grad: (loss (float32 scalar), dq,
    dk, dw); the gradients are outputs (not differentiable) the registered backward scales."""
    grads = ops.sparse_lightning_indexer_kl_loss_grad(q, k, w, sparse_indices, target, cu_seqlens_q=cu_seqlens_q,
                                                      cu_seqlens_k=cu_seqlens_k, cmp_residual_k=cmp_residual_k,
                                                      cmp_ratio=cmp_ratio, mask_mode=mask_mode)
    return _backward.indexer_kl_loss(target, grads.softmax_out), grads.dq, grads.dk, grads.dw


@lightning_indexer_kl_loss.register_fake
def _(q, k, w, *rest):
    return (q.new_empty((), dtype=torch.float32), q.new_empty(q.shape), q.new_empty(k.shape),
            w.new_empty(w.shape, dtype=torch.float32))


def _kl_setup_context(ctx, inputs, output):
    ctx.save_for_backward(*output[1:])
    ctx.mark_non_differentiable(*output[1:])


def _kl_backward(ctx, grad, *_grads):
    dq, dk, dw = ctx.saved_tensors
    g = grad.float()  # x * 1 is exact: a unit gradient returns the operator's bits
    return (dq.float() * g).to(dq.dtype), (dk.float() * g).to(dk.dtype), dw * g, None, None, None, None, None, None, None


lightning_indexer_kl_loss.register_autograd(_kl_backward, setup_context=_kl_setup_context)


@torch.library.custom_op(f"{NAMESPACE}::sparse_flash_mla_softmax_l1_norm", mutates_args=())
def sparse_flash_mla_softmax_l1_norm(q: Tensor, cmp_kv: Tensor, lse: Tensor, sparse_indices: Optional[Tensor],
                                     cu_seqlens_q: Optional[Tensor], cu_seqlens_cmp_kv: Optional[Tensor],
                                     cmp_residual_kv: Optional[Tensor], softmax_scale: float, max_seqlen_k: int,
                                     cmp_ratio: int, mask_mode: int) -> Tensor:
    """gradkit.ops.sparse_flash_mla_softmax_l1_norm as a custom op: float32 [.., 1, K] (K: the index lists' width,
    else max_seqlen_k)."""
    return ops.sparse_flash_mla_softmax_l1_norm(q, cmp_kv, lse, sparse_indices, cu_seqlens_q=cu_seqlens_q,
                                                cu_seqlens_k=cu_seqlens_cmp_kv, cmp_residual_k=cmp_residual_kv,
                                                softmax_scale=softmax_scale, max_seqlen_k=max_seqlen_k,
                                                cmp_ratio=cmp_ratio, mask_mode=mask_mode)


@sparse_flash_mla_softmax_l1_norm.register_fake
def _(q, cmp_kv, lse, sparse_indices, cu_seqlens_q, cu_seqlens_cmp_kv, cmp_residual_kv, softmax_scale, max_seqlen_k,
      cmp_ratio, mask_mode):
    width = sparse_indices.shape[-1] if sparse_indices is not None else max_seqlen_k
    return q.new_empty(ops.softmax_l1_norm_shape(q, width), dtype=torch.float32)
