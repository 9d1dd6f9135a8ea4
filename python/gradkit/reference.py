"""Pure-torch reference implementations of the operators gradkit wraps (no gradkit call inside): what the tests
compare gradkit.relu / dropout / mhc_pre against, and the reference model of examples/train_tiny.py. Each takes a
`compute` dtype: float32 as a framework would run it, float64 for an oracle."""
import torch
import torch.nn.functional as F


def relu(x):
    return torch.relu(x)


def dropout(x, keep, p):
    """Dropout with a given keep mask (bool, x's shape): x * keep / (1 - p), in x's dtype (p == 1: zeros)."""
    if p >= 1:
        return x * 0
    return x * keep.to(x.dtype) * (1.0 / (1.0 - p))


def mhc_pre(x, phi, alpha, bias, gamma=None, norm_eps=1e-6, hc_eps=1e-6, compute=torch.float32, hf32=False):
    """The mHC pre-mapping of docs/mhc.md in `compute` precision: (h_in in x's dtype, h_post, h_res) with h_res
    [.., N, N] when phi has N^2 + 2N rows, else [.., F - 2N]; (h_in, h_post) for alpha [2]. hf32 rounds the
    matmul operands to HF32 (11 explicit mantissa bits, ties away from zero), as opImplMode 1 does."""
    shape = x.shape
    lead, n, d = shape[:-2], shape[-2], shape[-1]
    xf = x.to(compute).reshape(*lead, n * d)
    inv_rms = torch.rsqrt(xf.square().mean(-1, keepdim=True) + norm_eps)
    xg = xf if gamma is None else xf * gamma.to(compute).reshape(n * d)
    phi_c = phi.to(compute)
    if hf32:
        xg, phi_c = round_hf32(xg), round_hf32(phi_c)
    h_mix = F.linear(xg, phi_c)
    w = h_mix * inv_rms
    alpha_c, bias_c = alpha.to(compute), bias.to(compute)
    h_pre = torch.sigmoid(w[..., :n] * alpha_c[0] + bias_c[:n]) + hc_eps
    h_post = 2 * torch.sigmoid(w[..., n:2 * n] * alpha_c[1] + bias_c[n:2 * n])
    h_in = (h_pre.unsqueeze(-1) * xf.reshape(*lead, n, d)).sum(-2).to(x.dtype)
    if alpha.shape[0] == 2:
        return h_in, h_post + hc_eps
    h_res = w[..., 2 * n:] * alpha_c[2] + bias_c[2 * n:]
    if h_res.shape[-1] == n * n:
        h_res = h_res.reshape(*lead, n, n)
    return h_in, h_post, h_res


def round_hf32(values):
    """fp32 values rounded to HF32: 11 explicit mantissa bits, ties away from zero (fp32 range)."""
    bits = values.float().contiguous().view(torch.int32)
    rounded = (bits + 0x800) & ~0xFFF  # add half of the dropped 12 bits on the magnitude, then truncate
    finite = torch.isfinite(values.float())
    return torch.where(finite, rounded.view(torch.float32), values.float()).to(values.dtype)


def compressor(x, wkv, wgate, ape, cmp_ratio, *, coff=1, cu_seqlens=None, seqused=None, start_pos=None,
               state_cache=None, state_block_table=None, cache_mode=1, compute=torch.float32, intermediates=False):
    """The compressor forward of spec compressor.md 4.1 in `compute` precision, differentiable in x, wkv, wgate
    and ape: KV = x.wkv^T, G = x.wgate^T + ape[position mod cr] per used token; per compressed block (absolute
    positions [q*cr, (q+1)*cr), with coff 2 also the previous block through channels [0, D)), a softmax over its
    coff*cr rows per channel weighting the KV rows. Rows before start_pos come from state_cache through
    state_block_table (cache_mode 1 paged, 2 one ring buffer per batch) as constants, or are zeros without a cache
    (as gradkit.ops.compressor's stateless default); rows before position 0 are padding (weight 0). Nothing is
    written to the cache.

    Returns cmp_kv in x's dtype ([B, ceil(S/cr), D] or [min(T, T//cr + B), D], padding rows 0); with intermediates
    (cmp_kv, softmax_score, kv), the last two in `compute` ([.., coff*cr, D], coff 2 rows interleaved: even = the
    previous block, odd = the block itself; padding rows 0)."""
    cr = int(cmp_ratio)
    bsh = x.dim() == 3
    hidden = x.shape[-1]
    xf = x.reshape(-1, hidden).to(compute)
    tokens = xf.shape[0]
    channels = wkv.shape[0]
    d = channels // coff
    kv_proj = xf @ wkv.to(compute).T
    gate = xf @ wgate.to(compute).T
    lay = _CompressorLayout(x, cr, coff, cu_seqlens, seqused, start_pos)

    # 2. APE of every used token's absolute position (unused tokens take none; nothing reads them).
    ape_index = torch.zeros(tokens, dtype=torch.int64)
    used = torch.zeros(tokens, 1, dtype=compute)
    for b in range(lay.batch):
        first, u, sp = lay.first[b], lay.used[b], lay.start[b]
        ape_index[first:first + u] = (sp + torch.arange(u)) % cr
        used[first:first + u] = 1
    gate = gate + ape.to(compute)[ape_index] * used

    # 3. Every compressed block as indices into one source table: token rows [0, T), history rows [T, T + M), and
    # a padding row T + M (kv 0, score -inf).
    history_kv, history_score, sources, out_rows = [], [], [], []
    history_count = 0
    for b in range(lay.batch):
        sp, n_b = lay.start[b], lay.blocks(b)
        if n_b == 0:
            continue
        hist_first = max(0, (sp // cr - (coff - 1)) * cr)
        if sp > hist_first:
            kv_rows, score_rows = _compressor_history(state_cache, state_block_table, cache_mode, b, hist_first, sp,
                                                      channels, compute)
            history_kv.append(kv_rows)
            history_score.append(score_rows)
        q = sp // cr + torch.arange(n_b)
        halves = []
        for h in range(coff):
            p = (q - (coff - 1) + h)[:, None] * cr + torch.arange(cr)[None, :]  # [n_b, cr] absolute positions
            index = torch.where(p >= sp, lay.first[b] + p - sp, tokens + history_count + p - hist_first)
            halves.append(torch.where(p < 0, torch.full_like(p, -1), index))  # -1: the padding row, below
        sources.append(torch.stack(halves, 1))  # [n_b, coff, cr]
        out_rows.append(lay.row(b) + torch.arange(n_b))
        history_count += sp - hist_first

    rows = lay.rows()
    cmp_kv = torch.zeros(rows, d, dtype=compute)
    score_out = torch.zeros(rows, coff * cr, d, dtype=compute)
    kv_out = torch.zeros(rows, coff * cr, d, dtype=compute)
    if sources:
        index = torch.cat(sources)
        index = torch.where(index < 0, torch.full_like(index, tokens + history_count), index)
        k_table = torch.cat([kv_proj] + history_kv + [kv_proj.new_zeros(1, channels)])
        z_table = torch.cat([gate] + history_score + [gate.new_full((1, channels), float("-inf"))])
        k_halves = [k_table[index[:, h], h * d:(h + 1) * d] for h in range(coff)]  # [R', cr, D] each
        z_halves = [z_table[index[:, h], h * d:(h + 1) * d] for h in range(coff)]
        k_block = torch.cat(k_halves, 1)  # [R', coff*cr, D]: the previous block's rows, then the block's own
        weights = torch.softmax(torch.cat(z_halves, 1), dim=1)
        out_index = torch.cat(out_rows)
        cmp_kv = cmp_kv.index_copy(0, out_index, (weights * k_block).sum(1))
        if intermediates:
            def interleave(t):
                return t.view(-1, coff, cr, d).transpose(1, 2).reshape(-1, coff * cr, d)

            score_out = score_out.index_copy(0, out_index, interleave(weights))
            kv_out = kv_out.index_copy(0, out_index, interleave(k_block))
    lead = (lay.batch, -(-lay.seq // cr)) if bsh else (rows,)
    cmp_kv = cmp_kv.reshape(lead + (d,)).to(x.dtype)
    if not intermediates:
        return cmp_kv
    return cmp_kv, score_out.reshape(lead + (coff * cr, d)), kv_out.reshape(lead + (coff * cr, d))


class _CompressorLayout:
    """Per-batch first row, used tokens and start position of a compressor call (spec compressor.md 2, 3.3)."""

    def __init__(self, x, cr, coff, cu_seqlens, seqused, start_pos):
        self.cr, self.bsh = cr, x.dim() == 3
        if self.bsh:
            self.batch, self.seq = x.shape[0], x.shape[1]
            self.first = [b * self.seq for b in range(self.batch)]
            lengths = [self.seq] * self.batch
        else:
            cu = [int(v) for v in cu_seqlens.tolist()]
            self.batch, self.tokens = len(cu) - 1, x.shape[0]
            self.first = cu[:-1]
            lengths = [cu[b + 1] - cu[b] for b in range(self.batch)]
        self.used = lengths if seqused is None else [int(v) for v in seqused.tolist()]
        self.start = [0] * self.batch if start_pos is None else [int(v) for v in start_pos.tolist()]

    def blocks(self, b):
        return max(0, (self.start[b] + self.used[b]) // self.cr - self.start[b] // self.cr)

    def rows(self):
        if self.bsh:
            return self.batch * -(-self.seq // self.cr)
        return min(self.tokens, self.tokens // self.cr + self.batch)

    def row(self, b):
        """The output row of batch b's first block: BSH b * ceil(S/cr); TH packed after the earlier batches'."""
        if self.bsh:
            return b * -(-self.seq // self.cr)
        return sum(self.blocks(k) for k in range(b))


def _compressor_history(state_cache, table, cache_mode, b, first, end, channels, compute):
    """kv_state and score_state rows of batch b's positions [first, end) from the state cache (zeros without one),
    detached: the gradient stops at the call boundary."""
    count = end - first
    if state_cache is None:
        zero = torch.zeros(count, channels, dtype=compute)
        return zero, zero
    positions = torch.arange(first, end)
    block_size = state_cache.shape[1]
    if cache_mode == 2:
        blocks = table[b].long().expand(count)
    else:
        blocks = table[b].long()[positions // block_size]
    rows = state_cache.detach()[blocks, positions % block_size].to(compute)
    return rows[:, :channels], rows[:, channels:]
