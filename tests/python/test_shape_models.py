"""gradkit.ops' shape helpers read the library's size models (gradkit._C.fa_sizes, compressor_output_lead,
dropout_mask_bytes and mhc_residual_tail, compiled from src/ops/flash_attention/fa_layout.cpp,
src/ops/compressor/compressor_layout.cpp, the dropout mask format and src/ops/mhc/kernels/mhc_sizes.h): sizes and
shapes against values written out by hand."""
import pytest

from gradkit_package import PYTHON_DIR  # noqa: F401  (puts the package on sys.path, or skips this module)

import numpy as np  # noqa: E402

from gradkit import _C, ops  # noqa: E402

# B 2, N1 4, N2 2, S1 3, S2 5, D 8, D_V 6 in each padded layout: (query, key, value, attention_out).
PADDED = {
    "BNSD": ((2, 4, 3, 8), (2, 2, 5, 8), (2, 2, 5, 6), (2, 4, 3, 6)),
    "BSND": ((2, 3, 4, 8), (2, 5, 2, 8), (2, 5, 2, 6), (2, 3, 4, 6)),
    "BSH": ((2, 3, 32), (2, 5, 16), (2, 5, 12), (2, 3, 24)),
    "SBH": ((3, 2, 32), (5, 2, 16), (5, 2, 12), (3, 2, 24)),
}


@pytest.mark.parametrize("layout", sorted(PADDED))
def test_padded_layouts(layout):
    q, k, v, out = PADDED[layout]
    s = _C.fa_sizes(layout, list(q), list(k), list(v), 4)
    assert (s["b"], s["n1"], s["n2"], s["s1"], s["s2"], s["d"], s["dv"]) == (2, 4, 2, 3, 5, 8, 6)
    assert tuple(s["out_shape"]) == out
    assert tuple(s["stats_shape"]) == (2, 4, 3, 8)
    assert s["dropout_elements"] == 2 * 4 * 3 * 5
    q, k, v = (np.empty(shape, np.float32) for shape in (q, k, v))  # the helpers take arrays or tensors
    assert ops.flash_attention_dims(q, k, v, 4, layout) == (2, 3, 4, 2, 8, 6)
    assert ops.flash_attention_out_shape(q, v, 4, layout, key=k) == out
    assert ops.flash_attention_stats_shape(q, 4, layout) == (2, 4, 3, 8)


def test_tnd_batches_from_cumulative_ends():
    s = _C.fa_sizes("TND", [9, 4, 8], [12, 2, 8], [12, 2, 6], 4, [2, 2, 9, 0], [5, 7, 12, 0])
    assert (s["b"], s["s1"], s["s2"], s["t1"], s["t2"], s["dv"]) == (4, 7, 5, 9, 12, 6)
    assert tuple(s["out_shape"]) == (9, 4, 6)
    assert tuple(s["stats_shape"]) == (9, 4, 8)
    assert s["dropout_elements"] == 4 * (2 * 5 + 0 * 2 + 7 * 5)  # batch 1 has no queries, batch 3 is not computed


def test_wrong_rank_and_unknown_layout_are_value_errors():
    with pytest.raises(ValueError, match=r"key: expected 4 dims for input_layout 'BSND' \(\[B, S, N, D\]\), "
                                         r"given shape \[2, 5, 16\]"):
        _C.fa_sizes("BSND", [2, 3, 4, 8], [2, 5, 16], [2, 5, 2, 6], 4)
    with pytest.raises(ValueError, match="input_layout must be BNSD, BSND, BSH, SBH or TND, given 'BHSD'"):
        _C.fa_sizes("BHSD", [1], [1], [1], 1)


def test_compressor_output_lead():
    # BSH [B, S, H]: [B, ceil(S/cr)]; TH [T, H]: [min(T, T/cr + B)] (spec compressor.md 3.1).
    assert _C.compressor_output_lead(False, 2, 10, 4) == [2, 3]
    assert _C.compressor_output_lead(True, 3, 10, 4) == [5]
    assert _C.compressor_output_lead(True, 8, 10, 4) == [10]
    assert ops.compressor_rows(np.empty((2, 10, 16), np.float32), 4) == (2, 3)
    assert ops.compressor_rows(np.empty((10, 16), np.float32), 4, cu_seqlens=[0, 3, 7, 10]) == (5,)
    with pytest.raises(ValueError, match="cmp_ratio must be >= 1, given 0"):
        _C.compressor_output_lead(False, 1, 4, 0)


def test_dropout_mask_bytes():
    # 128-bit aligned, one bit per element (spec dropout_threshold.md 1.1).
    assert [ops.dropout_mask_bytes(n) for n in (0, 1, 128, 129, 1000)] == [0, 16, 16, 32, 128]


def test_mhc_residual_tail():
    # phi has 2N + R rows: R = N*N gives h_res [.., N, N], R = N! (A2/A3) gives [.., N!] (spec mhc.md).
    assert _C.mhc_residual_tail(4, 2 * 4 + 16) == [4, 4]
    assert _C.mhc_residual_tail(4, 2 * 4 + 24) == [24]
    assert _C.mhc_residual_tail(6, 2 * 6 + 36) == [6, 6]
    with pytest.raises(ValueError, match="phi of 8 rows has no residual block for N = 4"):
        _C.mhc_residual_tail(4, 8)
