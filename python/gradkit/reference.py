"""Pure-torch reference implementations of the operators gradkit wraps (no gradkit call inside): what the tests
compare gradkit.relu / dropout / mhc_pre / mhc_post / mhc_sinkhorn / mhc_pre_sinkhorn / block_attention_residuals
against, and the reference model of examples/train_tiny.py. Each takes a `compute` dtype: float32 as a framework
would run it, float64 for an oracle."""
import torch
import torch.nn.functional as F

# The mHC references live in their own module; gradkit.reference is their public namespace.
from ._reference_mhc import (block_attention_residuals, mhc_post, mhc_pre, mhc_pre_sinkhorn, mhc_sinkhorn,  # noqa: F401
                             round_hf32)


def relu(x):
    return torch.relu(x)


def dropout(x, keep, p):
    """Dropout with a given keep mask (bool, x's shape): x * keep / (1 - p), in x's dtype (p == 1: zeros)."""
    if p >= 1:
        return x * 0
    return x * keep.to(x.dtype) * (1.0 / (1.0 - p))


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


# ------------------------------------------------------------------------------------------------ flash attention

FA_NO_WINDOW = 2147483647


def fa_lengths(query, key, input_layout, actual_seq_qlen=None, actual_seq_kvlen=None):
    """Per-batch (query lengths, key lengths) of a flash attention call."""
    if input_layout == "TND":
        def lengths(ends):
            ends = [int(e) for e in ends]
            return [e - s for s, e in zip([0] + ends[:-1], ends)]
        return lengths(actual_seq_qlen), lengths(actual_seq_kvlen)
    batch_dim, seq_dim = {"BNSD": (0, 2), "BSND": (0, 1), "BSH": (0, 1), "SBH": (1, 0)}[input_layout]
    batch = query.shape[batch_dim]
    return [query.shape[seq_dim]] * batch, [key.shape[seq_dim]] * batch


def _fa_split(x, heads, input_layout, lengths):
    """A layout tensor as per-batch [heads, S_b, D] views."""
    if input_layout == "TND":
        ends = torch.tensor(lengths).cumsum(0).tolist()
        return [x[e - n:e].transpose(0, 1) for n, e in zip(lengths, ends)]
    parts = []
    for b in range(len(lengths)):
        if input_layout == "BNSD":
            parts.append(x[b])
        elif input_layout == "BSND":
            parts.append(x[b].transpose(0, 1))
        elif input_layout == "BSH":
            parts.append(x[b].reshape(x.shape[1], heads, -1).transpose(0, 1))
        else:  # SBH
            parts.append(x[:, b].reshape(x.shape[0], heads, -1).transpose(0, 1))
    return parts


def _fa_join(parts, input_layout):
    """Per-batch [N, S_b, D] results back into the layout."""
    if input_layout == "TND":
        return torch.cat([p.transpose(0, 1) for p in parts], 0)
    stacked = torch.stack(parts)  # [B, N, S, D]
    if input_layout == "BNSD":
        return stacked
    if input_layout == "BSND":
        return stacked.transpose(1, 2)
    b, n, s, d = stacked.shape
    bsh = stacked.transpose(1, 2).reshape(b, s, n * d)
    return bsh if input_layout == "BSH" else bsh.transpose(0, 1)


def fa_mask(b, s1, s2, sparse_mode, atten_mask, pre_tokens, next_tokens):
    """Batch b's effective mask [1|N1, S1, S2] (True = masked) of spec fag.md 2.7 for sparse modes 0-4 (full masks:
    the top-left [S1, S2] corner), or None for no masking."""
    if atten_mask is None:
        return None
    i = torch.arange(s1)[:, None]
    j = torch.arange(s2)[None, :]
    d0 = s2 - s1
    if sparse_mode in (0, 1):
        m = atten_mask.bool()
        m = m[..., :s1, :s2] if m.dim() == 2 else m[b if m.shape[0] > 1 else 0][:, :s1, :s2]
        if m.dim() == 2:
            m = m[None]
        if sparse_mode == 0:
            m = m | ((j > i + next_tokens) | (j < i - pre_tokens))[None]
        return m
    if sparse_mode == 2:
        return (j > i)[None]
    if sparse_mode == 3:
        return (j > i + d0)[None]
    if sparse_mode == 4:
        return ((j > i + d0 + next_tokens) | (j < i + d0 - pre_tokens))[None]
    raise NotImplementedError(f"reference.flash_attention: sparse_mode {sparse_mode}")


def _fa_bias(pse, pse_type, b, n1, s1, s2, compute, q_start=0, kv_start=0):
    """Batch b's position bias [N1, S1|1, S2] (types 0 / 1: the pse tensor; 2 / 3: ALiBi from slopes)."""
    if pse is None:
        return None
    if pse_type in (2, 3):
        slopes = pse.to(compute)
        slopes = slopes[b] if slopes.dim() == 2 else slopes
        dist = ((torch.arange(s2)[None, :] + kv_start) - (torch.arange(s1)[:, None] + q_start)).abs().to(compute)
        if pse_type == 3:
            dist = dist.sqrt()
        return -slopes[:, None, None] * dist[None]
    table = pse.to(compute)
    return table[b if table.shape[0] > 1 else 0][:, :s1, :s2]


def flash_attention(query, key, value, head_num, input_layout, *, pse=None, atten_mask=None, scale=1.0, keep=None,
                    keep_prob=1.0, sparse_mode=0, pre_tokens=FA_NO_WINDOW, next_tokens=FA_NO_WINDOW, pse_type=1,
                    actual_seq_qlen=None, actual_seq_kvlen=None, compute=torch.float64, statistics=False):
    """Attention written out in torch (the math path of spec fag.md 1.2) in `compute` precision, differentiable in
    query, key and value: per batch and query head n (key/value head n // G), S = Q.K^T, then (S + pse) * scale
    (pse_type 1) or S * scale + bias (0, 2, 3), masked positions -inf, a row softmax (fully masked rows 0), dropout
    P * keep / keep_prob with `keep` a list of per-batch bool [N1, S1_b, S2_b] keep masks (fa_philox_keep,
    fa_unpack_drop_mask), then P.V. Returns the output in the layout (compute dtype); with statistics also the
    per-batch row max m and sum l ([N1, S1_b] each; m -inf and l 0 for fully masked rows)."""
    q_lens, kv_lens = fa_lengths(query, key, input_layout, actual_seq_qlen, actual_seq_kvlen)
    n1 = int(head_num)
    qs = _fa_split(query.to(compute), n1, input_layout, q_lens)
    n2 = key.shape[1] if input_layout in ("BNSD", "TND") else (
        key.shape[2] if input_layout == "BSND" else key.shape[2] * n1 // query.shape[2])
    ks = _fa_split(key.to(compute), n2, input_layout, kv_lens)
    vs = _fa_split(value.to(compute), n2, input_layout, kv_lens)
    outs, maxes, sums = [], [], []
    for b, (q, k, v) in enumerate(zip(qs, ks, vs)):
        group = n1 // n2
        k, v = k.repeat_interleave(group, 0), v.repeat_interleave(group, 0)
        s1, s2 = q.shape[1], k.shape[1]
        scores = q @ k.transpose(-1, -2)
        bias = _fa_bias(pse, pse_type, b, n1, s1, s2, compute)
        if bias is None:
            scores = scores * scale
        elif pse_type == 1:
            scores = (scores + bias) * scale
        else:
            scores = scores * scale + bias
        mask = fa_mask(b, s1, s2, sparse_mode, atten_mask, pre_tokens, next_tokens)
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        top = scores.amax(-1, keepdim=True)
        invalid = torch.isinf(top)
        shifted = torch.where(invalid, torch.zeros_like(scores), scores - torch.where(invalid, torch.zeros_like(top),
                                                                                       top))
        e = torch.where(torch.isinf(scores), torch.zeros_like(scores), shifted.exp())
        total = e.sum(-1, keepdim=True)
        p = torch.where(invalid, torch.zeros_like(e), e / torch.where(invalid, torch.ones_like(total), total))
        if keep is not None:
            p = p * keep[b].to(compute) / keep_prob
        outs.append(p @ v)
        maxes.append(top[..., 0])
        sums.append(total[..., 0])
    out = _fa_join(outs, input_layout)
    return (out, maxes, sums) if statistics else out


def fa_philox_bytes(seed, offset, count):
    """Bytes [0, count) of the flash attention dropout stream (spec fag.md 3): Philox4x32 with 7 rounds, key =
    (seed low, seed high), counter ceil(offset / 16) + t for block t, each block's four words split into bytes
    least significant first. numpy uint64 arithmetic, independent of gradkit's own."""
    import numpy as np

    mask32 = np.uint64(0xFFFFFFFF)
    blocks = -(-int(count) // 16)
    t = np.arange(blocks, dtype=np.uint64) + np.uint64(-(-int(offset) // 16))
    c = [t & mask32, t >> np.uint64(32), np.zeros(blocks, np.uint64), np.zeros(blocks, np.uint64)]
    k0, k1 = int(seed) & 0xFFFFFFFF, (int(seed) >> 32) & 0xFFFFFFFF
    for r in range(7):
        p0 = np.uint64(0xD2511F53) * c[0]
        p1 = np.uint64(0xCD9E8D57) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0), p1 & mask32, (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1),
             p0 & mask32]
        k0, k1 = (k0 + 0x9E3779B9) & 0xFFFFFFFF, (k1 + 0xBB67AE85) & 0xFFFFFFFF
    words = np.stack(c, 1).astype("<u4")  # [blocks, 4]: x, y, z, w
    return words.view(np.uint8).reshape(-1)[:count]


def fa_philox_keep(seed, offset, keep_prob, n1, q_lens, kv_lens):
    """The keep masks the Philox stream gives a call (spec fag.md 3.4, 3.5): per batch bool [N1, S1_b, S2_b]; rows
    padded to 16 bytes; keep iff byte <= trunc(float32(keep_prob) * 255)."""
    import numpy as np

    threshold = int(np.float32(keep_prob) * np.float32(255))
    padded = [-(-s2 // 16) * 16 for s2 in kv_lens]
    total = n1 * sum(s1 * p for s1, p in zip(q_lens, padded))
    stream = fa_philox_bytes(seed, offset, total)
    keeps, at = [], 0
    for s1, s2, p in zip(q_lens, kv_lens, padded):
        block = stream[at:at + n1 * s1 * p].reshape(n1, s1, p)[:, :, :s2]
        keeps.append(torch.from_numpy(block.astype(np.int64) <= threshold))
        at += n1 * s1 * p
    return keeps


def fa_unpack_drop_mask(mask, n1, q_lens, kv_lens):
    """An external packed drop mask (spec fag.md 2.11) as per-batch bool [N1, S1_b, S2_b] keep masks: element e of
    the batch-major, unpadded order is bit e % 8 of byte e // 8."""
    bits = ((mask.reshape(-1, 1).to(torch.int64) >> torch.arange(8)) & 1).reshape(-1).bool()
    keeps, at = [], 0
    for s1, s2 in zip(q_lens, kv_lens):
        keeps.append(bits[at:at + n1 * s1 * s2].reshape(n1, s1, s2))
        at += n1 * s1 * s2
    return keeps


# ------------------------------------------------------------------------------------------------------------- FP8

FP8_MAX = {"e5m2": 57344.0, "e4m3fn": 448.0}
FP8_BLOCK = 128  # rows of one de-quant scale block, and the side of a dS quantisation block (spec fag.md 5.9)
_FP8_BITS = {"e5m2": (2, 15, 0x7B), "e4m3fn": (3, 7, 0x7E)}  # mantissa bits, exponent bias, largest finite code


def fp8_table(fmt):
    """The format's non-negative finite values, float64, indexed by their code (ascending)."""
    mbits, bias, last = _FP8_BITS[fmt]
    values = []
    for code in range(last + 1):
        e, m = code >> mbits, code & ((1 << mbits) - 1)
        values.append(m * 2.0 ** (1 - bias - mbits) if e == 0 else (1 + m / 2 ** mbits) * 2.0 ** (e - bias))
    return torch.tensor(values, dtype=torch.float64)


def fp8_encode(x, fmt):
    """The fp8 codes (uint8) of x rounded once to the nearest value, ties to the even code; e5m2 overflows to +-Inf,
    e4m3fn (no Inf) to NaN, NaN gives 0x7f | sign, as ml_dtypes / PyTorch casts do."""
    table = fp8_table(fmt)
    a = x.double().abs()
    hi = torch.searchsorted(table, a.contiguous()).clamp(max=len(table) - 1)  # table[hi - 1] < a <= table[hi]
    lo = (hi - 1).clamp(min=0)
    up, down = table[hi] - a, a - table[lo]
    code = torch.where((up < down) | ((up == down) & (hi % 2 == 0)), hi, lo)
    top = table[-1].item()
    if fmt == "e5m2":  # the tie above the largest value rounds to the (even) Inf
        code = torch.where(a >= top + 4096.0, torch.full_like(code, 0x7C), code)
    else:  # the tie at 464 rounds to 448 (even); beyond: NaN
        code = torch.where(a > top + 16.0, torch.full_like(code, 0x7F), code)
    code = torch.where(torch.isnan(a), torch.full_like(code, 0x7F), code)
    return (code | torch.signbit(x.double()).long() * 0x80).to(torch.uint8)


def fp8_decode(codes, fmt):
    """fp8 codes (uint8) -> float64 values (exact)."""
    codes = codes.long()
    table = fp8_table(fmt)
    magnitude = codes & 0x7F
    values = table[magnitude.clamp(max=len(table) - 1)]
    if fmt == "e5m2":
        values = torch.where(magnitude == 0x7C, torch.tensor(float("inf"), dtype=torch.float64), values)
        values = torch.where(magnitude > 0x7C, torch.tensor(float("nan"), dtype=torch.float64), values)
    else:
        values = torch.where(magnitude == 0x7F, torch.tensor(float("nan"), dtype=torch.float64), values)
    return torch.where(codes >= 0x80, -values, values)


def fp8_round(x, fmt):
    """x rounded once to the format (fp8_encode), as float64."""
    return fp8_decode(fp8_encode(x, fmt), fmt)


def fp8_quantize(x, fmt):
    """Block quantisation of spec fag.md 5.9 (get_block_quant_scale) in float32, per (b, n) and 128-row block of
    x [B, N, S, D]: scale = FP8_MAX / max|x| over the block (1 for an all-zero block, where upstream gets inf),
    codes = fp8(x * scale), d_scale = 1 / scale. Returns (codes uint8 [B, N, S, D], d_scale float32
    [B, N, ceil(S / 128), 1]): what the operator's FLOAT8 input and dScale tensors hold."""
    x = x.float()
    b, n, s, _ = x.shape
    blocks = -(-s // FP8_BLOCK)
    codes = torch.empty(x.shape, dtype=torch.uint8)
    d_scale = torch.ones(b, n, blocks, 1, dtype=torch.float32)
    fmax = torch.tensor(FP8_MAX[fmt], dtype=torch.float32)
    for blk in range(blocks):
        rows = x[:, :, blk * FP8_BLOCK:(blk + 1) * FP8_BLOCK]
        top = rows.abs().amax(dim=(-2, -1))
        scale = torch.where(top > 0, fmax / top, torch.ones_like(top))  # float32 division, as the spec's numpy
        codes[:, :, blk * FP8_BLOCK:(blk + 1) * FP8_BLOCK] = fp8_encode(rows * scale[..., None, None], fmt)
        d_scale[:, :, blk, 0] = 1.0 / scale
    return codes, d_scale


def _fp8_block_factor(d_scale, rows):
    """[B, N, blocks, 1] scales -> [B, N, rows] (each row its block's scale), float64."""
    return d_scale[..., 0].double().repeat_interleave(FP8_BLOCK, dim=-1)[..., :rows]


def _fp8_scores(q, k, dsq, dsk, scale):
    """Per (b, n1): s = (q8 k8^T) * dScaleQ[row block] * dScaleK[col block] * scale, float64 [B, N1, S1, S2]."""
    return (q @ k.transpose(-1, -2)) * (dsq[..., :, None] * dsk[..., None, :]) * scale


def flash_attention_fp8(q, k, v, dy, d_scale_q, d_scale_k, d_scale_v, d_scale_dy, fmt, *, scale=1.0,
                        attention_in=None, softmax_max=None, softmax_sum=None):
    """The FP8 forward and backward chain of spec fag.md 5.9 in float64 on BNSD tensors, no mask, pse or dropout:
    q, dy fp8 codes [B, N1, S1, D | D_V]; k, v [B, N2, S2, D | D_V]; d_scale_* [B, N, ceil(S/128), 1]. Forward:
    P = softmax(s), out = sum over 128-column blocks of (fp8(P)[:, blk] v8[blk]) * dScaleV[blk]. Backward (from
    attention_in / softmax_max / softmax_sum as the operator receives them; default the forward's, unrounded):
    dv = sum over S1 blocks of (fp8(P)^T dy8) * dScaleDy; dp = (dy8 v8^T) * dScaleDy * dScaleV; Drow = rowsum(
    attention_in * dy8 * dScaleDy); ds = (dp - Drow) * P quantised per 128 x 128 block (scale FP8_MAX / max|ds|, 0
    below 1e-8), dq = scale * sum over blocks of (ds8 k8) * dsDeq * dScaleK, dk = scale * sum of (ds8^T q8) * dsDeq
    * dScaleQ; dk, dv summed over each kv head's query group. Returns dict(out, softmax_max, softmax_sum [B, N1, S1]
    float64, dq, dk, dv float64)."""
    q8, k8, v8, dy8 = (fp8_decode(t, fmt) for t in (q, k, v, dy))
    n1, n2 = q8.shape[1], k8.shape[1]
    g = n1 // n2
    k8, v8 = k8.repeat_interleave(g, 1), v8.repeat_interleave(g, 1)
    s1, s2 = q8.shape[2], k8.shape[2]
    dsq, dsdy = _fp8_block_factor(d_scale_q, s1), _fp8_block_factor(d_scale_dy, s1)
    dsk = _fp8_block_factor(d_scale_k, s2).repeat_interleave(g, 1)
    dsv = _fp8_block_factor(d_scale_v, s2).repeat_interleave(g, 1)
    s = _fp8_scores(q8, k8, dsq, dsk, scale)
    m = s.amax(-1)
    e = torch.exp(s - m[..., None])
    l = e.sum(-1)
    p = e / l[..., None]
    p8 = fp8_round(p, fmt)
    out = torch.zeros(q8.shape[:3] + (v8.shape[-1],), dtype=torch.float64)
    for j0 in range(0, s2, FP8_BLOCK):
        out += (p8[..., j0:j0 + FP8_BLOCK] @ v8[..., j0:j0 + FP8_BLOCK, :]) * dsv[..., j0:j0 + 1, None]
    result = dict(out=out, softmax_max=m, softmax_sum=l)
    if dy is None:
        return result
    o = out if attention_in is None else attention_in.double()
    m_in = m if softmax_max is None else softmax_max.double()
    l_in = l if softmax_sum is None else softmax_sum.double()
    p = torch.exp(s - m_in[..., None]) / l_in[..., None]
    p8 = fp8_round(p, fmt)
    dy_deq = dy8 * dsdy[..., None]
    d_row = (o * dy_deq).sum(-1)
    dp = (dy8 @ v8.transpose(-1, -2)) * dsdy[..., :, None] * dsv[..., None, :]
    ds = (dp - d_row[..., None]) * p
    ds8 = torch.zeros_like(ds)
    deq = torch.zeros(ds.shape[:2] + (-(-s1 // FP8_BLOCK), -(-s2 // FP8_BLOCK)), dtype=torch.float64)
    fmax = FP8_MAX[fmt]
    for bi, i0 in enumerate(range(0, s1, FP8_BLOCK)):
        for bj, j0 in enumerate(range(0, s2, FP8_BLOCK)):
            block = ds[..., i0:i0 + FP8_BLOCK, j0:j0 + FP8_BLOCK]
            top = block.abs().amax(dim=(-2, -1))
            blk_scale = torch.where(top < 1e-8, torch.zeros_like(top), fmax / top)
            deq[..., bi, bj] = torch.where(blk_scale == 0, torch.zeros_like(top), 1.0 / blk_scale)
            ds8[..., i0:i0 + FP8_BLOCK, j0:j0 + FP8_BLOCK] = fp8_round(block * blk_scale[..., None, None], fmt)
    dq = torch.zeros_like(q8)
    dk = torch.zeros_like(k8)
    dv = torch.zeros_like(v8)
    for bi, i0 in enumerate(range(0, s1, FP8_BLOCK)):
        rows = slice(i0, i0 + FP8_BLOCK)
        dv += (p8[..., rows, :].transpose(-1, -2) @ dy8[..., rows, :]) * dsdy[..., i0:i0 + 1, None]
        for bj, j0 in enumerate(range(0, s2, FP8_BLOCK)):
            cols = slice(j0, j0 + FP8_BLOCK)
            factor = deq[..., bi, bj][..., None, None]
            dq[..., rows, :] += (ds8[..., rows, cols] @ k8[..., cols, :]) * factor * dsk[..., j0:j0 + 1, None]
            dk[..., cols, :] += (ds8[..., rows, cols].transpose(-1, -2) @ q8[..., rows, :]) * factor * \
                dsq[..., i0:i0 + 1, None]
    b = q8.shape[0]
    dk = dk.reshape(b, n2, g, s2, -1).sum(2) * scale
    dv = dv.reshape(b, n2, g, s2, -1).sum(2)
    result.update(dq=dq * scale, dk=dk, dv=dv)
    return result


# The sparse attention references (DeepSeek-V4 CSA / HCA) live in their own module; gradkit.reference is their public
# namespace.
from ._reference_sparse import (indexer_scores, lightning_indexer, lightning_indexer_kl_loss,  # noqa: E402,F401
                                sparse_flash_mla, sparse_flash_mla_softmax_l1_norm)
