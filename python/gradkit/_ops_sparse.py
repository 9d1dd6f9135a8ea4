"""The DeepSeek-V4 sparse attention operators (docs/sparse_attention.md), raw: aclnnSparseFlashMla and its gradient,
aclnnLightningIndexerV2, aclnnSparseLightningIndexerKLLossGrad, aclnnSparseFlashMlaSoftmaxL1Norm and the metadata
operators. gradkit.ops is their public namespace. No autograd (gradkit.sparse_flash_mla, gradkit.lightning_indexer,
gradkit.lightning_indexer_kl_loss have it).

Conventions of every function here: layout_q None means "TND" for a 3-d q and "BSND" for a 4-d one, layout_kv /
layout_k None means layout_q; int tensors are INT32; a `metadata` None gives the operator a zero tensor of the shape
it takes (gradkit's operators check the metadata's dtype and shape and never read it: the CPU plans its own split;
the *_metadata functions compute upstream's image when wanted); cmp_residual_kv / cmp_residual_k None with a mask
mode that needs one (cmp_ratio != 1, mask mode 3) gives zeros (restored length = C * cmp_ratio)."""
import math
from collections import namedtuple

from . import _C
from ._arrays import arg, empty, empty_like_dtype, result, shape_of, zeros

SMLA_HEAD_DIM = 512  # aclnnSparseFlashMla's D (448 nope + 64 rope)
INDEXER_HEAD_DIM = 128  # the lightning indexer's D
SMLA_METADATA_WORDS = 1024
KL_METADATA_WORDS = 64

SparseFlashMlaResult = namedtuple("SparseFlashMlaResult", "attn_out softmax_lse")
SparseFlashMlaGrads = namedtuple("SparseFlashMlaGrads",
                                 "dq d_ori_kv d_cmp_kv d_sinks ori_softmax_l1_norm cmp_softmax_l1_norm")
LightningIndexerResult = namedtuple("LightningIndexerResult", "sparse_indices sparse_values")
IndexerKLLossGrads = namedtuple("IndexerKLLossGrads", "dq dk dw softmax_out")


def _layout(q, layout):
    return layout if layout is not None else ("TND" if len(shape_of(q)) == 3 else "BSND")


def _batch(q, layout_q, cu_seqlens_q):
    """B of a call: q's dim 0 (BSND), len(cu_seqlens_q) - 1 (TND)."""
    if layout_q == "TND":
        return shape_of(cu_seqlens_q)[0] - 1 if cu_seqlens_q is not None else 1
    return shape_of(q)[0]


def _residual(q, layout_q, cu_seqlens_q, cmp_ratio, mask_mode, given):
    """The given residual, or zeros [B] where the operator needs one (cmp_ratio != 1 with mask mode 3)."""
    if given is not None or int(cmp_ratio) == 1 or int(mask_mode) != 3:
        return given
    return zeros(q, (_batch(q, layout_q, cu_seqlens_q),), "int32")


def _modes(cmp_kv, cmp_mask_mode, ori_mask_mode, ori_win_left, ori_win_right):
    """(cmp_mask_mode, ori_win_left, ori_win_right) as the operator requires them: cmp mask mode 0 without cmp_kv,
    windows -1 unless the ori mask is the band (4)."""
    if cmp_kv is None:
        cmp_mask_mode = 0
    if int(ori_mask_mode) != 4:
        ori_win_left = ori_win_right = -1
    return cmp_mask_mode, ori_win_left, ori_win_right


def _metadata(q, metadata, words):
    return metadata if metadata is not None else zeros(q, (words,), "int32")


def smla_lse_shape(q, layout_q=None):
    """softmax_lse's shape: [B, 1, S1, N1] (BSND) or [1, T1, N1] (TND)."""
    shape = shape_of(q)
    if _layout(q, layout_q) == "TND":
        return (1, shape[0], shape[1])
    return (shape[0], 1, shape[1], shape[2])


def sparse_flash_mla(q, ori_kv, cmp_kv, sinks, *, ori_sparse_indices=None, cmp_sparse_indices=None,
                     ori_block_table=None, cmp_block_table=None, cu_seqlens_q=None, cu_seqlens_ori_kv=None,
                     cu_seqlens_cmp_kv=None, seqused_q=None, seqused_ori_kv=None, seqused_cmp_kv=None,
                     cmp_residual_kv=None, ori_topk_length=None, cmp_topk_length=None, metadata=None,
                     softmax_scale=None, cmp_ratio=1, ori_mask_mode=4, cmp_mask_mode=3, ori_win_left=127,
                     ori_win_right=0, layout_q=None, layout_kv=None, topk_value_mode=1, return_softmax_lse=True,
                     attn_out=None, softmax_lse=None):
    """aclnnSparseFlashMla (include/aclnnop/aclnn_sparse_flash_mla.h): per query row and head, attention with a sink
    over the ori rows it sees (ori_mask_mode 0 all, 3 causal, 4 the band of ori_win_left / ori_win_right around the
    right-down diagonal; or ori_sparse_indices) and the compressed rows (cmp_kv: all visible ones, HCA, or those
    cmp_sparse_indices lists, CSA; cmp_mask_mode 3 hides the rows whose block ends after the query's position):
    out = sum_j e^{s_j} k_j / (e^{sinks[n]} + sum_j e^{s_j}), s_j = softmax_scale * q . k_j (K = V),
    lse = ln(e^{sinks[n]} + sum_j e^{s_j}).

    q [B, S1, N1, 512] (BSND) or [T1, N1, 512] (TND, cu_seqlens_q [B + 1]), float16 / bfloat16; ori_kv / cmp_kv
    [B, S, 1, 512], [T, 1, 512] (cu_seqlens_*_kv) or PA_BBND [blocks, block_size, 1, 512] with *_block_table and
    seqused_*_kv, q's dtype (cmp_kv None: no compressed part); sinks float32 [N1]; cmp_sparse_indices
    [B, S1, 1, K2] / [T1, 1, K2] INT32 (-1 ends a row's list). softmax_scale None: 1 / sqrt(512). Returns
    SparseFlashMlaResult(attn_out (q's shape and dtype), softmax_lse (float32 smla_lse_shape(q); None without
    return_softmax_lse)). As the operator requires: without cmp_kv the cmp mask mode is 0, and the windows are -1
    unless ori_mask_mode is 4. docs/sparse_attention.md has every rule."""
    layout_q = _layout(q, layout_q)
    if layout_kv is None:
        layout_kv = "PA_BBND" if ori_block_table is not None or cmp_block_table is not None else layout_q
    if softmax_scale is None:
        softmax_scale = 1.0 / math.sqrt(SMLA_HEAD_DIM)
    cmp_mask_mode, ori_win_left, ori_win_right = _modes(cmp_kv, cmp_mask_mode, ori_mask_mode, ori_win_left,
                                                        ori_win_right)
    cmp_residual_kv = _residual(q, layout_q, cu_seqlens_q, cmp_ratio, cmp_mask_mode,
                                cmp_residual_kv) if cmp_kv is not None else cmp_residual_kv
    if attn_out is None:
        attn_out = empty_like_dtype(q, shape_of(q))
    if return_softmax_lse and softmax_lse is None:
        softmax_lse = empty(q, smla_lse_shape(q, layout_q), "float32")
    _C.sparse_flash_mla(arg(q), arg(ori_kv), arg(cmp_kv), arg(ori_sparse_indices), arg(cmp_sparse_indices),
                        arg(ori_block_table), arg(cmp_block_table), arg(cu_seqlens_q), arg(cu_seqlens_ori_kv),
                        arg(cu_seqlens_cmp_kv), arg(seqused_q), arg(seqused_ori_kv), arg(seqused_cmp_kv),
                        arg(cmp_residual_kv), arg(ori_topk_length), arg(cmp_topk_length), arg(sinks),
                        arg(_metadata(q, metadata, SMLA_METADATA_WORDS)), float(softmax_scale), int(cmp_ratio),
                        int(ori_mask_mode), int(cmp_mask_mode), int(ori_win_left), int(ori_win_right), layout_q,
                        layout_kv, int(topk_value_mode), bool(return_softmax_lse), arg(attn_out),
                        arg(softmax_lse) if return_softmax_lse else None)
    return SparseFlashMlaResult(result(attn_out), softmax_lse if return_softmax_lse else None)


def sparse_flash_mla_grad(q, ori_kv, cmp_kv, d_out, out, softmax_lse, sinks, *, ori_sparse_indices=None,
                          cmp_sparse_indices=None, cu_seqlens_q=None, cu_seqlens_ori_kv=None, cu_seqlens_cmp_kv=None,
                          seqused_q=None, seqused_ori_kv=None, seqused_cmp_kv=None, cmp_residual_kv=None,
                          ori_topk_length=None, cmp_topk_length=None, metadata=None, softmax_scale=None, cmp_ratio=1,
                          ori_mask_mode=4, cmp_mask_mode=3, ori_win_left=127, ori_win_right=0, layout_q=None,
                          layout_kv=None, need_d_ori_kv=True, need_d_cmp_kv=True, need_d_sinks=True,
                          ori_softmax_l1_norm=None, cmp_softmax_l1_norm=None, dq=None, d_ori_kv=None, d_cmp_kv=None,
                          d_sinks=None):
    """aclnnSparseFlashMlaGrad (include/aclnnop/aclnn_sparse_flash_mla_grad.h): the gradients of sparse_flash_mla's
    out for d_out (q's shape and dtype), from the forward's out and softmax_lse and its arguments (BSND / TND, no paged
    KV): dq, d_ori_kv, d_cmp_kv (K = V: a key row's gradient through both products, repeated keys add) in q's dtype
    and d_sinks (float32 [N1]); the need_* flags leave a gradient out (None). ori_softmax_l1_norm /
    cmp_softmax_l1_norm: float32 outputs (index lists' shapes) of the listed keys' head-averaged softmax, allocated
    when a list is given and none is (the operator requires them then).
    Returns SparseFlashMlaGrads(dq, d_ori_kv, d_cmp_kv, d_sinks, ori_softmax_l1_norm, cmp_softmax_l1_norm)."""
    layout_q = _layout(q, layout_q)
    layout_kv = layout_kv if layout_kv is not None else layout_q
    if softmax_scale is None:
        softmax_scale = 1.0 / math.sqrt(SMLA_HEAD_DIM)
    cmp_mask_mode, ori_win_left, ori_win_right = _modes(cmp_kv, cmp_mask_mode, ori_mask_mode, ori_win_left,
                                                        ori_win_right)
    if cmp_kv is not None:
        cmp_residual_kv = _residual(q, layout_q, cu_seqlens_q, cmp_ratio, cmp_mask_mode, cmp_residual_kv)
    if dq is None:
        dq = empty_like_dtype(q, shape_of(q))
    if need_d_ori_kv and ori_kv is not None and d_ori_kv is None:
        d_ori_kv = empty_like_dtype(q, shape_of(ori_kv))
    if need_d_cmp_kv and cmp_kv is not None and d_cmp_kv is None:
        d_cmp_kv = empty_like_dtype(q, shape_of(cmp_kv))
    if need_d_sinks and d_sinks is None:
        d_sinks = empty(q, shape_of(sinks), "float32")
    # The operator writes the listed keys' L1 norms whenever there is a list (as upstream): outputs it requires.
    if ori_sparse_indices is not None and ori_softmax_l1_norm is None:
        ori_softmax_l1_norm = empty(q, shape_of(ori_sparse_indices), "float32")
    if cmp_sparse_indices is not None and cmp_softmax_l1_norm is None:
        cmp_softmax_l1_norm = empty(q, shape_of(cmp_sparse_indices), "float32")
    _C.sparse_flash_mla_grad(arg(q), arg(d_out), arg(out), arg(softmax_lse), arg(ori_kv), arg(cmp_kv),
                             arg(ori_sparse_indices), arg(cmp_sparse_indices), arg(cu_seqlens_q),
                             arg(cu_seqlens_ori_kv), arg(cu_seqlens_cmp_kv), arg(seqused_q), arg(seqused_ori_kv),
                             arg(seqused_cmp_kv), arg(cmp_residual_kv), arg(ori_topk_length), arg(cmp_topk_length),
                             arg(sinks), arg(_metadata(q, metadata, SMLA_METADATA_WORDS)), float(softmax_scale),
                             int(cmp_ratio), int(ori_mask_mode), int(cmp_mask_mode), int(ori_win_left),
                             int(ori_win_right), layout_q, layout_kv, arg(dq), arg(d_ori_kv), arg(d_cmp_kv),
                             arg(d_sinks), arg(ori_softmax_l1_norm), arg(cmp_softmax_l1_norm))
    return SparseFlashMlaGrads(result(dq), None if d_ori_kv is None else result(d_ori_kv),
                               None if d_cmp_kv is None else result(d_cmp_kv), d_sinks, ori_softmax_l1_norm,
                               cmp_softmax_l1_norm)


def softmax_l1_norm_shape(q, topk_or_keys, layout_q=None):
    """sparse_flash_mla_softmax_l1_norm's output: [B, S1, 1, K] / [T1, 1, K] (K: the top-k width, or the keys when
    dense)."""
    return indexer_output_shape(q, topk_or_keys, layout_q)


def sparse_flash_mla_softmax_l1_norm(q, cmp_kv, softmax_lse, sparse_indices=None, *, cu_seqlens_q=None,
                                     cu_seqlens_k=None, seqused_q=None, seqused_k=None, cmp_residual_k=None,
                                     topk_length=None, metadata=None, softmax_scale=None, max_seqlen_k=None,
                                     cmp_ratio=1, mask_mode=3, layout_q=None, layout_k=None, out=None):
    """aclnnSparseFlashMlaSoftmaxL1Norm: the head-averaged attention probability of each compressed key a row reads,
    (sum_h exp(softmax_scale * q_h . k_j - softmax_lse[row, h])) / N1, from the forward's softmax_lse (which holds
    the ori part and the sink): per slot of sparse_indices (CSA), or per key row (dense), 0 elsewhere. The target of
    the lightning indexer's KL loss. Returns float32 softmax_l1_norm_shape(q, K) (Ascend950 profile only)."""
    layout_q = _layout(q, layout_q)
    layout_k = layout_k if layout_k is not None else layout_q
    if softmax_scale is None:
        softmax_scale = 1.0 / math.sqrt(SMLA_HEAD_DIM)
    if max_seqlen_k is None:
        max_seqlen_k = shape_of(cmp_kv)[1] if layout_k == "BSND" else 0
        if layout_k == "TND":
            cu = cu_seqlens_k.tolist() if cu_seqlens_k is not None else [0, shape_of(cmp_kv)[0]]
            max_seqlen_k = max([b - a for a, b in zip(cu[:-1], cu[1:])] + [0])
    cmp_residual_k = _residual(q, layout_q, cu_seqlens_q, cmp_ratio, mask_mode, cmp_residual_k)
    width = shape_of(sparse_indices)[-1] if sparse_indices is not None else int(max_seqlen_k)
    if out is None:
        out = empty(q, softmax_l1_norm_shape(q, width, layout_q), "float32")
    _C.sparse_flash_mla_softmax_l1_norm(arg(q), arg(cmp_kv), arg(softmax_lse), arg(sparse_indices), arg(cu_seqlens_q),
                                        arg(cu_seqlens_k), arg(seqused_q), arg(seqused_k), arg(cmp_residual_k),
                                        arg(topk_length), arg(_metadata(q, metadata, KL_METADATA_WORDS)),
                                        float(softmax_scale), int(max_seqlen_k), int(cmp_ratio), int(mask_mode),
                                        layout_q, layout_k, arg(out))
    return out


def _smla_metadata(function, num_heads_q, batch_size, max_seqlen_q, max_seqlen_ori_kv, max_seqlen_cmp_kv, ori_topk,
                   cmp_topk, cmp_ratio, ori_mask_mode, cmp_mask_mode, ori_win_left, ori_win_right, layout_q,
                   layout_kv, has_ori_kv, has_cmp_kv, lengths, metadata, ref):
    if metadata is None:
        metadata = zeros(ref, (SMLA_METADATA_WORDS,), "int32")
    function(*[arg(lengths.get(name)) for name in _SMLA_LENGTHS], int(num_heads_q), 1, SMLA_HEAD_DIM,
             int(batch_size), int(max_seqlen_q), int(max_seqlen_ori_kv), int(max_seqlen_cmp_kv), int(ori_topk),
             int(cmp_topk), int(cmp_ratio), int(ori_mask_mode), int(cmp_mask_mode), int(ori_win_left),
             int(ori_win_right), layout_q, layout_kv, bool(has_ori_kv), bool(has_cmp_kv), arg(metadata))
    return metadata


_SMLA_LENGTHS = ("cu_seqlens_q", "cu_seqlens_ori_kv", "cu_seqlens_cmp_kv", "seqused_q", "seqused_ori_kv",
                 "seqused_cmp_kv", "cmp_residual_kv", "ori_topk_length", "cmp_topk_length")


def sparse_flash_mla_metadata(num_heads_q, *, batch_size=0, max_seqlen_q=0, max_seqlen_ori_kv=0, max_seqlen_cmp_kv=0,
                              ori_topk=0, cmp_topk=0, cmp_ratio=1, ori_mask_mode=4, cmp_mask_mode=3,
                              ori_win_left=127, ori_win_right=0, layout_q="BSND", layout_kv="BSND", has_ori_kv=True,
                              has_cmp_kv=True, metadata=None, like=None, **lengths):
    """aclnnSparseFlashMlaMetadata: upstream's core split of an aclnnSparseFlashMla call (INT32 [1024]; informative,
    docs/sparse_attention.md "Metadata operators"). lengths: the INT32 tensors cu_seqlens_q, cu_seqlens_ori_kv,
    cu_seqlens_cmp_kv, seqused_q, seqused_ori_kv, seqused_cmp_kv, cmp_residual_kv, ori_topk_length, cmp_topk_length
    (absent: None). The result is a torch tensor unless `like` (or a length tensor) is a numpy array."""
    return _smla_metadata(_C.sparse_flash_mla_metadata, num_heads_q, batch_size, max_seqlen_q, max_seqlen_ori_kv,
                          max_seqlen_cmp_kv, ori_topk, cmp_topk, cmp_ratio, ori_mask_mode, cmp_mask_mode,
                          ori_win_left, ori_win_right, layout_q, layout_kv, has_ori_kv, has_cmp_kv, lengths, metadata,
                          _ref(like, lengths))


def sparse_flash_mla_grad_metadata(num_heads_q, *, batch_size=0, max_seqlen_q=0, max_seqlen_ori_kv=0,
                                   max_seqlen_cmp_kv=0, ori_topk=0, cmp_topk=0, cmp_ratio=1, ori_mask_mode=4,
                                   cmp_mask_mode=3, ori_win_left=127, ori_win_right=0, layout_q="BSND",
                                   layout_kv="BSND", has_ori_kv=True, has_cmp_kv=True, metadata=None, like=None,
                                   **lengths):
    """aclnnSparseFlashMlaGradMetadata (words 0..6 of INT32 [1024]; Ascend950 only): arguments as
    sparse_flash_mla_metadata's."""
    return _smla_metadata(_C.sparse_flash_mla_grad_metadata, num_heads_q, batch_size, max_seqlen_q,
                          max_seqlen_ori_kv, max_seqlen_cmp_kv, ori_topk, cmp_topk, cmp_ratio, ori_mask_mode,
                          cmp_mask_mode, ori_win_left, ori_win_right, layout_q, layout_kv, has_ori_kv, has_cmp_kv,
                          lengths, metadata, _ref(like, lengths))


def _ref(like, lengths):
    """The array whose library an allocated output takes: like, else the first length tensor, else torch."""
    if like is not None:
        return like
    for value in lengths.values():
        if value is not None:
            return value
    import torch

    return torch.empty(0)


def sparse_flash_mla_softmax_l1_norm_metadata(num_heads_q, topk, *, batch_size=0, max_seqlen_q=0, max_seqlen_k=0,
                                              cmp_ratio=1, mask_mode=3, layout_q="BSND", layout_k="BSND",
                                              cu_seqlens_q=None, cu_seqlens_k=None, seqused_q=None, seqused_k=None,
                                              cmp_residual_k=None, topk_length=None, metadata=None, like=None):
    """aclnnSparseFlashMlaSoftmaxL1NormMetadata (INT32 [64], Ascend950 only; informative)."""
    tensors = (cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, cmp_residual_k, topk_length)
    if metadata is None:
        metadata = zeros(_ref(like, dict(enumerate(tensors))), (KL_METADATA_WORDS,), "int32")
    _C.sparse_flash_mla_softmax_l1_norm_metadata(*[arg(t) for t in tensors], int(batch_size), int(max_seqlen_q),
                                                 int(max_seqlen_k), int(num_heads_q), 1, SMLA_HEAD_DIM, int(topk),
                                                 int(cmp_ratio), int(mask_mode), layout_q, layout_k, arg(metadata))
    return metadata


def indexer_output_shape(q, topk, layout_q=None):
    """sparse_indices / sparse_values: [B, S1, 1, topk] (BSND) or [T1, 1, topk] (TND)."""
    shape = shape_of(q)
    if _layout(q, layout_q) == "TND":
        return (shape[0], 1, int(topk))
    return (shape[0], shape[1], 1, int(topk))


def lightning_indexer_v2(q, k, w, topk, *, cu_seqlens_q=None, cu_seqlens_k=None, seqused_q=None, seqused_k=None,
                         cmp_residual_k=None, block_table=None, output_idx_offset=None, metadata=None, max_seqlen_q=-1,
                         layout_q=None, layout_k=None, mask_mode=3, cmp_ratio=1, return_value=False,
                         sparse_indices=None, sparse_values=None):
    """aclnnLightningIndexerV2 (docs/lightning_indexer_v2.md): for each query row the min(topk, visible) compressed
    keys of largest score(i, s) = sum_h w[i, h] ReLU(q[i, h] . k[s]), sorted by score descending (ties: lower index),
    -1 in the slots after them. q [B, S1, N1, 128] / [T1, N1, 128] float16 / bfloat16, k [B, S2, 1, 128] / [T2, 1,
    128] (cu_seqlens_k) / PA_BBND, w float32 [B, S1, N1] / [T1, N1]; mask_mode 3 sees the keys whose block of
    cmp_ratio tokens ends at or before the row's position. Returns LightningIndexerResult(sparse_indices INT32
    indexer_output_shape, sparse_values (float32, the scores, -inf in unused slots) or None without return_value)."""
    layout_q = _layout(q, layout_q)
    if layout_k is None:
        layout_k = "PA_BBND" if block_table is not None else layout_q
    cmp_residual_k = _residual(q, layout_q, cu_seqlens_q, cmp_ratio, mask_mode, cmp_residual_k)
    shape = indexer_output_shape(q, topk, layout_q)
    if sparse_indices is None:
        sparse_indices = empty(q, shape, "int32")
    values = sparse_values
    if values is None:
        values = empty(q, shape if return_value else (1,), "float32")
    _C.lightning_indexer_v2(arg(q), arg(k), arg(w), arg(cu_seqlens_q), arg(cu_seqlens_k), arg(seqused_q),
                            arg(seqused_k), arg(cmp_residual_k), arg(block_table), arg(output_idx_offset),
                            arg(_metadata(q, metadata, SMLA_METADATA_WORDS)), int(topk), int(max_seqlen_q), layout_q,
                            layout_k, int(mask_mode), int(cmp_ratio), int(bool(return_value)), arg(sparse_indices),
                            arg(values))
    return LightningIndexerResult(sparse_indices, values if return_value else None)


def lightning_indexer_v2_metadata(num_heads_q, topk, *, batch_size=0, max_seqlen_q=0, max_seqlen_k=0,
                                  layout_q="BSND", layout_k="BSND", mask_mode=3, cmp_ratio=1, cu_seqlens_q=None,
                                  cu_seqlens_k=None, seqused_q=None, seqused_k=None, cmp_residual_k=None,
                                  metadata=None, like=None):
    """aclnnLightningIndexerV2Metadata (INT32 [1024]; informative)."""
    tensors = (cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, cmp_residual_k)
    if metadata is None:
        metadata = zeros(_ref(like, dict(enumerate(tensors))), (SMLA_METADATA_WORDS,), "int32")
    _C.lightning_indexer_v2_metadata(*[arg(t) for t in tensors], int(num_heads_q), 1, INDEXER_HEAD_DIM, int(topk),
                                     int(batch_size), int(max_seqlen_q), int(max_seqlen_k), layout_q, layout_k,
                                     int(mask_mode), int(cmp_ratio), arg(metadata))
    return metadata


def sparse_lightning_indexer_kl_loss_grad(q, k, w, sparse_indices, attn_softmax_l1_norm, *, cu_seqlens_q=None,
                                          cu_seqlens_k=None, seqused_q=None, seqused_k=None, cmp_residual_k=None,
                                          metadata=None, layout_q=None, layout_k=None, mask_mode=3, cmp_ratio=1,
                                          dq=None, dk=None, dw=None, softmax_out=None):
    """aclnnSparseLightningIndexerKLLossGrad (docs/sparse_lightning_indexer_kl_loss_grad.md): the gradients of the
    indexer's loss L = sum_t sum_j p[t,j] log(p[t,j] / y[t,j]) over the valid slots, y = softmax over the selected
    keys of I[j] = sum_h w[t,h] ReLU(q[t,h] . k[idx_j]), p = attn_softmax_l1_norm (the target). q, k, w and
    sparse_indices as lightning_indexer_v2 takes and returns them; attn_softmax_l1_norm float32 of sparse_indices'
    shape. Returns IndexerKLLossGrads(dq, dk (q's dtype), dw (float32), softmax_out (float32: y, 0 in invalid
    slots))."""
    layout_q = _layout(q, layout_q)
    layout_k = layout_k if layout_k is not None else layout_q
    cmp_residual_k = _residual(q, layout_q, cu_seqlens_q, cmp_ratio, mask_mode, cmp_residual_k)
    if dq is None:
        dq = empty_like_dtype(q, shape_of(q))
    if dk is None:
        dk = empty_like_dtype(q, shape_of(k))
    if dw is None:
        dw = empty(q, shape_of(w), "float32")
    if softmax_out is None:
        softmax_out = empty(q, shape_of(attn_softmax_l1_norm), "float32")
    _C.sparse_lightning_indexer_kl_loss_grad(
        arg(q), arg(k), arg(w), arg(sparse_indices), arg(attn_softmax_l1_norm), arg(cu_seqlens_q), arg(cu_seqlens_k),
        arg(seqused_q), arg(seqused_k), arg(cmp_residual_k), arg(_metadata(q, metadata, KL_METADATA_WORDS)), layout_q,
        layout_k, int(mask_mode), int(cmp_ratio), arg(dq), arg(dk), arg(dw), arg(softmax_out))
    return IndexerKLLossGrads(result(dq), result(dk), dw, softmax_out)


def sparse_lightning_indexer_kl_loss_grad_metadata(num_heads_q, topk, *, batch_size=0, max_seqlen_q=0,
                                                   max_seqlen_k=0, layout_q="BSND", layout_k="BSND", mask_mode=3,
                                                   cmp_ratio=1, cu_seqlens_q=None, cu_seqlens_k=None, seqused_q=None,
                                                   seqused_k=None, cmp_residual_k=None, metadata=None, like=None):
    """aclnnSparseLightningIndexerKLLossGradMetadata (INT32 [64]; informative)."""
    tensors = (cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, cmp_residual_k)
    if metadata is None:
        metadata = zeros(_ref(like, dict(enumerate(tensors))), (KL_METADATA_WORDS,), "int32")
    _C.sparse_lightning_indexer_kl_loss_grad_metadata(*[arg(t) for t in tensors], int(batch_size), int(max_seqlen_q),
                                                      int(max_seqlen_k), int(num_heads_q), 1, INDEXER_HEAD_DIM,
                                                      int(topk), layout_q, layout_k, int(mask_mode), int(cmp_ratio),
                                                      arg(metadata))
    return metadata


__all__ = ["SparseFlashMlaResult", "SparseFlashMlaGrads", "LightningIndexerResult", "IndexerKLLossGrads",
           "smla_lse_shape", "sparse_flash_mla", "sparse_flash_mla_grad", "softmax_l1_norm_shape",
           "sparse_flash_mla_softmax_l1_norm", "sparse_flash_mla_metadata", "sparse_flash_mla_grad_metadata",
           "sparse_flash_mla_softmax_l1_norm_metadata", "indexer_output_shape", "lightning_indexer_v2",
           "lightning_indexer_v2_metadata", "sparse_lightning_indexer_kl_loss_grad",
           "sparse_lightning_indexer_kl_loss_grad_metadata"]
