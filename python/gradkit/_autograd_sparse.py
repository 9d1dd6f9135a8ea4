"""Autograd of DeepSeek-V4's sparse attention (docs/sparse_attention.md, docs/python.md): gradkit.sparse_flash_mla
(aclnnSparseFlashMla forward, aclnnSparseFlashMlaGrad backward), gradkit.lightning_indexer (top-k selection, not
differentiable), gradkit.lightning_indexer_kl_loss (the indexer's KL loss; its gradients from
aclnnSparseLightningIndexerKLLossGrad) and gradkit.sparse_flash_mla_softmax_l1_norm (the loss's target, not
differentiable). gradkit.autograd is their public namespace. While torch.compile / torch.export trace
(library.use_custom_ops) they call the torch.ops.gradkit custom ops of gradkit._library_sparse instead."""
import math

import torch
from torch.autograd.function import once_differentiable

from . import _backward, library, ops
from ._ops_sparse import SMLA_HEAD_DIM

__all__ = ["sparse_flash_mla", "lightning_indexer", "lightning_indexer_kl_loss", "sparse_flash_mla_softmax_l1_norm"]

class SparseFlashMlaFunction(torch.autograd.Function):
    """aclnnSparseFlashMla forward (outputs out and the softmax lse, which is not differentiable) and
    aclnnSparseFlashMlaGrad backward from the forward's out and lse. Gradients for q, ori_kv, cmp_kv and sinks; the
    index lists and lengths get none (the selection is held fixed, as upstream)."""

    @staticmethod
    def forward(ctx, q, ori_kv, cmp_kv, sinks, cmp_sparse_indices, options):
        out, lse = ops.sparse_flash_mla(q, ori_kv, cmp_kv, sinks, cmp_sparse_indices=cmp_sparse_indices, **options)
        ctx.save_for_backward(q, ori_kv, cmp_kv, sinks, cmp_sparse_indices, out, lse)
        ctx.options = options
        ctx.mark_non_differentiable(lse)
        return out, lse

    @staticmethod
    @once_differentiable  # gradkit's backward operators have no backward: a second derivative raises
    def backward(ctx, d_out, _d_lse):
        q, ori_kv, cmp_kv, sinks, indices, out, lse = ctx.saved_tensors
        need = ctx.needs_input_grad
        options = {k: v for k, v in ctx.options.items() if k not in ("return_softmax_lse", "topk_value_mode")}
        grads = ops.sparse_flash_mla_grad(q, ori_kv, cmp_kv, d_out.contiguous(), out, lse, sinks,
                                          cmp_sparse_indices=indices, need_d_ori_kv=need[1], need_d_cmp_kv=need[2],
                                          need_d_sinks=need[3], **options)
        return (grads.dq if need[0] else None, grads.d_ori_kv if need[1] else None,
                grads.d_cmp_kv if need[2] else None, grads.d_sinks if need[3] else None, None, None)


def _scale(scale):
    """softmax_scale None: 1 / sqrt(512), as gradkit.ops."""
    return float(scale) if scale is not None else 1.0 / math.sqrt(SMLA_HEAD_DIM)


def _no_sinks(q):
    """-inf per head: attention without a sink (e^-inf = 0 in the denominator)."""
    return torch.full((q.shape[-2],), float("-inf"), dtype=torch.float32)


def sparse_flash_mla(q, ori_kv, cmp_kv=None, sinks=None, *, cmp_sparse_indices=None, cu_seqlens_q=None,
                     cu_seqlens_ori_kv=None, cu_seqlens_cmp_kv=None, cmp_residual_kv=None, cmp_ratio=1,
                     ori_mask_mode=4, cmp_mask_mode=3, ori_win_left=127, ori_win_right=0, scale=None,
                     return_lse=False):
    """DeepSeek-V4's sparse MLA attention with autograd (aclnnSparseFlashMla + aclnnSparseFlashMlaGrad): every query
    head attends, with a learned sink, over a window of the original KV and over compressed KV rows, K = V (one shared
    KV head, D = 512):

        out[n] = sum_j e^{s_j} kv_j / (e^{sinks[n]} + sum_j e^{s_j}),  s_j = scale * q[n] . kv_j

    q [B, S1, N1, 512] (BSND) or [T1, N1, 512] (TND with cu_seqlens_q [B + 1]), float16 / bfloat16; ori_kv
    [B, S2, 1, 512] / [T2, 1, 512] (cu_seqlens_ori_kv) in q's dtype, seen through ori_mask_mode (4: the band
    [thr - ori_win_left - 1, thr + ori_win_right) around each row's right-down causal diagonal thr = S2 - S1 + i + 1;
    3: causal; 0: all) ; cmp_kv [B, C, 1, 512] / [Tc, 1, 512] (cu_seqlens_cmp_kv; None: none) whose row c pools
    tokens [c * cmp_ratio, (c + 1) * cmp_ratio): with cmp_mask_mode 3 a row sees the compressed rows complete at its
    position (restored length C * cmp_ratio + cmp_residual_kv[b]; None: 0), all of them (HCA) or, with
    cmp_sparse_indices [B, S1, 1, K2] / [T1, 1, K2] INT32 (the lightning indexer's top-k; -1 ends a list), the listed
    ones (CSA). sinks float32 [N1] (None: no sink); scale None: 1 / sqrt(512). A row that sees no key gives 0.

    Returns out (q's shape and dtype), with return_lse also the float32 log-sum-exp [B, 1, S1, N1] / [1, T1, N1] (the
    sink included; not differentiable). Gradients flow to q, ori_kv, cmp_kv and sinks; the selection is constant.
    gradkit.reference.sparse_flash_mla is the formula."""
    if sinks is None:
        sinks = _no_sinks(q)
    options = dict(cu_seqlens_q=cu_seqlens_q, cu_seqlens_ori_kv=cu_seqlens_ori_kv, cu_seqlens_cmp_kv=cu_seqlens_cmp_kv,
                   cmp_residual_kv=cmp_residual_kv, softmax_scale=scale, cmp_ratio=int(cmp_ratio),
                   ori_mask_mode=int(ori_mask_mode), cmp_mask_mode=int(cmp_mask_mode), ori_win_left=int(ori_win_left),
                   ori_win_right=int(ori_win_right))
    tensors = (q, ori_kv, cmp_kv, sinks)
    if library.use_custom_ops():
        out, lse = torch.ops.gradkit.sparse_flash_mla(
            q, ori_kv, cmp_kv, sinks, cmp_sparse_indices, cu_seqlens_q, cu_seqlens_ori_kv, cu_seqlens_cmp_kv,
            cmp_residual_kv, _scale(scale), *(options[k] for k in ("cmp_ratio", "ori_mask_mode", "cmp_mask_mode",
                                                                    "ori_win_left", "ori_win_right")))
        return (out, lse) if return_lse else out
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors):
        out, lse = SparseFlashMlaFunction.apply(q, ori_kv, cmp_kv, sinks, cmp_sparse_indices, options)
    else:
        out, lse = ops.sparse_flash_mla(q, ori_kv, cmp_kv, sinks, cmp_sparse_indices=cmp_sparse_indices, **options)
    return (out, lse) if return_lse else out


def lightning_indexer(q, k, w, topk, *, cu_seqlens_q=None, cu_seqlens_k=None, cmp_residual_k=None, cmp_ratio=1,
                      mask_mode=3, return_values=False):
    """The lightning indexer (aclnnLightningIndexerV2): for every query row the `topk` compressed keys of largest
    score(s) = sum_h w[h] ReLU(q[h] . k[s]) among those it sees (mask_mode 3: the keys whose block of cmp_ratio tokens
    is complete at the row's position, restored length Sk * cmp_ratio + cmp_residual_k[b]; 0: all), sorted by score
    descending (ties: lower index), -1 after the visible ones. q [B, S1, N1, 128] / [T1, N1, 128] float16 / bfloat16,
    k [B, S2, 1, 128] / [T2, 1, 128] (the C4Li compressor's rows), w float32 [B, S1, N1] / [T1, N1]. Returns the INT32
    indices [B, S1, 1, topk] / [T1, 1, topk] (sparse_flash_mla's cmp_sparse_indices), with return_values also the
    float32 scores (-inf in unused slots). Not differentiable (the indexer learns through lightning_indexer_kl_loss)."""
    if library.use_custom_ops():
        indices, values = torch.ops.gradkit.lightning_indexer(q.detach(), k.detach(), w.detach(), int(topk),
                                                              cu_seqlens_q, cu_seqlens_k, cmp_residual_k,
                                                              int(cmp_ratio), int(mask_mode))
        return (indices, values) if return_values else indices
    result = ops.lightning_indexer_v2(q.detach(), k.detach(), w.detach(), topk, cu_seqlens_q=cu_seqlens_q,
                                      cu_seqlens_k=cu_seqlens_k, cmp_residual_k=cmp_residual_k, cmp_ratio=cmp_ratio,
                                      mask_mode=mask_mode, return_value=return_values)
    return tuple(result) if return_values else result.sparse_indices


def sparse_flash_mla_softmax_l1_norm(q, cmp_kv, lse, cmp_sparse_indices=None, *, cu_seqlens_q=None,
                                     cu_seqlens_cmp_kv=None, cmp_residual_kv=None, cmp_ratio=1, cmp_mask_mode=3,
                                     scale=None):
    """The attention's distribution over each row's compressed keys, averaged over the heads
    (aclnnSparseFlashMlaSoftmaxL1Norm): (sum_h exp(scale * q_h . k_j - lse_h)) / N1 per slot of cmp_sparse_indices
    (0 in slots a row does not read), from sparse_flash_mla's lse (return_lse=True; it holds the window and the sink).
    The KL loss's target: float32 [B, S1, 1, K2] / [T1, 1, K2], not differentiable (inputs are read detached)."""
    if library.use_custom_ops():
        max_seqlen_k = cmp_kv.shape[1] if cmp_kv.dim() == 4 else 0
        if cmp_sparse_indices is None and cmp_kv.dim() == 3:  # dense TND: the longest batch
            cu = cu_seqlens_cmp_kv.tolist() if cu_seqlens_cmp_kv is not None else [0, cmp_kv.shape[0]]
            max_seqlen_k = max([b - a for a, b in zip(cu[:-1], cu[1:])] + [0])
        return torch.ops.gradkit.sparse_flash_mla_softmax_l1_norm(
            q.detach(), cmp_kv.detach(), lse.detach(), cmp_sparse_indices, cu_seqlens_q, cu_seqlens_cmp_kv,
            cmp_residual_kv, _scale(scale), int(max_seqlen_k), int(cmp_ratio), int(cmp_mask_mode))
    return ops.sparse_flash_mla_softmax_l1_norm(q.detach(), cmp_kv.detach(), lse.detach(), cmp_sparse_indices,
                                                cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_cmp_kv,
                                                cmp_residual_k=cmp_residual_kv, softmax_scale=scale,
                                                cmp_ratio=cmp_ratio, mask_mode=cmp_mask_mode)


class IndexerKLLossFunction(torch.autograd.Function):
    """The indexer's KL loss: the forward runs aclnnSparseLightningIndexerKLLossGrad once (its softmax_out y gives the
    loss, its dq, dk, dw are kept), the backward scales those by the loss's gradient. Gradients for q, k and w."""

    @staticmethod
    def forward(ctx, q, k, w, sparse_indices, target, options):
        grads = ops.sparse_lightning_indexer_kl_loss_grad(q, k, w, sparse_indices, target, **options)
        ctx.save_for_backward(grads.dq, grads.dk, grads.dw)
        return _backward.indexer_kl_loss(target, grads.softmax_out)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        dq, dk, dw = ctx.saved_tensors
        if bool(grad == 1):
            return dq, dk, dw, None, None, None
        g = grad.float()
        return (dq.float() * g).to(dq.dtype), (dk.float() * g).to(dk.dtype), dw * g, None, None, None


def lightning_indexer_kl_loss(q, k, w, sparse_indices, target, *, cu_seqlens_q=None, cu_seqlens_k=None,
                              cmp_residual_k=None, cmp_ratio=1, mask_mode=3):
    """The lightning indexer's training loss (DeepSeek-V4): L = sum_rows sum_j p_j log(p_j / y_j) over the valid
    slots of sparse_indices, y = the softmax of the indexer's scores I_j = sum_h w[h] ReLU(q[h] . k[idx_j]) over the
    row's valid slots (j < min(K, visible), 0 <= idx_j < visible; -1 is skipped), p = target (the attention's
    distribution, sparse_flash_mla_softmax_l1_norm; a constant). A float32 scalar (a sum over rows: scale it as the
    training wants); gradients flow to q, k and w through aclnnSparseLightningIndexerKLLossGrad (dS rounded to q's
    dtype, as upstream). Arguments as lightning_indexer's; gradkit.reference.lightning_indexer_kl_loss is the
    formula."""
    options = dict(cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k, cmp_residual_k=cmp_residual_k,
                   cmp_ratio=int(cmp_ratio), mask_mode=int(mask_mode))
    if library.use_custom_ops():
        return torch.ops.gradkit.lightning_indexer_kl_loss(q, k, w, sparse_indices, target.detach().float(),
                                                           cu_seqlens_q, cu_seqlens_k, cmp_residual_k,
                                                           options["cmp_ratio"], options["mask_mode"])[0]
    return IndexerKLLossFunction.apply(q, k, w, sparse_indices, target.detach().float(), options)


sparse_flash_mla.Function = SparseFlashMlaFunction
sparse_flash_mla.forward_op, sparse_flash_mla.backward_op = ops.sparse_flash_mla, ops.sparse_flash_mla_grad
lightning_indexer_kl_loss.Function = IndexerKLLossFunction
lightning_indexer_kl_loss.forward_op = lightning_indexer_kl_loss.backward_op = ops.sparse_lightning_indexer_kl_loss_grad
