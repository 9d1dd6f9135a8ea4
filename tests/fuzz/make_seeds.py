#!/usr/bin/env python3
"""Writes the seed corpus (tests/fuzz/corpus/<target>/): a few short inputs per target, and the regression inputs
written by hand (tests/fuzz/regressions/<target>/, the REGRESSIONS below; the ones libFuzzer found are kept as found).
Every read past the end of an input gives 0, and 0 always means "the plain, valid choice", so a seed only spells out
the first bytes. Rerun after changing how the targets decode their input: python3 tests/fuzz/make_seeds.py"""
import pathlib

HERE = pathlib.Path(__file__).resolve().parent

THRESHOLD = {
    # dtype index, rank, dims...: then every tensor takes the expected dtype and shape
    "float-scalar": [0, 0],
    "float-2x3": [0, 2, 2, 3],
    "half-3d": [1, 3, 2, 3, 4],
    "bf16-4d": [2, 4, 1, 2, 3, 4],
    "int8-1d": [3, 1, 5],
    "int32-2d": [5, 2, 4, 4],
    "int64-1d": [6, 1, 3],
    "float-broadcast-self": [0, 2, 3, 4, 2, 1, 1],
}

DROPOUT = {}
for op, name in enumerate(["dropout", "genmask", "genmask-v2", "genmask-v2-tensor", "dropout-v3", "do-mask",
                           "dropout-backward", "v3-grad"]):
    # op, dtype index, rank, then per dim: size, 0 (7: add 120)
    DROPOUT[name + "-float-2x3"] = [op, 0, 2, 2, 0, 3, 0]
    DROPOUT[name + "-half-1d"] = [op, 1, 1, 7, 0]
    DROPOUT[name + "-bf16-3d"] = [op, 2, 3, 2, 0, 3, 0, 4, 0]
    DROPOUT[name + "-float-130"] = [op, 0, 1, 2, 7]

# fuzz_mhc (bytes in decoding order): op (0 MhcPre, 1 V2, 2 Backward, 3 BackwardV2), the null byte, profile (0:
# Ascend950, 170: Ascend910B, 171: Ascend910_93), layout (1: BSND), T (or B, S; m < 240: 1 + m % 3, 244: 65), N
# (0/1/2: 4/6/8), D (0: the profile's smallest, 1: twice it), alpha (200: [2]), phi N! (2: yes), hRes form flip,
# x dtype (1: FP16), gamma (1: absent), then per operator: [mode (150: 1)], eps..., caches / gradXPost choices.
MHC = {
    "pre-tnd-n4-d64-bf16": [0, 0, 0, 0, 1, 0, 0],
    "pre-bsnd-n6-d128": [0, 0, 0, 1, 0, 1, 1, 1],
    "pre-n8-fp16-no-gamma": [0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 1],
    "pre-alpha2": [0, 0, 0, 0, 1, 0, 0, 200],
    "pre-no-caches": [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 128],
    "pre-a2-factorial": [0, 0, 170, 0, 1, 0, 0, 0, 2],
    "pre-a3-square-d256": [0, 0, 171, 0, 1, 0, 1],
    "pre-v2-hf32": [1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 150],
    "pre-v2-fp32-bsnd": [1, 0, 0, 1, 1, 1, 2, 0],
    "pre-v2-a2-unavailable": [1, 0, 170, 0, 1, 0, 0],
    "backward-tnd-n4-d64": [2, 0, 0, 0, 1, 0, 0],
    "backward-bsnd-n6-fp16": [2, 0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 1],
    "backward-65-tokens-n8": [2, 0, 0, 0, 244, 2, 0],
    "backward-no-gamma-no-gradxpost": [2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1],
    "backward-in-place": [2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3],
    "backward-a2-factorial": [2, 0, 170, 0, 1, 0, 0, 0, 2],
    "backward-v2-hf32": [3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 150],
    "backward-v2-a3-unavailable": [3, 0, 171, 0, 1, 0, 0],
}

# fuzz_mhc_sinkhorn (bytes in decoding order): direction (1: backward), layout (2: BSND), T - 1, n
# (0/1/2: 4/6/8), numIters (m: 1 + m % 4), then the tensors' descriptors.
SINKHORN = {
    "forward-t1-n4": [0],
    "forward-t5-n6-iters3": [0, 0, 4, 1, 2],
    "forward-t12-n8-iters4": [0, 0, 11, 2, 3],
    "backward-t1-n4": [1],
    "backward-t7-n6-iters2": [1, 0, 6, 1, 1],
    "backward-t12-n8-iters4": [1, 0, 11, 2, 3],
}


# fuzz_mhc_pre_sinkhorn (bytes in decoding order): direction (1: backward), SoC (0: Ascend910B, 200: Ascend950,
# 240: Ascend910_93), layout (2: TND), batch - 1, seq (0..3), n (0: 4), c (0: the profile's usual), dtype (1: fp16),
# the null-pointer byte, then (forward) needBackward (3: false), hcMult, numIters, then the tensors' descriptors.
PRE_SINKHORN = {
    "forward-a2-b1-s1": [0, 0, 0, 0, 1],
    "forward-a2-b2-s3-fp16": [0, 0, 0, 1, 3, 0, 0, 1],
    "forward-a2-no-backward": [0, 0, 0, 0, 2, 0, 0, 0, 0, 3],
    "forward-950-tnd": [0, 200, 2, 0, 1],
    "forward-a3-b1-s2": [0, 240, 0, 0, 2],
    "backward-a2-b1-s1": [1, 0, 0, 0, 1],
    "backward-a2-b2-s3-fp16": [1, 0, 0, 1, 3, 0, 0, 1],
    "backward-950-n8": [1, 200, 0, 0, 1, 6, 0],
    "backward-empty": [1, 0, 0, 0, 0],
}

# fuzz_block_residuals (bytes in decoding order): direction (1: grad), T (0..5), N (m: 1 + m % 8), H (m: 1 + m % 48),
# dtype (0 bf16, 1 fp16, 2 fp32), validBlockNum (0: -1, 1: 0, 2: N, 3: N + 1), the null-pointer byte, then (forward)
# normEps (0: 1e-6), needBackward (3: false), projWeight's rank (1: [H]), then the tensors' descriptors.
BLOCK_RESIDUALS = {
    "forward-t2-n4-h64-bf16": [0, 2, 3, 63],
    "forward-t3-n1-h17-fp16": [0, 3, 0, 16, 1],
    "forward-t1-n8-h48-fp32-flat-proj": [0, 1, 7, 47, 2, 0, 0, 0, 0, 1],
    "forward-no-backward": [0, 2, 2, 15, 0, 0, 0, 0, 3],
    "forward-t0": [0, 0, 3, 31],
    "grad-t2-n4-h64-fp16": [1, 2, 3, 63, 1, 1],
    "grad-t4-n2-h37-fp32": [1, 4, 1, 36, 2, 2],
    "grad-t0": [1, 0, 3, 15],
}

def sparse(head, tail):
    """head, then zeros with the bytes of tail ({position: value}) set: a plain call with a few hostile choices."""
    values = head + [0] * (max(tail) + 1 - len(head))
    for position, value in tail.items():
        values[position] = value
    return values


# Found by fuzzing (they reach gradkit's memory rules): an output that is an input itself, outputs with overlapping
# strides.
MHC["pre-n8-output-is-input"] = sparse([0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 1], {100: 31, 122: 147, 146: 23})
MHC["pre-v2-output-overlapping-strides"] = sparse([1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 150], {84: 7, 134: 31, 135: 255})
MHC["pre-no-caches-output-overlapping-strides"] = sparse([0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 128],
                                                          {49: 7, 116: 62, 117: 255})

# fuzz_compressor (bytes in decoding order). Forward: op 0, the null byte, SoC (201: Ascend910B), layout (1: TH),
# cmpRatio (0: 4, 2: 3, 209: 128), coff (0: 1, 150: 2), wkv rows (0: coff*128, 215: 512), H (0: 1024), B (m < 240:
# 1 + m % 3, 240: 0, 253 with TH: 2^18 batches), S or T ((m + 5) % 13), x dtype (1: FP16), gradEnabled (2: off),
# cacheMode (170: 2), table given (23: absent), then cu_seqlens / seqused / start_pos given (TH: 23 drops
# cu_seqlens; 2: seqused; 1: start_pos), per batch (TH) the tokens it takes (0: an even split), then per batch
# seqused (0: all; 100..234: m % (len + 1)) and start_pos (m % (3 * cr + 1)), block_size (0: 4, ring: the
# smallest legal), the table's columns, its entries (190: all 0). Backward: op 1, null byte, SoC (240: A2), layout,
# cmpRatio, coff, rows, H, B, S or T, x dtype, then the per-batch values as above.
COMPRESSOR = {
    "fwd-bsh-c1-d128": [0],
    "fwd-th-one-batch": [0, 0, 0, 1],
    "fwd-th-3-batches-seqused-start-pos": [0, 0, 0, 1, 0, 0, 0, 0, 2, 7, 0, 0, 0, 0, 0, 2, 1, 0, 0, 0, 0,
                                           102, 3, 0, 5, 0, 0],
    "fwd-bsh-coff2": [0, 0, 0, 0, 0, 150],
    "fwd-bsh-coff2-history": [0, 0, 0, 0, 0, 150, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 6],
    "fwd-bsh-d512": [0, 0, 0, 0, 0, 0, 215],
    "fwd-ring": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 170],
    "fwd-ring-th-coff2-start-pos": [0, 0, 0, 1, 0, 150, 0, 0, 1, 7, 0, 0, 170, 0, 0, 0, 1, 0, 0, 0, 0, 9, 0, 2],
    "fwd-no-grad-fp16": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2],
    "fwd-a2-profile": [0, 0, 201, 0, 0, 0, 0, 0, 0, 0, 0, 2],
    "fwd-cr3": [0, 0, 0, 0, 2],
    "fwd-cr128": [0, 0, 0, 0, 209],
    "fwd-empty-x": [0, 0, 0, 0, 0, 0, 0, 0, 240],
    "fwd-th-2e18-batches": [0, 0, 0, 1, 0, 0, 0, 0, 253],
    "fwd-zero-table": [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 190],
    "fwd-table-entries-past-block-num": [0, 0, 0, 0, 0, 150, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 6, 0, 0, 0, 0, 240],
    "fwd-table-entry-hostile": [0, 0, 0, 0, 0, 150, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 6, 0, 0, 0, 7, 0, 7],
    "bwd-bsh-c1": [1],
    "bwd-th": [1, 0, 0, 1],
    "bwd-bsh-coff2": [1, 0, 0, 0, 0, 150],
    "bwd-th-3-batches-seqused-start-pos": [1, 0, 0, 1, 0, 0, 0, 0, 2, 7, 0, 0, 2, 1, 0, 0, 0, 0, 102, 3, 0, 5, 0, 0],
    "bwd-fp16": [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    "bwd-a2-unavailable": [1, 0, 240, 0],
    "bwd-cr128": [1, 0, 0, 0, 209],
}

# The plain forward's tensors start at byte 24 (x), ..., 72 (stateCacheRef: 72 the "earlier tensor" byte, 76 its
# strides, 79 its storage, 80 its memory), ..., 203 (kvOut); stateCacheStrideDim0's byte follows them, at 221
# (GRADKIT_FUZZ_TRACE=1 prints where each tensor starts), then (222: 240 and more) the wide-table choice, or the
# hostile stride's own byte. The stride: one block's extent - 1; 1000 extents (past the storage the cache declares:
# rejected); the largest the storage holds with 4 spare elements (gaps between the blocks); A2 with those gaps, and
# A2 with a channel stride of 3 (not dense).
COMPRESSOR["fwd-stride-dim0-below-extent"] = sparse([0], {221: 240, 222: 1})
COMPRESSOR["fwd-stride-dim0-1000-extents"] = sparse([0], {221: 240, 222: 2})
COMPRESSOR["fwd-stride-dim0-past-tracked-block"] = sparse([0], {80: 240, 221: 240, 222: 2})
COMPRESSOR["fwd-stride-dim0-gaps-between-blocks"] = sparse([0], {79: 154, 221: 215})
COMPRESSOR["fwd-a2-stride-dim0-gaps"] = sparse([0, 0, 201], {11: 2, 79: 154, 221: 215})
COMPRESSOR["fwd-a2-cache-channel-stride"] = sparse([0, 0, 201], {11: 2, 76: 5, 79: 150})

# fuzz_flash_attention (bytes in decoding order): entry (0 Score, 1 ScoreV2, 2 ScoreV4, 3 VarLenScore, 4 VarLenScoreV2,
# 5 VarLenScoreV4, 6 ScoreGrad, 7 ScoreGradV2, 8 ScoreGradV4, 9 UnpaddingScoreGrad, 10 UnpaddingScoreGradV2, 11
# UnpaddingScoreGradV4), SoC (230: Ascend910_93), [V4: TND (2: yes)], [padded: layout 0-3 BNSD/BSND/BSH/SBH], dtype
# (0-2: FLOAT/FLOAT16/BF16), [ScoreGradV4: FP8 (15)], N2 (1 + m % 2), N1 / N2 (1 + m % 3), D (m < 120: 16), D_V
# flip, then TND: batches (m % 4 + 1), per batch S1_b, S2_b = S1_b (2) or a next byte; padded: B (1 + m % 3), S1
# (1 + m % 12), S2 = S1 (2); then the layout text, headNum, scale, keepProb (150: 0.9), seed, offset, sparse mode
# (m % 9), preTokens / nextTokens (0: INT32_MAX, 102: 1, 103: 3), innerPrecise, pseType (m % 4), outDtype (2 bytes),
# the statistics layout (1: same_as_input), the mask (1 SS, 2 11SS, 3 B1SS, 4 BNSS, 5 the [2048, 2048] template, 6
# the [3072, 2048] one), its dtype (1: BOOL), the template's shape, the pse (1 BNSS, 2 BN1S, 3 1NSS, 4 BNHS, 5 1NHS,
# 6 N, 7 BN slopes); [FP8: the fill of the scales of q, k, v, dy (m % 16: 0 1.0, 1 NaN, 2 +Inf, 3 -Inf, 4 1e20; m /
# 16 odd: the first element only), dScaleO given]; then the arrays (padded, modes other than 5 / 6: the actual-length
# flag, the prefix flag, the start-index flag (5: given), q's start (200 INT64_MAX, 201 INT64_MIN, 202 2^61, 203
# -2^61, 204 2^61 + 1, 205 -2^61 - 1), its null and mutation bytes, the same for kv) and the tensors (zeros: exact,
# dense, valid). keepProb 240 .. 255 are the values near 0: 240 1e-300, 241 1e-46, 242 1e-40, 243 FLT_MIN, 244 / 245
# its float neighbours, ... (fuzz_flash_attention.cpp tinyKeepProb).
FA_ENTRIES = ["score", "score-v2", "score-v4", "var-len", "var-len-v2", "var-len-v4", "grad", "grad-v2", "grad-v4",
              "unpad-grad", "unpad-grad-v2", "unpad-grad-v4"]


def fa(entry, dtype=0, layout=0, n2=0, group=0, b=0, s1=3, keep=0, sparse_mode=0, pre=0, nxt=0, pse_type=0,
       stats=0, mask=0, mask_bool=0, pse=0, tnd=None, s2=None, fp8=None, out_dtype=0, scales=None, starts=None, d=0):
    """One flash attention seed; tnd: per-batch (S1_b, S2_b) for the TND entries (or a V4 entry made TND); s2: the
    bytes of S2 (default S2 = S1); d: D's byte (0: 16, 132: 1); fp8: 1 FLOAT8_E5M2, 0 FLOAT8_E4M3FN (ScoreGradV4), with
    `scales` (the fills of q, k, v, dy) and no dScaleO; starts: (q's byte, kv's byte) of the start indices (padded,
    modes other than 5 / 6)."""
    values = [entry, 0]
    if entry in (2, 8):
        values.append(2 if tnd else 0)
    if tnd is None:
        values.append(layout)
    values.append(dtype)
    if entry == 8:
        values += [0] if fp8 is None else [15, fp8]
    values += [n2, group, d, 0]
    if tnd is not None:
        values += [len(tnd) - 1, 0]
        for q, kv in tnd:
            values += [q, 2] if q == kv else [q, 0, kv]
    else:
        values += [b, s1] + ([2] if s2 is None else s2)
    values += [0, 0, 0, keep, 0, 0, sparse_mode, pre, nxt, 0, pse_type, 0, out_dtype, stats, mask, mask_bool, 0, pse]
    if fp8 is not None:
        values += list(scales or [0, 0, 0, 0]) + [0]
    if starts is not None:
        values += [0, 0, 5, starts[0], 0, 0, starts[1], 0, 0]
    return values


FLASH_ATTENTION = {name + "-plain": [entry] for entry, name in enumerate(FA_ENTRIES)}
for entry in (1, 7):  # ScoreV2 / ScoreGradV2: BSND BF16 GQA, causal template, dropout from a packed mask
    FLASH_ATTENTION[FA_ENTRIES[entry] + "-bsnd-bf16-gqa-causal-dropout"] = fa(entry, 2, 1, 1, 1, s1=9, keep=150,
                                                                            sparse_mode=3, mask=5)
    FLASH_ATTENTION[FA_ENTRIES[entry] + "-bsh-fp16-band-bnss-pse"] = fa(entry, 1, 2, 0, 2, b=1, s1=7, sparse_mode=4,
                                                                      pre=102, nxt=103, pse_type=1, mask=5, pse=1)
    FLASH_ATTENTION[FA_ENTRIES[entry] + "-sbh-alibi-slopes"] = fa(entry, 0, 3, 1, 0, s1=5, pse_type=2, pse=6)
    FLASH_ATTENTION[FA_ENTRIES[entry] + "-bnsd-bool-mask-b1ss"] = fa(entry, 0, 0, 0, 1, b=1, mask=3, mask_bool=1)
for entry in (2, 8):  # V4: Philox dropout, TND with same_as_input statistics
    FLASH_ATTENTION[FA_ENTRIES[entry] + "-philox-dropout"] = fa(entry, 2, 0, 1, 1, keep=150, sparse_mode=2, mask=5)
    FLASH_ATTENTION[FA_ENTRIES[entry] + "-tnd-same-as-input"] = fa(entry, 1, n2=1, group=1, stats=1,
                                                                 tnd=[(5, 7), (0, 3), (9, 9)])
for entry in (3, 4, 5, 9, 10, 11):  # the TND entries: an empty batch, a causal batch-by-batch mask
    FLASH_ATTENTION[FA_ENTRIES[entry] + "-three-batches"] = fa(entry, 0, n2=1, group=1, tnd=[(4, 6), (0, 2), (7, 7)])
    FLASH_ATTENTION[FA_ENTRIES[entry] + "-mode7-dropout"] = fa(entry, 2, group=2, keep=150, sparse_mode=7, nxt=101,
                                                             mask=5, tnd=[(3, 5), (6, 6)])
FLASH_ATTENTION["score-prefix-mode6"] = fa(0, 0, 0, 0, 0, s1=6, sparse_mode=6, mask=6)
FLASH_ATTENTION["grad-v4-a3-unavailable"] = [8, 230]
# Issue 27's families, valid: keepProb FLT_MIN (243) and a double just under it that rounds to it (246), FP8 GradV4
# (E5M2 -> FLOAT16, E4M3FN -> BF16) with plain scales, start indices at +/-2^61 with ALiBi slopes.
FLASH_ATTENTION["score-v2-keep-prob-flt-min-dropout"] = fa(1, keep=243)
FLASH_ATTENTION["grad-v2-keep-prob-rounds-to-flt-min"] = fa(7, keep=246)
FLASH_ATTENTION["grad-v4-fp8-e5m2"] = fa(8, layout=1, n2=1, group=1, fp8=1)
FLASH_ATTENTION["grad-v4-fp8-e4m3-bf16-sbh"] = fa(8, layout=3, fp8=0, out_dtype=1)
FLASH_ATTENTION["score-v2-alibi-start-idx-2e61"] = fa(1, pse_type=2, pse=6, starts=(203, 202))

# Regression inputs written by hand (tests/fuzz/regressions/<target>/): each would have been a finding before the fix
# of issue 27 it is named after.
REGRESSIONS = {"fuzz_compressor": {}, "fuzz_flash_attention": {}}
FA_REGRESSIONS = REGRESSIONS["fuzz_flash_attention"]
# keepProb below FLT_MIN as a float (1e-300, 1e-40, the float below FLT_MIN, a double rounding to a denormal): once
# accepted (NaN / Inf outputs), now 161002 naming keepProb.
FA_REGRESSIONS["score-v2-keep-prob-1e-300"] = fa(1, keep=240)
FA_REGRESSIONS["grad-keep-prob-1e-40"] = fa(6, keep=242)
FA_REGRESSIONS["var-len-keep-prob-below-flt-min"] = fa(3, keep=244, tnd=[(3, 4), (5, 5)])
FA_REGRESSIONS["grad-v2-keep-prob-rounds-to-denormal"] = fa(7, keep=248)
# FP8 GradV4 with NaN / +Inf / -Inf / 1e20 de-quant scales: aclrtSynchronizeStream returned 507000; now the run
# returns 0 and the NaN / Inf reach the outputs.
FA_REGRESSIONS["grad-v4-fp8-nan-scales"] = fa(8, fp8=1, scales=[1, 1, 1, 1])
FA_REGRESSIONS["grad-v4-fp8-inf-scale-k"] = fa(8, layout=1, fp8=1, scales=[0, 2, 0, 0])
FA_REGRESSIONS["grad-v4-fp8-minus-inf-scale-dy-bf16"] = fa(8, layout=2, fp8=0, out_dtype=1, scales=[0, 0, 0, 3])
FA_REGRESSIONS["grad-v4-fp8-1e20-scales"] = fa(8, fp8=0, scales=[4, 4, 4, 4])
FA_REGRESSIONS["grad-v4-fp8-nan-first-q-scale-inf-v"] = fa(8, fp8=1, scales=[17, 0, 2, 0])
# Start indices outside [-2^61, 2^61]: once accepted (int64 overflow in the ALiBi distance), now 161002.
FA_REGRESSIONS["score-v2-q-start-idx-int64-max"] = fa(1, starts=(200, 0))
FA_REGRESSIONS["grad-v2-kv-start-idx-2e61-plus-1-alibi"] = fa(7, pse_type=2, pse=6, starts=(2, 204))
FA_REGRESSIONS["score-v4-start-idx-int64-min"] = fa(2, starts=(201, 205))
# sparseMode 2..8 without attenMask: once full attention, now 161001 naming attenMaskOptional.
FA_REGRESSIONS["score-mode3-no-mask"] = fa(0, sparse_mode=3)
FA_REGRESSIONS["grad-v2-mode2-no-mask"] = fa(7, sparse_mode=2)
FA_REGRESSIONS["score-mode6-no-mask"] = fa(0, sparse_mode=6)
FA_REGRESSIONS["unpad-grad-mode8-no-mask"] = fa(9, sparse_mode=8, tnd=[(3, 3), (4, 4)])
# Philox dropout over 36 * 2^62 scores (N1 = 3, S1 = 12, D = 1; stride-0 keys of S2 = 2^62 rows): now 161002 naming
# keepProb.
FA_REGRESSIONS["score-v4-philox-dropout-2e62-keys"] = fa(2, group=2, d=132, s1=11, keep=150, s2=[0, 230, 242])
# A stride-0 dropMask of one byte claiming 2^40 (forward, its choice at byte 80) or 2^62 bytes (backward, byte 96):
# once staged whole (a 2^40-byte workspace), now staged for the ceil(scores / 8) bytes the kernels read.
FA_REGRESSIONS["score-v2-stride0-drop-mask-2e40"] = sparse(fa(1, keep=150), {80: 0xF8})
FA_REGRESSIONS["grad-v2-stride0-drop-mask-2e62"] = sparse(fa(7, keep=150), {96: 0xF9})
FA_REGRESSIONS["score-stride0-drop-mask-int64-max"] = sparse(fa(0, keep=150), {80: 0xFA})

CMP_REGRESSIONS = REGRESSIONS["fuzz_compressor"]
# stateCacheStrideDim0 past the storage stateCacheRef declares (the plain forward's cache [3, 4, 256] has storage
# exactly its view, in a buffer of that size): 1000 extents, INT32_MAX, and with 4 spare elements one more than the
# largest stride they hold. Once the storage was replaced by the stride's reach and the run wrote past the buffer
# (ASan; the first two), or the call was accepted (the third); now 161002 naming stateCacheStrideDim0.
CMP_REGRESSIONS["fwd-stride-dim0-1000-extents-past-storage"] = sparse([0], {221: 240, 222: 2})
CMP_REGRESSIONS["fwd-stride-dim0-int32-max-past-storage"] = sparse([0], {221: 240, 222: 3})
CMP_REGRESSIONS["fwd-stride-dim0-one-past-storage-gaps"] = sparse([0], {79: 154, 221: 240, 222: 0})
# Wide stride-0 block tables over 4 bytes (222: the wide-table byte): 2^24 columns (once a 128 MiB copy), exactly
# ceil(2^31 / block_size) = 2^31 columns with block_size 1 (19: 1; valid and run: once a 16 GiB copy), one column
# past the limit and 2^33 columns (now 161002 naming stateBlockTableOptional).
CMP_REGRESSIONS["fwd-table-2e24-columns-stride0"] = sparse([0], {222: 240})
CMP_REGRESSIONS["fwd-table-2e31-columns-block-size-1"] = sparse([0], {19: 1, 222: 241})
CMP_REGRESSIONS["fwd-table-past-column-limit"] = sparse([0], {222: 242})
CMP_REGRESSIONS["fwd-table-2e33-columns-stride0"] = sparse([0], {222: 244})


# fuzz_sparse_flash_mla (bytes in decoding order): op (0 SparseFlashMla, 1 its Metadata, 2 GradMetadata, 3
# SoftmaxL1NormMetadata, 4 SparseFlashMlaGrad), SoC (0: Ascend950, 211: Ascend910B), q layout (1: TND), KV layout
# (0: as q, 150: PA_BBND, 235: the other one; PA_BBND only for ops 0 and 1), dtype (1: FP16), B - 1, N1 (index of 1,
# 2, 3, 4, 8, 1, 2, 16), D (0: 512), cmpRatio (index of 4, 1, 2, 3, 128, 8), cmpKv (3: absent), cmpMaskMode (0: 3,
# 2: 0), oriMaskMode (0: 4, 1: 3, 2: 0), the windows (band: index of -1, 0, 1, 2, 3, 127), ori indices (3: listed),
# cmp indices (0: listed, with cmpKv), K, K2 (index of 1, 2, 3, 4, 5, 6, 8), topkValueMode (0: 1),
# returnSoftmaxLse (2: false), scale (0: 1/sqrt(512)), block size (index of 1, 2, 4, 16, 3), per batch S1 (m % 5),
# S2 (m % 10), C (m % 5); then the tensors (zeros: exact, dense, valid).
def smla(op, soc=0, tnd=0, kv=0, fp16=0, n1=0, cr=0, has_cmp=True, cmp_mode=0, ori_mode=0, win=(0, 0), k=None,
         k2=0, lse=True, bs=0, lens=((3, 7, 2),), batch=None):
    values = [op, soc, tnd, kv, fp16, len(lens) - 1 if batch is None else batch, n1, 0, cr, 0 if has_cmp else 3,
              cmp_mode, ori_mode, win[0], win[1], 3 if k is not None else 0]
    if has_cmp:
        values.append(1 if k2 is None else 0)
    if k is not None:
        values.append(k)
    if has_cmp and k2 is not None:
        values.append(k2)
    values += [0, 0 if lse else 2, 0, bs]
    for lengths in lens:
        values += list(lengths)
    return values


SPARSE_FLASH_MLA = {}
for op, name in enumerate(["fwd", "metadata", "grad-metadata", "l1-metadata"]):
    SPARSE_FLASH_MLA[name + "-bsnd-csa-window"] = smla(op, k2=2, win=(4, 0))
    SPARSE_FLASH_MLA[name + "-tnd-hca-causal"] = smla(op, tnd=1, cr=4, k2=None, ori_mode=1, lens=((3, 9, 2), (2, 4, 1)))
    SPARSE_FLASH_MLA[name + "-paged-tnd-q-csa"] = smla(op, tnd=1, kv=150, n1=3, k2=3, bs=1, lens=((2, 6, 3), (4, 8, 4)))
    SPARSE_FLASH_MLA[name + "-bsnd-swa-fp16"] = smla(op, fp16=1, has_cmp=False, cmp_mode=2, k=3, cr=1)
SPARSE_FLASH_MLA["fwd-bsnd-ori-listed-mode0-cmp-mode0"] = smla(0, ori_mode=2, cmp_mode=2, k=2, k2=3, n1=4)
SPARSE_FLASH_MLA["fwd-tnd-ratio128-no-lse"] = smla(0, tnd=1, cr=4, k2=None, lse=False, lens=((4, 9, 1),))
SPARSE_FLASH_MLA["fwd-a2-paged-bs16"] = smla(0, soc=211, kv=150, n1=3, k2=2, bs=3, win=(5, 1))
SPARSE_FLASH_MLA["grad-metadata-a2-unavailable"] = smla(2, soc=211)
SPARSE_FLASH_MLA["grad-bsnd-csa-window"] = smla(4, k2=2, win=(4, 0))
SPARSE_FLASH_MLA["grad-tnd-hca-causal"] = smla(4, tnd=1, cr=4, k2=None, ori_mode=1, lens=((3, 9, 2), (2, 4, 1)))
SPARSE_FLASH_MLA["grad-bsnd-swa-fp16-listed"] = smla(4, fp16=1, has_cmp=False, cmp_mode=2, k=3, cr=1)
SPARSE_FLASH_MLA["grad-tnd-listed-mode0"] = smla(4, tnd=1, ori_mode=2, cmp_mode=2, k=2, k2=3, n1=4,
                                                  lens=((2, 5, 3), (3, 6, 2)))

# No batch (B byte 255: TND prefix sums [0]; cmpRatio 1, so that no residual is needed): the checks accept it, the
# forward metadata's planner threw (561000 "planning failed"); now the all-empty plan. Found by the target's first run.
REGRESSIONS["fuzz_sparse_flash_mla"] = {
    "no-batch-metadata-tnd-internal-error": smla(1, tnd=1, cr=1, batch=255, k2=None, lens=()),
    "no-batch-metadata-tnd-csa-internal-error": smla(1, tnd=1, cr=1, batch=255, k2=2, lens=()),
    "no-batch-grad-metadata-tnd": smla(2, tnd=1, cr=1, batch=255, k2=None, lens=()),
}

# fuzz_lightning_indexer (bytes in decoding order): op (0 LightningIndexerV2, 1 its Metadata, 2
# SparseLightningIndexerKLLossGrad, 3 its Metadata), SoC (0: Ascend950, 211: Ascend910B), q layout (1: TND), k
# layout (0: as q, 160: PA_BBND for the indexer, 235: the other one), dtype (1: FP16), B - 1, N1 (index of 1, 2, 3, 4,
# 8, 16, 1, 2), D (0: 128), cmpRatio (index of 4, 1, 2, 3, 7, 128), maskMode (0: 3, 1: 0), topk (index of 1, 2, 3, 4,
# 5, 8, 16, 2; 230: 512), returnValue (0: 1, 1: 0), outputIdxOffset (3: given), block size (0: 16, 1: 32), per
# batch S1 (m % 5) and S2 (m % 10); then the tensors (zeros: exact, dense, valid).
def li(op, soc=0, tnd=0, kv=0, fp16=0, n1=0, cr=0, mode=0, topk=1, ret=0, offsets=False, bs=0, lens=((3, 5),)):
    values = [op, soc, tnd, kv, fp16, len(lens) - 1, n1, 0, cr, mode, topk, ret, 3 if offsets else 0, bs]
    for lengths in lens:
        values += list(lengths)
    return values


LIGHTNING_INDEXER = {}
for op, name in enumerate(["liv2", "liv2-metadata", "kl-grad", "kl-grad-metadata"]):
    LIGHTNING_INDEXER[name + "-bsnd-causal"] = li(op, n1=3, topk=3)
    LIGHTNING_INDEXER[name + "-tnd-ratio1-fp16"] = li(op, tnd=1, fp16=1, cr=1, mode=1, topk=5, lens=((4, 9), (2, 3)))
    LIGHTNING_INDEXER[name + "-tnd-residual-ratio3"] = li(op, tnd=1, cr=3, n1=4, topk=6, lens=((3, 4), (0, 2), (4, 6)))
LIGHTNING_INDEXER["liv2-paged-offsets"] = li(0, kv=160, n1=2, topk=4, offsets=True, lens=((3, 7), (2, 9)))
LIGHTNING_INDEXER["liv2-paged-tnd-bs32-no-values"] = li(0, tnd=1, kv=160, ret=1, bs=1, lens=((4, 8),))
LIGHTNING_INDEXER["liv2-a2-no-metadata"] = li(0, soc=211, n1=4, topk=2)
LIGHTNING_INDEXER["kl-grad-a2-k512"] = li(2, soc=211, n1=4, topk=230)

def write(target, seeds, kind="corpus"):
    folder = HERE / kind / target
    folder.mkdir(parents=True, exist_ok=True)
    for name, values in seeds.items():
        (folder / name).write_bytes(bytes(values))


write("fuzz_threshold_backward", THRESHOLD)
write("fuzz_dropout_family", DROPOUT)
write("fuzz_mhc", MHC)
write("fuzz_compressor", COMPRESSOR)
write("fuzz_flash_attention", FLASH_ATTENTION)
write("fuzz_mhc_sinkhorn", SINKHORN)
write("fuzz_mhc_pre_sinkhorn", PRE_SINKHORN)
write("fuzz_block_residuals", BLOCK_RESIDUALS)
write("fuzz_sparse_flash_mla", SPARSE_FLASH_MLA)
write("fuzz_lightning_indexer", LIGHTNING_INDEXER)
for target, inputs in REGRESSIONS.items():
    write(target, inputs, "regressions")
