"""Pure-torch references of DeepSeek-V4's sparse attention operators (docs/sparse_attention.md), written from the
formulas, differentiable by autograd and evaluated in a `compute` dtype (float64 for an oracle): sparse MLA attention
(gather + attention with the sink column), its softmax L1 norm (the indexer's target), the lightning indexer's scores
and top-k, and the indexer's KL loss. gradkit.reference is their public namespace.

Layouts as the operators take them: BSND (q [B, S1, N, D], kv [B, S, 1, D], per-row outputs [B, S1, 1, K]) or TND
(q [T1, N, D] with cu_seqlens_q [B + 1], kv [T, 1, D] with its cu_seqlens, [T1, 1, K]). Supported: a dense ori part
(mask modes 0, 3, 4; no ori index lists, no paged KV, no seqused) and a dense (HCA) or listed (CSA) compressed part
under cmp mask mode 0 or 3."""
import math

import torch


def _ints(values):
    return [int(v) for v in (values.tolist() if hasattr(values, "tolist") else values)]


def _segments(x, layout, cu_seqlens, batch=None):
    """Per-batch views of x: BSND x[b] ([S, N, D] / [S, 1, K]), TND rows cu[b]:cu[b+1]."""
    if x is None:
        return [None] * batch
    if layout == "TND":
        cu = _ints(cu_seqlens) if cu_seqlens is not None else [0, x.shape[0]]
        return [x[cu[b]:cu[b + 1]] for b in range(len(cu) - 1)]
    return [x[b] for b in range(x.shape[0])]


def _join(parts, like, layout):
    """The per-batch results back in the layout of `like` (BSND: stacked; TND: rows concatenated, rows past the
    last cu_seqlens entry 0)."""
    if layout == "TND":
        out = torch.cat(parts) if parts else like.new_zeros((0,) + tuple(like.shape[1:]))
        if out.shape[0] < like.shape[0]:
            out = torch.cat([out, out.new_zeros((like.shape[0] - out.shape[0],) + tuple(out.shape[1:]))])
        return out
    return torch.stack(parts)


def layout_of(q):
    return "TND" if q.dim() == 3 else "BSND"


def ori_visible(s1, s2, mode, win_left, win_right):
    """bool [s1, s2]: the ori rows each query row sees (smla_semantics.h: thr = s2 - s1 + i + 1; mode 0 all, 3
    [0, thr), 4 [thr - win_left - 1, thr + win_right), -1 unbounded)."""
    i = torch.arange(s1)[:, None]
    j = torch.arange(s2)[None, :]
    thr = s2 - s1 + i + 1
    if mode == 0:
        return torch.ones(s1, s2, dtype=torch.bool)
    if mode == 3:
        return j < thr
    begin = (thr - win_left - 1) if win_left != -1 else torch.full_like(thr, -(1 << 40))
    end = (thr + win_right) if win_right != -1 else torch.full_like(thr, 1 << 40)
    return (j >= begin) & (j < end)


def cmp_visible(s1, c, restored, ratio, mode):
    """int64 [s1]: how many compressed rows each query row sees (mode 3: floor((restored - s1 + i + 1) / ratio)
    clipped to [0, c]; mode 0: c)."""
    if mode != 3:
        return torch.full((s1,), c, dtype=torch.int64)
    numerator = restored - s1 + torch.arange(s1) + 1
    return torch.clamp(torch.div(numerator, ratio, rounding_mode="floor"), 0, c)


def listed_slots(indices, visible, stop_at_negative):
    """bool [s1, K]: the slots of an index list [s1, K] a row reads: slot j < min(K, visible), 0 <= idx < visible;
    with stop_at_negative (SparseFlashMla) a negative entry also ends the list."""
    k = indices.shape[-1]
    slot = torch.arange(k)[None, :]
    idx = indices.long()
    valid = (slot < torch.clamp(visible, max=k)[:, None]) & (idx >= 0) & (idx < visible[:, None])
    if stop_at_negative:
        valid &= torch.cumsum((idx < 0).long(), -1) == 0
    return valid


def _residuals(residual, batch):
    return _ints(residual) if residual is not None else [0] * batch


def sparse_flash_mla(q, ori_kv, cmp_kv, sinks, *, cmp_sparse_indices=None, cu_seqlens_q=None, cu_seqlens_ori_kv=None,
                     cu_seqlens_cmp_kv=None, cmp_residual_kv=None, softmax_scale=None, cmp_ratio=1, ori_mask_mode=4,
                     cmp_mask_mode=3, ori_win_left=127, ori_win_right=0, compute=torch.float64,
                     return_l1_norm=False):
    """aclnnSparseFlashMla's formula: per row and head, keys = the visible ori rows then the visible compressed rows
    (all of [0, v) or the listed ones, duplicates kept), s_j = softmax_scale * q . k_j, and with the sink sigma =
    sinks[n]: out = sum_j e^{s_j} k_j / (e^sigma + sum_j e^{s_j}), lse = ln(e^sigma + sum_j e^{s_j}) (a row that sees no
    key: out 0, lse 0). Returns (out, lse) in `compute` (out q's shape, lse [B, 1, S1, N] / [1, T1, N]); with
    return_l1_norm also the softmax L1 norm of the listed compressed slots (sparse_flash_mla_softmax_l1_norm)."""
    layout = layout_of(q)
    scale = 1.0 / math.sqrt(q.shape[-1]) if softmax_scale is None else float(softmax_scale)
    qs = _segments(q, layout, cu_seqlens_q)
    batch = len(qs)
    oris = _segments(ori_kv, layout, cu_seqlens_ori_kv, batch)
    cmps = _segments(cmp_kv, layout, cu_seqlens_cmp_kv, batch)
    lists = _segments(cmp_sparse_indices, layout, cu_seqlens_q, batch)
    residuals = _residuals(cmp_residual_kv, batch)
    sink = sinks.to(compute)
    outs, lses, norms = [], [], []
    for b in range(batch):
        qb = qs[b].to(compute)  # [S1, N, D]
        s1, n = qb.shape[0], qb.shape[1]
        columns, values, masks = [], [], []
        if oris[b] is not None:
            kb = oris[b][:, 0].to(compute)  # [S2, D]
            columns.append(torch.einsum("ind,jd->inj", qb, kb) * scale)
            values.append(("dense", kb))
            masks.append(ori_visible(s1, kb.shape[0], ori_mask_mode, ori_win_left, ori_win_right)[:, None, :])
        listed = None
        if cmps[b] is not None:
            cb = cmps[b][:, 0].to(compute)  # [C, D]
            c = cb.shape[0]
            visible = cmp_visible(s1, c, c * cmp_ratio + residuals[b], cmp_ratio, cmp_mask_mode)
            if lists[b] is None:
                columns.append(torch.einsum("ind,jd->inj", qb, cb) * scale)
                values.append(("dense", cb))
                masks.append((torch.arange(c)[None, :] < visible[:, None])[:, None, :])
            else:
                idx = lists[b][:, 0].long()  # [S1, K2]
                valid = listed_slots(idx, visible, True)
                gathered = cb[idx.clamp(0, max(c - 1, 0))] if c else cb.new_zeros(idx.shape + (cb.shape[-1],))
                columns.append(torch.einsum("ind,ikd->ink", qb, gathered) * scale)
                values.append(("listed", gathered))
                masks.append(valid[:, None, :])
                listed = (len(columns) - 1, valid)
        widths = [col.shape[-1] for col in columns]
        scores = torch.cat([col.masked_fill(~m, float("-inf")) for col, m in zip(columns, masks)], -1)
        any_key = torch.cat([m.expand(s1, 1, m.shape[-1]) for m in masks], -1).any(-1)  # [S1, 1]
        logits = torch.cat([scores, sink[None, :, None].expand(s1, n, 1)], -1)
        lse = torch.logsumexp(logits, -1)
        p = torch.exp(logits[..., :-1] - lse[..., None])
        p = torch.where(any_key[..., None], p, torch.zeros_like(p))
        out = qb.new_zeros(qb.shape)
        start = 0
        for (kind, kv), width in zip(values, widths):
            part = p[..., start:start + width]
            out = out + (torch.einsum("inj,jd->ind", part, kv) if kind == "dense" else
                         torch.einsum("ink,ikd->ind", part, kv))
            start += width
        outs.append(out)
        lses.append(torch.where(any_key, lse, torch.zeros_like(lse)))
        if return_l1_norm:
            k2 = lists[b].shape[-1] if lists[b] is not None else 0
            norm = qb.new_zeros(s1, k2)
            if listed is not None:
                first = sum(widths[:listed[0]])
                norm = p[..., first:first + k2].sum(1) / n * listed[1]
            norms.append(norm[:, None, :])
    out = _join(outs, q, layout)
    lse_rows = _join(lses, q[..., 0], layout)  # [B, S1, N] / [T1, N]
    lse = lse_rows[:, None] if layout == "BSND" else lse_rows[None]
    if not return_l1_norm:
        return out, lse
    return out, lse, _join(norms, cmp_sparse_indices, layout)


def sparse_flash_mla_softmax_l1_norm(q, cmp_kv, sinks, cmp_sparse_indices, *, ori_kv=None, compute=torch.float64,
                                     **options):
    """The attention's distribution over each row's listed compressed keys, averaged over the heads: target[row, j] =
    (sum_n P[n, j]) / N1 with P the attention probabilities of sparse_flash_mla (the sink and the ori part in the
    denominator), 0 in the slots a row does not read. [B, S1, 1, K2] / [T1, 1, K2] in `compute`: the lightning
    indexer's KL target (the L1-normalised head-sum of the attention scores)."""
    return sparse_flash_mla(q, ori_kv, cmp_kv, sinks, cmp_sparse_indices=cmp_sparse_indices, compute=compute,
                            return_l1_norm=True, **options)[2]


def _indexer_rows(q, k, w, layout, cu_seqlens_q, cu_seqlens_k, cmp_residual_k, cmp_ratio, mask_mode, compute):
    """Per batch: (score [Sq, Sk] in compute, visible [Sq])."""
    qs = _segments(q, layout, cu_seqlens_q)
    batch = len(qs)
    ks = _segments(k, layout, cu_seqlens_k, batch)
    ws = _segments(w, layout, cu_seqlens_q, batch)
    residuals = _residuals(cmp_residual_k, batch)
    rows = []
    for b in range(batch):
        qb, kb, wb = qs[b].to(compute), ks[b][:, 0].to(compute), ws[b].to(compute)
        score = torch.einsum("ih,ihs->is", wb, torch.relu(torch.einsum("ihd,sd->ihs", qb, kb)))
        sk = kb.shape[0]
        visible = cmp_visible(qb.shape[0], sk, sk * cmp_ratio + residuals[b], cmp_ratio, 3 if mask_mode == 3 else 0)
        rows.append((score, visible))
    return rows


def lightning_indexer(q, k, w, topk, *, cu_seqlens_q=None, cu_seqlens_k=None, cmp_residual_k=None, cmp_ratio=1,
                      mask_mode=3, compute=torch.float64):
    """aclnnLightningIndexerV2's formula: score(i, s) = sum_h w[i, h] ReLU(q[i, h] . k[s]) over the visible keys, the
    min(topk, visible) largest sorted descending (ties: lower index), -1 / -inf after them. Returns (indices int32,
    values in `compute`) of shape [B, S1, 1, topk] / [T1, 1, topk]."""
    layout = layout_of(q)
    indices, values = [], []
    for score, visible in _indexer_rows(q, k, w, layout, cu_seqlens_q, cu_seqlens_k, cmp_residual_k, cmp_ratio,
                                        mask_mode, compute):
        sq, sk = score.shape
        masked = score.masked_fill(torch.arange(sk)[None, :] >= visible[:, None], float("-inf"))
        order = torch.sort(masked, dim=-1, descending=True, stable=True)
        idx = torch.full((sq, topk), -1, dtype=torch.int64)
        val = torch.full((sq, topk), float("-inf"), dtype=compute)
        width = min(topk, sk)
        idx[:, :width] = order.indices[:, :width]
        val[:, :width] = order.values[:, :width]
        keep = torch.arange(topk)[None, :] < torch.clamp(visible, max=topk)[:, None]
        indices.append(torch.where(keep, idx, torch.full_like(idx, -1)).to(torch.int32)[:, None])
        values.append(torch.where(keep, val, torch.full_like(val, float("-inf")))[:, None])
    return _join(indices, q[..., :1, :topk], layout), _join(values, q[..., :1, :topk], layout)


def indexer_scores(q, k, w, sparse_indices, *, cu_seqlens_q=None, cu_seqlens_k=None, cmp_residual_k=None, cmp_ratio=1,
                   mask_mode=3, compute=torch.float64):
    """(I, valid) of the listed keys, sparse_indices' shape: I[row, j] = sum_h w ReLU(q[row, h] . k[idx_j]) in
    `compute`, valid[row, j] = j < min(K, c_row) and 0 <= idx_j < c_row (a -1 is skipped, not a stop)."""
    layout = layout_of(q)
    lists = _segments(sparse_indices, layout, cu_seqlens_q)
    ks = _segments(k, layout, cu_seqlens_k, len(lists))
    qs, ws = _segments(q, layout, cu_seqlens_q), _segments(w, layout, cu_seqlens_q)
    residuals = _residuals(cmp_residual_k, len(lists))
    scores, valids = [], []
    for b in range(len(lists)):
        qb, kb, wb = qs[b].to(compute), ks[b][:, 0].to(compute), ws[b].to(compute)
        idx = lists[b][:, 0].long()
        sk = kb.shape[0]
        visible = cmp_visible(qb.shape[0], sk, sk * cmp_ratio + residuals[b], cmp_ratio, 3 if mask_mode == 3 else 0)
        valid = listed_slots(idx, visible, False)
        gathered = kb[idx.clamp(0, max(sk - 1, 0))]  # [Sq, K, D]
        s = torch.einsum("ihd,ikd->ihk", qb, gathered)
        scores.append(torch.einsum("ih,ihk->ik", wb, torch.relu(s))[:, None])
        valids.append(valid[:, None])
    return _join(scores, sparse_indices, layout), _join(valids, sparse_indices, layout)


def lightning_indexer_kl_loss(q, k, w, sparse_indices, target, *, compute=torch.float64, **options):
    """The indexer's KL loss: L = sum_rows sum_{valid j, p_j > 0} p_j (log p_j - log y_j), y = softmax of the listed
    keys' indexer scores over the valid slots, p = target (the attention's softmax L1 norm, a constant). A scalar in
    `compute`, differentiable in q, k and w (options: cu_seqlens_q, cu_seqlens_k, cmp_residual_k, cmp_ratio,
    mask_mode)."""
    scores, valid = indexer_scores(q, k, w, sparse_indices, compute=compute, **options)
    log_y = torch.log_softmax(scores.masked_fill(~valid, float("-inf")), -1)
    p = target.to(compute).detach()
    terms = p * (torch.log(p.clamp_min(1e-300)) - log_y)
    return torch.where(valid & (p > 0), terms, torch.zeros_like(terms)).sum()
