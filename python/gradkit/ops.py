"""The raw operators: one call of the aclnn operator (or of gradkit's torch_npu-style host dispatch) on torch
tensors or numpy arrays, no autograd. Outputs are allocated (in the inputs' library) unless given with out=...;
given outputs may have any strides and are written in place. Failures raise gradkit.AclnnError with the aclnn
status and the aclGetRecentErrMsg() text."""
from collections import namedtuple

from . import _C, _arrays
from ._arrays import arg, empty, empty_like_dtype, is_torch, random_seed, result, shape_of, zeros
# The mHC operators live in their own module; gradkit.ops is their public namespace.
from ._ops_mhc import (BlockAttentionResidualsGrads, BlockAttentionResidualsResult, MhcPostGrads,  # noqa: F401
                       MhcPreGrads, MhcPreResult, MhcPreSinkhornGrads, MhcPreSinkhornResult, MhcSinkhornResult,
                       SINKHORN_COLUMNS, block_attention_residuals, block_attention_residuals_grad,
                       block_attention_residuals_saved_shape, mhc_post, mhc_post_backward, mhc_pre,
                       mhc_pre_backward, mhc_pre_sinkhorn, mhc_pre_sinkhorn_backward, mhc_pre_sinkhorn_shapes,
                       mhc_sinkhorn, mhc_sinkhorn_backward, mhc_sinkhorn_saved_sizes)
# The sparse attention operators (DeepSeek-V4 CSA / HCA) likewise.
from ._ops_sparse import (IndexerKLLossGrads, LightningIndexerResult, SparseFlashMlaGrads,  # noqa: F401
                          SparseFlashMlaResult, indexer_output_shape, lightning_indexer_v2,
                          lightning_indexer_v2_metadata, smla_lse_shape, softmax_l1_norm_shape, sparse_flash_mla,
                          sparse_flash_mla_grad, sparse_flash_mla_grad_metadata, sparse_flash_mla_metadata,
                          sparse_flash_mla_softmax_l1_norm, sparse_flash_mla_softmax_l1_norm_metadata,
                          sparse_lightning_indexer_kl_loss_grad, sparse_lightning_indexer_kl_loss_grad_metadata)

# DropoutPath / DropoutBackwardPath values of include/gradkit/native_dropout.h, by name.
DROPOUT_PATHS = {0: "rejected", 1: "empty", 2: "identity", 3: "zeros", 4: "v3", 5: "genmask+domask"}
DROPOUT_BACKWARD_PATHS = {0: "rejected", 1: "empty", 2: "clone", 3: "zeros", 4: "v3grad", 5: "domask"}


def threshold_backward(grad_output, self, threshold=0, *, out=None):
    """aclnnThresholdBackward: grad_output where self > threshold, else 0 (the backward of ReLU / threshold).
    grad_output and self broadcast; out (allocated when None) has the broadcast shape and grad_output's dtype.
    threshold: a Python int (INT64 scalar) or float (DOUBLE scalar). Returns out."""
    if out is None:
        shape = _broadcast_shape(shape_of(grad_output), shape_of(self))
        out = empty_like_dtype(grad_output, shape)
    _C.threshold_backward(arg(grad_output), arg(self), threshold, arg(out))
    return result(out)


def dropout_mask_bytes(numel):
    """Bytes of the packed dropout mask of a tensor with `numel` elements: ceil(numel / 128) * 16."""
    return _C.dropout_mask_bytes(int(numel))


def native_dropout(input, p, train=True, *, seed=None, offset=0, out=None, mask=None, return_path=False):
    """gradkit::native_dropout (torch_npu's native_dropout on the aclnn dropout ops): returns (out, mask) with
    out = input * keep / (1 - p) and mask the packed keep bits (UINT8 [ceil(n/128)*16], LSB first, 1 = keep).
    seed None draws one from the inputs' library's global generator; offset picks the Philox subsequence (a
    multiple of 4). With return_path, also the path taken ("v3", "identity", ...)."""
    if out is None:
        out = empty_like_dtype(input, shape_of(input))
    if mask is None:
        mask = empty(input, (dropout_mask_bytes(_numel(input)),), "uint8")
    if seed is None:
        seed = random_seed(input)
    path = _C.native_dropout(arg(input), float(p), bool(train), int(seed), int(offset), arg(out), arg(mask))
    if return_path:
        return result(out), mask, DROPOUT_PATHS[path]
    return result(out), mask


def native_dropout_scale(p, train=True):
    """The scale native_dropout_backward takes after native_dropout(p, train): 1/(1-p) (1 when not training, 0
    for p == 1)."""
    return _C.native_dropout_scale(float(p), bool(train))


def native_dropout_backward(grad, mask, scale, *, out=None, return_path=False):
    """gradkit::native_dropout_backward (torch_npu's dispatch): grad * keep * scale through aclnnDropoutV3Grad
    (bit-exact with PyTorch) in the Ascend950 profile; scale 1 copies grad, scale 0 gives zeros (mask not read,
    may be None). Returns out (with return_path also the path taken)."""
    if out is None:
        out = empty_like_dtype(grad, shape_of(grad))
    path = _C.native_dropout_backward(arg(grad), arg(mask), float(scale), arg(out))
    if return_path:
        return result(out), DROPOUT_BACKWARD_PATHS[path]
    return result(out)


def dropout_v3_grad(grad_y, mask, scale, *, out=None):
    """aclnnDropoutV3Grad: grad_y * keep * scale with the packed mask, no short-cuts (Ascend950 profile only)."""
    if out is None:
        out = empty_like_dtype(grad_y, shape_of(grad_y))
    _C.dropout_v3_grad(arg(grad_y), arg(mask), float(scale), arg(out))
    return result(out)


def unpack_dropout_mask(mask, shape):
    """The packed keep bits as a bool tensor / array of `shape` (element i is bit i % 8 of byte i // 8)."""
    numel = 1
    for dim in shape:
        numel *= dim
    if is_torch(mask):
        import torch

        bits = torch.arange(8, dtype=torch.uint8)
        keep = (mask.reshape(-1, 1) >> bits) & 1
        return keep.reshape(-1)[:numel].bool().reshape(shape)
    import numpy as np

    keep = np.unpackbits(np.asarray(mask, np.uint8), bitorder="little")
    return keep[:numel].astype(bool).reshape(shape)


CompressorResult = namedtuple("CompressorResult", "cmp_kv softmax_score kv")
CompressorGrads = namedtuple("CompressorGrads", "d_x d_wkv d_wgate d_ape")


def compressor_rows(x, cmp_ratio, cu_seqlens=None):
    """The leading dims of the compressor's outputs (spec compressor.md 3.1): x BSH [B, S, H] -> (B, ceil(S/cr));
    TH [T, H] -> (min(T, T // cr + B),) with B = len(cu_seqlens) - 1."""
    shape = shape_of(x)
    if len(shape) == 3:
        return tuple(_C.compressor_output_lead(False, shape[0], shape[1], int(cmp_ratio)))
    batch = len(_int_values(cu_seqlens)) - 1 if cu_seqlens is not None else 1
    return tuple(_C.compressor_output_lead(True, batch, shape[0], int(cmp_ratio)))


def compressor_stateless_cache(x, wkv, cmp_ratio, coff=1, *, cu_seqlens=None, start_pos=None):
    """The (state_cache, state_block_table) compressor() uses when given none: one zero block and a cacheMode 1
    table of zeros with a column for every position the call reaches. Table entry 0 means "do not write", so
    nothing is kept, and history positions (before start_pos) read the zero block: meaningful with start_pos 0
    (or None) only."""
    shape = shape_of(x)
    channels = shape_of(wkv)[0]
    if len(shape) == 3:
        batch, lengths = shape[0], [shape[1]] * shape[0]
    else:
        cu = _int_values(cu_seqlens) if cu_seqlens is not None else [0, shape[0]]
        batch, lengths = len(cu) - 1, [cu[b + 1] - cu[b] for b in range(len(cu) - 1)]
    starts = _int_values(start_pos) if start_pos is not None else [0] * batch
    end = max([max(0, s) + max(0, n) for s, n in zip(starts, lengths)] + [1])
    # Blocks of cmp_ratio rows (the cache stays a few KB), larger only for very long positions (table <= ~4096
    # columns); at most 1024, the operator's limit.
    block_size = min(1024, max(cmp_ratio, -(-end // 4096)))
    columns = -(-end // block_size)
    return (zeros(x, (1, block_size, 2 * channels)), zeros(x, (max(batch, 0), columns), "int32"))


def compressor(x, wkv, wgate, ape, cmp_ratio, *, state_cache=None, state_block_table=None, cu_seqlens=None,
               seqused=None, start_pos=None, coff=1, cache_mode=1, grad_enabled=False, state_cache_stride_dim0=0,
               cmp_kv=None, softmax_score=None, kv=None):
    """aclnnCompressor (include/aclnnop/aclnn_compressor.h): every cmp_ratio tokens of x (BSH [B, S, H], or TH
    [T, H] with cu_seqlens INT32 [B+1]; bfloat16 / float16) folded into one row of cmp_kv (x's dtype, [B, ceil(S/cr), D] or
    [min(T, T//cr + B), D]) by a softmax over the block's coff*cr rows of x.wgate^T + ape weighting x.wkv^T.
    wkv, wgate [coff*D, H] in x's dtype, ape float32 [cr, coff*D]; seqused, start_pos INT32 [B] or None.

    state_cache float32 [blocks, block_size, 2*coff*D] with state_block_table INT32 ([B, columns] for cache_mode 1,
    [B] for 2) holds the history before start_pos and is written IN PLACE with this call's tokens. None: a zero
    cache that nothing is written to (compressor_stateless_cache), so history positions read zeros: meaningful
    only with start_pos 0 / None; cache_mode then does not apply.

    grad_enabled also returns what compressor_grad needs: softmax_score and kv (float32 [.., coff*cr, D], coff 2
    rows interleaved, padding rows 0). Returns CompressorResult(cmp_kv, softmax_score, kv), the last two None
    without grad_enabled. Outputs may be given (any strides)."""
    if state_cache is None:
        state_cache, state_block_table = compressor_stateless_cache(x, wkv, max(int(cmp_ratio), 1), coff,
                                                                    cu_seqlens=cu_seqlens, start_pos=start_pos)
        cache_mode, state_cache_stride_dim0 = 1, 0
    # Shapes from attributes the operator may still reject (cmp_ratio 0, coff 3): sized so that it gets to say so.
    cr, n = max(int(cmp_ratio), 1), max(int(coff), 1)
    lead = compressor_rows(x, cr, cu_seqlens)
    d = shape_of(wkv)[0] // n
    if cmp_kv is None:
        cmp_kv = empty_like_dtype(x, lead + (d,))
    if grad_enabled:
        if softmax_score is None:
            softmax_score = empty(x, lead + (n * cr, d), "float32")
        if kv is None:
            kv = empty(x, lead + (n * cr, d), "float32")
        score_arg, kv_arg = softmax_score, kv
    else:  # the operator requires them but neither reads nor writes them: placeholders of the right kind
        placeholder = (1,) * (len(lead) + 2)
        score_arg = softmax_score if softmax_score is not None else empty(x, placeholder, "float32")
        kv_arg = kv if kv is not None else empty(x, placeholder, "float32")
    _C.compressor(arg(x), arg(wkv), arg(wgate), arg(state_cache), arg(ape), arg(state_block_table), arg(cu_seqlens),
                  arg(seqused), arg(start_pos), int(cmp_ratio), int(coff), int(cache_mode),
                  int(state_cache_stride_dim0), bool(grad_enabled), arg(cmp_kv), arg(score_arg), arg(kv_arg))
    if not grad_enabled:
        return CompressorResult(result(cmp_kv), None, None)
    return CompressorResult(result(cmp_kv), softmax_score, kv)


def compressor_grad(x, wkv, wgate, d_cmp_kv, softmax_score, kv, cmp_ratio, *, cu_seqlens=None, seqused=None,
                    start_pos=None, coff=1, d_x=None, d_wkv=None, d_wgate=None, d_ape=None):
    """aclnnCompressorGrad: the gradients of compressor()'s cmp_kv for d_cmp_kv (x's dtype, cmp_kv's shape), from
    the forward's x, wkv, wgate, cu_seqlens, seqused, start_pos, cmp_ratio, coff and its grad_enabled outputs
    softmax_score and kv. History rows (read from the state cache) get no gradient. Returns CompressorGrads(d_x
    (x's shape and dtype; rows no block reads are 0), d_wkv, d_wgate (x's dtype), d_ape (float32 [cr, coff*D])).
    Outputs may be given (any strides)."""
    if d_x is None:
        d_x = empty_like_dtype(x, shape_of(x))
    if d_wkv is None:
        d_wkv = empty_like_dtype(x, shape_of(wkv))
    if d_wgate is None:
        d_wgate = empty_like_dtype(x, shape_of(wgate))
    if d_ape is None:
        d_ape = empty(x, (max(int(cmp_ratio), 1), shape_of(wkv)[0]), "float32")
    _C.compressor_grad(arg(x), arg(wkv), arg(wgate), arg(d_cmp_kv), arg(softmax_score), arg(kv), arg(cu_seqlens),
                       arg(seqused), arg(start_pos), int(cmp_ratio), int(coff), arg(d_x), arg(d_wkv), arg(d_wgate),
                       arg(d_ape))
    return CompressorGrads(result(d_x), result(d_wkv), result(d_wgate), d_ape)


def _int_values(values):
    """A 1-d integer tensor / array as a list of Python ints."""
    if isinstance(values, (list, tuple)):
        return [int(v) for v in values]
    return [int(v) for v in values.tolist()]


def _numel(value):
    total = 1
    for dim in shape_of(value):
        total *= dim
    return total


def _broadcast_shape(a, b):
    """numpy broadcasting of two shapes (ValueError when they do not broadcast)."""
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    shape = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            raise ValueError(f"shapes {a} and {b} do not broadcast")
        shape.append(y if x == 1 else x)
    return tuple(shape)


# ------------------------------------------------------------------------------------------------ flash attention

FlashAttentionResult = namedtuple("FlashAttentionResult", "attention_out softmax_max softmax_sum seed offset api")
FlashAttentionGrads = namedtuple("FlashAttentionGrads", "dq dk dv api")

FA_NO_WINDOW = 2147483647  # pre / next tokens: no band (upstream's IR default)


def _fa_sizes(query, key, value, head_num, input_layout, actual_seq_qlen=None, actual_seq_kvlen=None):
    """The library's flash attention size model (gradkit._C.fa_sizes, the one the checks and the plan read): a dict
    of b, n1, n2, s1, s2, d, dv, t1, t2, out_shape and stats_shape."""
    if not isinstance(input_layout, str):
        raise ValueError(f"input_layout must be BNSD, BSND, BSH, SBH or TND, given {input_layout!r}")
    ends = [None if a is None else _int_values(a) for a in (actual_seq_qlen, actual_seq_kvlen)]
    return _C.fa_sizes(input_layout, list(shape_of(query)), list(shape_of(key)), list(shape_of(value)),
                       int(head_num), ends[0], ends[1])


def flash_attention_dims(query, key, value, head_num, input_layout, actual_seq_qlen=None):
    """(B, S1, N1, N2, D, D_V) of a flash attention call (spec fag.md 2.5); TND: B = len(actual_seq_qlen), S1 = the
    longest query length."""
    s = _fa_sizes(query, key, value, head_num, input_layout, actual_seq_qlen)
    return s["b"], s["s1"], s["n1"], s["n2"], s["d"], s["dv"]


def flash_attention_out_shape(query, value, head_num, input_layout, key=None):
    """attention_out's shape: query's with the head dim D_V of value (BSH / SBH: N1 * D_V)."""
    return tuple(_fa_sizes(query, key if key is not None else value, value, head_num, input_layout)["out_shape"])


def flash_attention_stats_shape(query, head_num, input_layout):
    """softmax_max / softmax_sum: [B, N1, S1, 8]; TND [T1, N1, 8] (spec fag.md 2.6)."""
    return tuple(_fa_sizes(query, query, query, head_num, input_layout)["stats_shape"])


def _fa_dropout(query, keep_prob, drop_mask, seed, offset, need_seed):
    """(philox, seed, offset): dropout drawn from the Philox stream when keep_prob < 1 and no packed mask is given
    (seed None: drawn from the library's global generator when need_seed allows, else an error)."""
    philox = float(keep_prob) < 1.0 and drop_mask is None
    if philox and seed is None:
        if not need_seed:
            raise ValueError("keep_prob < 1 without drop_mask needs the forward's seed (and offset)")
        seed = random_seed(query)
    return philox, (0 if seed is None else int(seed)), int(offset)


def _mask_arg(mask):
    """atten_mask for gradkit._C: a torch bool tensor read as UINT8 (same bytes; torch 1.13's DLPack has no bool)."""
    if is_torch(mask) and mask.dtype == _arrays.torch.bool:
        return arg(mask).view(_arrays.torch.uint8)
    return arg(mask)


def _int_list(values):
    return None if values is None else _int_values(values)


def flash_attention_score(query, key, value, head_num, input_layout, *, pse=None, atten_mask=None, scale=1.0,
                          keep_prob=1.0, pre_tokens=FA_NO_WINDOW, next_tokens=FA_NO_WINDOW, inner_precise=0,
                          prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, pse_type=1,
                          q_start_idx=None, kv_start_idx=None, drop_mask=None, seed=None, offset=0,
                          softmax_layout="", attention_out=None, softmax_max=None, softmax_sum=None):
    """The flash attention forward (docs/flash_attention.md; spec fag.md 1.2): attention_out =
    Dropout(Softmax(Mask(scale * (Q.K^T + pse)))).V per head (pse_type 1; 0: scale * Q.K^T + pse; 2 / 3: ALiBi
    generated from the slopes in pse), query heads n reading key/value head n // (N1 / N2).

    Layouts BNSD, BSND, BSH, SBH and TND (actual_seq_qlen / actual_seq_kvlen: cumulative end offsets, as upstream);
    atten_mask bool / uint8 (1 = masked) in the shapes of sparse_mode (0/1: [S1, S2], [1|B, 1|N1, S1, S2]; 2, 3, 4,
    7, 8: the [2048, 2048] template; 6: [3072, 2048] with prefix); pre_tokens / next_tokens the band of modes 0 / 4.
    Dropout (keep_prob < 1): with drop_mask (packed UINT8 keep bits, element ((b*N1 + n)*S1 + i)*S2 + j; TND batch
    blocks) the given mask; without it the Ascend950 Philox stream of (seed, offset) (spec fag.md 3; seed None draws
    one), through aclnnFlashAttentionScoreV4. softmax_layout "same_as_input" (TND): statistics [T1, N1, 8] in token
    order. Returns FlashAttentionResult(attention_out (query's dtype), softmax_max, softmax_sum (float32, 8 equal
    lanes), seed, offset (what the backward needs), api (the entry point run))."""
    philox, seed, offset = _fa_dropout(query, keep_prob, drop_mask, seed, offset, True)
    if attention_out is None:
        attention_out = empty_like_dtype(query, flash_attention_out_shape(query, value, head_num, input_layout, key))
    stats = flash_attention_stats_shape(query, head_num, input_layout)
    if softmax_max is None:
        softmax_max = empty(query, stats, "float32")
    if softmax_sum is None:
        softmax_sum = empty(query, stats, "float32")
    api = _C.flash_attention_score(
        arg(query), arg(key), arg(value), arg(pse), arg(drop_mask), _mask_arg(atten_mask), _int_list(prefix),
        _int_list(actual_seq_qlen), _int_list(actual_seq_kvlen), _int_list(q_start_idx), _int_list(kv_start_idx),
        float(scale), float(keep_prob), int(pre_tokens), int(next_tokens), int(head_num), str(input_layout),
        int(inner_precise), int(sparse_mode), int(pse_type), str(softmax_layout), philox, seed, offset,
        arg(softmax_max), arg(softmax_sum), arg(attention_out))
    return FlashAttentionResult(result(attention_out), softmax_max, softmax_sum, seed, offset, api)


FP8_FORMATS = ("e5m2", "e4m3fn")


def _fp8_format_of(value):
    """"e5m2" / "e4m3fn" for a torch float8 tensor (torch >= 2.1), else None."""
    if not is_torch(value):
        return None
    for name in FP8_FORMATS:
        dtype = getattr(_arrays.torch, "float8_" + name, None)
        if dtype is not None and value.dtype == dtype:
            return name
    return None


def _fp8_arg(value, fmt, name):
    """An FP8 input for gradkit._C: (uint8 codes, ACL_FLOAT8_*); torch float8 tensors are viewed as their uint8
    codes (torch 1.13's DLPack and numpy have no float8 dtype), uint8 tensors / arrays are taken as codes of fmt."""
    code = _C.ACL_FLOAT8_E5M2 if fmt == "e5m2" else _C.ACL_FLOAT8_E4M3FN
    value = arg(value)
    if _fp8_format_of(value) is not None:
        return (value.view(_arrays.torch.uint8), code)
    kind = str(value.dtype)
    if not kind.endswith("uint8"):
        raise TypeError(f"{name}: FP8 inputs are torch float8_e5m2 / float8_e4m3fn tensors or uint8 codes with "
                        f"fp8_format, given {kind}")
    return (value, code)


def _fp8_out_dtype(out_dtype):
    """out_dtype as the operator's code (0: float16, 1: bfloat16) and its name; default float16."""
    if out_dtype is None:
        return 0, "float16"
    if isinstance(out_dtype, int) and out_dtype in (0, 1):
        return out_dtype, ("float16", "bfloat16")[out_dtype]
    text = str(out_dtype).replace("torch.", "")
    if text in ("float16", "fp16", "half"):
        return 0, "float16"
    if text in ("bfloat16", "bf16"):
        return 1, "bfloat16"
    raise ValueError(f"out_dtype must be 0 / float16 or 1 / bfloat16, given {out_dtype!r}")


def _empty_out(ref, shape, name):
    """An uninitialised float16 / bfloat16 output in ref's library (numpy bfloat16: a Bf16Array)."""
    if is_torch(ref):
        return _arrays.torch.empty(shape, dtype=getattr(_arrays.torch, name))
    if name == "bfloat16":
        return _arrays.Bf16Array((_arrays.np.empty(shape, _arrays.np.uint16), _C.ACL_BF16))
    return _arrays.np.empty(shape, _arrays.np.float16)


def flash_attention_score_grad(query, key, value, dy, head_num, input_layout, softmax_max, softmax_sum,
                               attention_in, *, pse=None, atten_mask=None, scale=1.0, keep_prob=1.0,
                               pre_tokens=FA_NO_WINDOW, next_tokens=FA_NO_WINDOW, inner_precise=0, prefix=None,
                               actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, pse_type=1,
                               q_start_idx=None, kv_start_idx=None, drop_mask=None, seed=None, offset=0,
                               softmax_layout="", dq=None, dk=None, dv=None, d_scale_q=None, d_scale_k=None,
                               d_scale_v=None, d_scale_dy=None, d_scale_o=None, out_dtype=None, fp8_format=None):
    """The flash attention backward (spec fag.md 1.3) for output gradient dy (attention_out's shape), from the
    forward's softmax_max, softmax_sum and attention_out (attention_in) and the forward's arguments (the same mask,
    pse, dropout: the same drop_mask, or the forward's seed and offset). Returns FlashAttentionGrads(dq, dk, dv
    (query's dtype; dk, dv summed over each key/value head's query group), api). No pse gradient: upstream does not
    compute one.

    FP8 (spec fag.md 5.9; aclnnFlashAttentionScoreGradV4, Ascend950 profile, padded layouts): query, key, value, dy
    as torch.float8_e5m2 / torch.float8_e4m3fn tensors (torch >= 2.1), or as uint8 tensors / numpy arrays of fp8
    codes with fp8_format "e5m2" | "e4m3fn" (torch 1.13 and numpy have no float8 dtype); d_scale_q, d_scale_dy
    float32 [B, N1, ceil(S1/128), 1] and d_scale_k, d_scale_v [B, N2, ceil(S2/128), 1] the per-128-row-block
    de-quant scales; d_scale_o optional (not read; upstream passes d_scale_q); out_dtype 0 / torch.float16 (default)
    or 1 / torch.bfloat16 is the dtype of dq, dk, dv and of attention_in (and a pse table). The keyword names are
    torch_npu's npu_fusion_attention_grad ones."""
    philox, seed, offset = _fa_dropout(query, keep_prob, drop_mask, seed, offset, False)
    scales = (d_scale_q, d_scale_k, d_scale_v, d_scale_dy, d_scale_o)
    fmt = fp8_format or _fp8_format_of(query)
    fp8 = fmt is not None or any(x is not None for x in scales)
    out_code = 0
    if fp8:
        if fmt not in FP8_FORMATS:
            raise ValueError(f"FP8 inputs need torch float8 tensors or fp8_format in {FP8_FORMATS}, given {fmt!r}")
        out_code, out_name = _fp8_out_dtype(out_dtype)
        inputs = [_fp8_arg(x, fmt, n) for x, n in ((query, "query"), (key, "key"), (value, "value"), (dy, "dy"))]
        ref = dy if is_torch(dy) else attention_in
        if dq is None:
            dq = _empty_out(ref, shape_of(query), out_name)
        if dk is None:
            dk = _empty_out(ref, shape_of(key), out_name)
        if dv is None:
            dv = _empty_out(ref, shape_of(value), out_name)
    else:
        inputs = [arg(query), arg(key), arg(value), arg(dy)]
        if dq is None:
            dq = empty_like_dtype(query, shape_of(query))
        if dk is None:
            dk = empty_like_dtype(query, shape_of(key))
        if dv is None:
            dv = empty_like_dtype(query, shape_of(value))
    api = _C.flash_attention_score_grad(
        *inputs, arg(pse), arg(drop_mask), _mask_arg(atten_mask), arg(softmax_max),
        arg(softmax_sum), arg(attention_in), _int_list(prefix), _int_list(actual_seq_qlen), _int_list(actual_seq_kvlen),
        _int_list(q_start_idx), _int_list(kv_start_idx), float(scale), float(keep_prob), int(pre_tokens),
        int(next_tokens), int(head_num), str(input_layout), int(inner_precise), int(sparse_mode), int(pse_type),
        str(softmax_layout), philox, seed, offset, arg(dq), arg(dk), arg(dv), None, *[arg(x) for x in scales],
        out_code)
    return FlashAttentionGrads(result(dq), result(dk), result(dv), api)
