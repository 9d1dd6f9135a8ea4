"""gradkit.nn.CompressedSparseAttention: one attention layer of DeepSeek-V4 (docs/sparse_attention.md, "The layer")
on gradkit's operators, or with reference=torch.float32 / float64 the same layer in pure torch (gradkit.reference)."""
import math

import torch

from .. import autograd, reference

__all__ = ["CompressedSparseAttention"]

HEAD_DIM = 512  # sparse MLA attention's D (448 nope + 64 rope in DeepSeek-V4; one number here)
INDEX_DIM = 128  # the lightning indexer's D


class CompressedSparseAttention(torch.nn.Module):
    """DeepSeek-V4's compressed attention layer. forward(x) maps x [B, S, hidden] to (y [B, S, hidden] float32,
    indexer_loss): every query head attends, with a learned sink, over a causal sliding window of `window` original
    KV rows and over compressed KV rows:

        q       = x Wq                     [B, S, heads, 512]      (`dtype`)
        ori_kv  = x Wkv                    [B, S, 1, 512]          the window's K = V
        cmp_kv  = Compressor(x)            [B, S // r, 1, 512]     C4A (r = 4, coff 2) for CSA, C128A (r = 128,
                                                                    coff 1) for HCA; row c pools tokens [rc, rc + r)
        CSA:  idx = lightning_indexer(x Wiq, Compressor_C4Li(x), x Wiw, topk)   the top-k compressed rows per token
              out = sparse_flash_mla(q, ori_kv, cmp_kv, sinks, cmp_sparse_indices=idx)
              indexer_loss = KL(attention's head-averaged softmax over idx (detached) || indexer's softmax), summed
              over the tokens (gradkit.lightning_indexer_kl_loss): trains Wiq, Wiw and the C4Li compressor
        HCA:  out = sparse_flash_mla(q, ori_kv, cmp_kv, sinks)   every complete compressed row; indexer_loss None
        y       = out Wo

    A token sees a compressed row once the row's block is complete at its position (cmp mask mode 3), so the layer
    is causal. hidden: a multiple of 512 in [1024, 10240] (the compressor's); S a multiple of nothing (a partial last
    block is left out). Parameters are float32 (cast to `dtype`, bfloat16 / float16, per call); the compressors' wkv,
    wgate [coff * D, hidden] and ape [r, coff * D] as gradkit.nn.Compressor's. Backward: aclnnSparseFlashMlaGrad,
    aclnnCompressorGrad, aclnnSparseLightningIndexerKLLossGrad. reference=torch.float32 / torch.float64: the same layer
    (same parameters) on gradkit.reference in that precision, rounded to `dtype` where the operators store their
    outputs."""

    def __init__(self, hidden, heads, *, mode="csa", topk=8, window=128, index_heads=4, cmp_ratio=None,
                 dtype=torch.bfloat16, init_std=None, reference=None, generator=None):
        super().__init__()
        if mode not in ("csa", "hca"):
            raise ValueError(f"CompressedSparseAttention: mode must be 'csa' or 'hca', given {mode!r}")
        if reference not in (None, torch.float32, torch.float64):
            raise ValueError(f"CompressedSparseAttention: reference must be None, torch.float32 or torch.float64, "
                             f"given {reference}")
        self.hidden, self.heads, self.mode, self.topk = int(hidden), int(heads), mode, int(topk)
        self.window, self.index_heads, self.dtype, self.reference = int(window), int(index_heads), dtype, reference
        self.cmp_ratio = int(cmp_ratio if cmp_ratio is not None else (4 if mode == "csa" else 128))
        self.coff = 2 if mode == "csa" else 1
        std = init_std if init_std is not None else 1.0 / math.sqrt(self.hidden)

        def param(*shape, scale=std):
            return torch.nn.Parameter(torch.randn(*shape, generator=generator) * scale)

        h = self.hidden
        self.wq = param(self.heads * HEAD_DIM, h)
        self.wkv = param(HEAD_DIM, h)
        self.wo = param(h, self.heads * HEAD_DIM, scale=1.0 / math.sqrt(self.heads * HEAD_DIM))
        self.sinks = torch.nn.Parameter(torch.zeros(self.heads))
        self.cmp_wkv = param(self.coff * HEAD_DIM, h)
        self.cmp_wgate = param(self.coff * HEAD_DIM, h)
        self.cmp_ape = torch.nn.Parameter(torch.zeros(self.cmp_ratio, self.coff * HEAD_DIM))
        if mode == "csa":
            self.index_wq = param(self.index_heads * INDEX_DIM, h)
            self.index_ww = param(self.index_heads, h)
            self.index_wkv = param(2 * INDEX_DIM, h)
            self.index_wgate = param(2 * INDEX_DIM, h)
            self.index_ape = torch.nn.Parameter(torch.zeros(4, 2 * INDEX_DIM))

    def _compress(self, x, wkv, wgate, ape, ratio, coff, rows):
        """[B, rows, 1, D] compressed rows of x (bfloat16 / float16 [B, S, hidden]), `dtype`."""
        wkv, wgate = wkv.to(self.dtype), wgate.to(self.dtype)
        if self.reference is None:
            out = autograd.compressor(x, wkv, wgate, ape, ratio, coff=coff)
        else:
            out = reference.compressor(x, wkv, wgate, ape, ratio, coff=coff, compute=self.reference)
        return out[:, :rows].unsqueeze(2)

    def forward(self, x):
        b, s, _ = x.shape
        xf, xb = x.float(), x.to(self.dtype)
        rows = s // self.cmp_ratio
        residual = torch.full((b,), s % self.cmp_ratio, dtype=torch.int32)
        q = (xf @ self.wq.T).reshape(b, s, self.heads, HEAD_DIM).to(self.dtype)
        ori_kv = (xf @ self.wkv.T).reshape(b, s, 1, HEAD_DIM).to(self.dtype)
        cmp_kv = self._compress(xb, self.cmp_wkv, self.cmp_wgate, self.cmp_ape, self.cmp_ratio, self.coff, rows)
        if rows == 0:
            cmp_kv = None
        options = dict(cmp_ratio=self.cmp_ratio, cmp_residual_kv=residual, ori_mask_mode=4,
                       ori_win_left=self.window - 1, ori_win_right=0, cmp_mask_mode=3)
        indices = index = None
        if self.mode == "csa" and cmp_kv is not None:
            index = self._indexer_inputs(xf, xb, rows)
            indices = self._select(index, residual)
        out, lse, target = self._attention(q, ori_kv, cmp_kv, indices, options)
        y = out.reshape(b, s, self.heads * HEAD_DIM).float() @ self.wo.T
        loss = None
        if index is not None:
            loss = self._indexer_loss(index, indices, target, residual)
        return y, loss

    def _indexer_inputs(self, xf, xb, rows):
        """(q, k, w) of the lightning indexer: [B, S, Ni, 128], [B, rows, 1, 128] (`dtype`), [B, S, Ni] float32."""
        b, s, _ = xf.shape
        q = (xf @ self.index_wq.T).reshape(b, s, self.index_heads, INDEX_DIM).to(self.dtype)
        w = (xf @ self.index_ww.T) / math.sqrt(self.index_heads * INDEX_DIM)
        k = self._compress(xb, self.index_wkv, self.index_wgate, self.index_ape, 4, 2, rows)
        return q, k, w

    def _select(self, index, residual):
        q, k, w = index
        if self.reference is None:
            return autograd.lightning_indexer(q, k, w, self.topk, cmp_ratio=self.cmp_ratio, cmp_residual_k=residual)
        return reference.lightning_indexer(q.detach(), k.detach(), w.detach(), self.topk, cmp_ratio=self.cmp_ratio,
                                           cmp_residual_k=residual, compute=self.reference)[0]

    def _attention(self, q, ori_kv, cmp_kv, indices, options):
        """(out `dtype`, lse, the indexer's target or None)."""
        if self.reference is None:
            out, lse = autograd.sparse_flash_mla(q, ori_kv, cmp_kv, self.sinks, cmp_sparse_indices=indices,
                                                 return_lse=True, **options)
            target = None
            if indices is not None:
                target = autograd.sparse_flash_mla_softmax_l1_norm(
                    q, cmp_kv, lse, indices, cmp_ratio=options["cmp_ratio"],
                    cmp_residual_kv=options["cmp_residual_kv"])
            return out, lse, target
        result = reference.sparse_flash_mla(q, ori_kv, cmp_kv, self.sinks, cmp_sparse_indices=indices,
                                            compute=self.reference, return_l1_norm=indices is not None, **options)
        target = result[2].detach().float() if indices is not None else None
        return result[0].to(self.dtype), result[1].float(), target

    def _indexer_loss(self, index, indices, target, residual):
        q, k, w = index
        options = dict(cmp_ratio=self.cmp_ratio, cmp_residual_k=residual)
        if self.reference is None:
            return autograd.lightning_indexer_kl_loss(q, k, w, indices, target, **options)
        return reference.lightning_indexer_kl_loss(q, k, w, indices, target, compute=self.reference,
                                                   **options).float()

    def extra_repr(self):
        backend = "" if self.reference is None else f", reference={self.reference}"
        index = f", topk={self.topk}, index_heads={self.index_heads}" if self.mode == "csa" else ""
        return (f"hidden={self.hidden}, heads={self.heads}, mode={self.mode}, cmp_ratio={self.cmp_ratio}, "
                f"window={self.window}{index}{backend}")
