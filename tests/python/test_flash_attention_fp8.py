"""gradkit.ops.flash_attention_score_grad with FP8 inputs (spec fag.md 5.9, aclnnFlashAttentionScoreGradV4) from
Python: numpy uint8 codes and torch 1.13 uint8 tensors with fp8_format, float16 and bfloat16 outputs, against
reference.flash_attention_fp8 (the chain in float64, independent of gradkit's C++); and reference's fp8 casts
themselves (every code round-trips, known values, ties to even, overflow). The seed's FP8 cases run in
test_flash_attention_seed_cases.py."""
import math

import numpy as np
import pytest
import torch

from gradkit_package import PYTHON_DIR  # noqa: F401  (puts the package on sys.path, or skips this module)

import gradkit  # noqa: E402,F401
from gradkit import ops, reference  # noqa: E402

# Measured 2.1e-4 (fp16) and 1.7e-3 (bf16: its output rounding); the chain is the same, the sums' order is not.
REL_L2_GATE = {torch.float16: 1e-3, torch.bfloat16: 5e-3}


@pytest.mark.parametrize("fmt", ["e5m2", "e4m3fn"])
def test_reference_fp8_codes_round_trip(fmt):
    codes = torch.arange(256, dtype=torch.int64).to(torch.uint8)
    values = reference.fp8_decode(codes, fmt)
    finite = ~torch.isnan(values) & ~torch.isinf(values)
    assert int(finite.sum()) == (248 if fmt == "e5m2" else 254)
    assert torch.equal(reference.fp8_encode(values[finite], fmt), codes[finite])
    assert values[~torch.isnan(values)].abs().max().item() == (float("inf") if fmt == "e5m2" else 448.0)


def test_reference_fp8_known_values():
    x = torch.tensor([1.0, -2.5, 1.125, 1.375, 0.0, -0.0, 1e6, 2.0 ** -17])
    assert reference.fp8_encode(x, "e4m3fn").tolist() == [0x38, 0xC2, 0x39, 0x3B, 0x00, 0x80, 0x7F, 0x00]
    # e5m2: 1.125 ties between 1.0 (even code) and 1.25; 1.375 between 1.25 and 1.5 (even); 2^-17 is its smallest
    # subnormal / 2: a tie, to 0.
    assert reference.fp8_encode(x, "e5m2").tolist() == [0x3C, 0xC1, 0x3C, 0x3E, 0x00, 0x80, 0x7C, 0x00]


def _problem(fmt, out_dtype, seed):
    torch.manual_seed(seed)
    b, n1, n2, s1, s2, d = 1, 2, 1, 130, 70, 32
    x = [torch.randn(b, n1, s1, d), torch.randn(b, n2, s2, d), torch.randn(b, n2, s2, d), torch.randn(b, n1, s1, d)]
    quantised = [reference.fp8_quantize(t, fmt) for t in x]
    codes, scales = [c for c, _ in quantised], [s for _, s in quantised]
    scale = 1.0 / math.sqrt(d)
    fwd = reference.flash_attention_fp8(*codes, *scales, fmt, scale=scale)
    attention_in = fwd["out"].to(out_dtype)
    stats = [fwd[k].float() for k in ("softmax_max", "softmax_sum")]
    golden = reference.flash_attention_fp8(*codes, *scales, fmt, scale=scale, attention_in=attention_in,
                                           softmax_max=stats[0], softmax_sum=stats[1])
    stats8 = [t[..., None].expand(-1, -1, -1, 8).contiguous() for t in stats]
    return codes, scales, scale, attention_in, stats8, golden


def _check(grads, golden, out_dtype):
    for name in ("dq", "dk", "dv"):
        ours, want = getattr(grads, name), golden[name]
        if isinstance(ours, np.ndarray):
            ours = torch.from_numpy(ours.astype(np.int32) << 16).view(torch.float32) if ours.dtype == np.uint16 \
                else torch.from_numpy(ours)
        else:
            assert ours.dtype == out_dtype
        ours = ours.double()
        assert float(want.abs().max()) > 1e-3, name
        rel = float((ours - want).norm() / want.norm())
        assert rel < REL_L2_GATE[out_dtype], f"{name}: rel L2 {rel:.2e}"


@pytest.mark.parametrize("fmt,out_dtype", [("e5m2", torch.float16), ("e4m3fn", torch.bfloat16)])
def test_torch_uint8_codes_with_fp8_format(fmt, out_dtype):
    codes, scales, scale, attention_in, stats, golden = _problem(fmt, out_dtype, 3)
    grads = ops.flash_attention_score_grad(
        *codes, 2, "BNSD", stats[0], stats[1], attention_in, scale=scale, d_scale_q=scales[0], d_scale_k=scales[1],
        d_scale_v=scales[2], d_scale_dy=scales[3], out_dtype=out_dtype, fp8_format=fmt)
    assert grads.api == "aclnnFlashAttentionScoreGradV4"
    _check(grads, golden, out_dtype)


def test_numpy_codes_float16_and_bfloat16_outputs():
    for out_dtype, code in ((torch.float16, 0), (torch.bfloat16, 1)):
        codes, scales, scale, attention_in, stats, golden = _problem("e4m3fn", out_dtype, 4)
        attention = attention_in.numpy() if out_dtype == torch.float16 else gradkit.as_bf16(
            attention_in.view(torch.int16).numpy().view(np.uint16))
        grads = ops.flash_attention_score_grad(
            *[c.numpy() for c in codes], 2, "BNSD", stats[0].numpy(), stats[1].numpy(), attention, scale=scale,
            d_scale_q=scales[0].numpy(), d_scale_k=scales[1].numpy(), d_scale_v=scales[2].numpy(),
            d_scale_dy=scales[3].numpy(), out_dtype=code, fp8_format="e4m3fn")
        assert grads.dq.dtype == (np.float16 if code == 0 else np.uint16)
        _check(grads, golden, out_dtype)


def test_fp8_arguments_are_checked():
    codes, scales, scale, attention_in, stats, _ = _problem("e5m2", torch.float16, 5)
    with pytest.raises(ValueError, match="fp8_format"):  # uint8 codes without their format
        ops.flash_attention_score_grad(*codes, 2, "BNSD", stats[0], stats[1], attention_in, scale=scale,
                                       d_scale_q=scales[0], d_scale_k=scales[1], d_scale_v=scales[2],
                                       d_scale_dy=scales[3])
    with pytest.raises(TypeError, match="uint8"):  # float inputs are no fp8 codes
        ops.flash_attention_score_grad(*[c.float() for c in codes], 2, "BNSD", stats[0], stats[1], attention_in,
                                       scale=scale, d_scale_q=scales[0], fp8_format="e5m2")
    with pytest.raises(gradkit.AclnnError, match="dScaleK"):  # the operator names the missing scale
        ops.flash_attention_score_grad(*codes, 2, "BNSD", stats[0], stats[1], attention_in, scale=scale,
                                       d_scale_q=scales[0], d_scale_v=scales[2], d_scale_dy=scales[3],
                                       fp8_format="e5m2")
