"""gradkit.flash_attention and the raw flash attention operators against attention written in torch (Debian's torch
1.13): gradkit.reference.flash_attention, the math path of spec fag.md 1.2 (scores, pse, mask, softmax, dropout keep
mask, @ value) evaluated in fp64 and differentiated by autograd, is the reference for the forward (attention_out and
the softmax statistics) and for dq / dk / dv from the same output gradient. Our backward is fed our own forward's
attention_out and statistics, as in a training step. Found from the build tree by tests/python/gradkit_package.py;
skipped without the module.

Covered: every layout (BNSD, BSND, BSH, SBH, TND with a zero-length batch), GQA and MQA, D != D_V, fp32 and bf16,
causal masks (sparse modes 2 and 3), full masks (mode 0, [B, 1, S1, S2]), pse types 0 / 1 (tensor) and 2 (ALiBi
slopes), dropout with a packed mask and with the Philox stream (the reference draws the keep mask with its own numpy
Philox4x32-7, checked against spec fag.md 3.6), the "same_as_input" TND statistics, torch_npu's names, errors.

Precision gates (normwise: ||ours - ref|| / ||ref|| over the tensor):
- fp32 (fp32 inputs, fp32 arithmetic): attention_out, dq, dk, dv <= 1e-5 (measured 1e-7 to 2.4e-7: a softmax and
  dot products of D + S2 terms, each an fp32 rounding of 6e-8 relative on values of order one; the backward's sums
  also carry the forward's rounding through attention_out). A wrong mask, pse order, scale, group mapping or
  dropout element is of order one.
- bf16 (inputs rounded to bf16 before the reference sees them, so both start from the same values): attention_out
  <= 2^-8 (the output is rounded once to bf16: about 2^-9 relative per element, measured 1.5e-3 to 1.7e-3); dq, dk,
  dv <= 2^-7, the experimental threshold of spec dropout_threshold.md 3.2 for bf16 (DECISIONS.md "Precision
  gates"): besides the final rounding they inherit the bf16-rounded attention_out through Drow = rowsum(dY * O) and
  may round P and dS to bf16 before their products, as the NPU does (measured 1.6e-3 to 2.4e-3).
- softmax_max / softmax_sum (fp32 in every case): <= 1e-5 relative elementwise (fully masked rows: -FLT_MAX and
  +FLT_MAX exactly, spec fag.md 2.12).
"""
import math

import numpy as np
import pytest
import torch


from gradkit_package import PYTHON_DIR  # noqa: E402,F401  (puts the package on sys.path, or skips this module)

import gradkit  # noqa: E402
from gradkit import reference  # noqa: E402

OUT_GATE = {torch.float32: 1e-5, torch.bfloat16: 2.0**-8}
GRAD_GATE = {torch.float32: 1e-5, torch.bfloat16: 2.0**-7}
FLT_MAX = float(np.finfo(np.float32).max)


def normwise(ours, ref):
    ref = ref.double()
    return float((ours.double() - ref).norm() / ref.norm().clamp_min(1e-300))


def layout_tensor(layout, batch, heads, seq, dim, lengths=None, generator=None):
    """A random tensor of the layout's shape (TND: the tokens of `lengths`), values in [-2, 2)."""
    shape = {"BNSD": (batch, heads, seq, dim), "BSND": (batch, seq, heads, dim), "BSH": (batch, seq, heads * dim),
             "SBH": (seq, batch, heads * dim), "TND": (sum(lengths or []), heads, dim)}[layout]
    return torch.rand(shape, generator=generator, dtype=torch.float64) * 4 - 2


class Problem:
    """One call: inputs (rounded to the dtype), keywords for gradkit and for the reference."""

    def __init__(self, layout, dtype, *, batch=2, n1=4, n2=2, s1=24, s2=40, d=16, dv=16, seq_q=None, seq_kv=None,
                 seed=0):
        gen = torch.Generator().manual_seed(seed)
        self.layout, self.dtype, self.n1 = layout, dtype, n1
        self.q = layout_tensor(layout, batch, n1, s1, d, seq_q, gen).to(dtype)
        self.k = layout_tensor(layout, batch, n2, s2, d, seq_kv, gen).to(dtype)
        self.v = (layout_tensor(layout, batch, n2, s2, dv, seq_kv, gen) / 2).to(dtype)
        self.seq = {}
        if layout == "TND":
            self.seq = dict(actual_seq_qlen=np.cumsum(seq_q).tolist(), actual_seq_kvlen=np.cumsum(seq_kv).tolist())
        self.q_lens, self.kv_lens = reference.fa_lengths(self.q, self.k, layout, self.seq.get("actual_seq_qlen"),
                                                         self.seq.get("actual_seq_kvlen"))
        self.scale = 1.0 / math.sqrt(d)
        self.gen = gen

    def leaves(self):
        return [t.clone().requires_grad_() for t in (self.q, self.k, self.v)]

    def ref_leaves(self):
        return [t.double().requires_grad_() for t in (self.q, self.k, self.v)]


def check_forward_backward(p, *, ref_keep=None, keep_prob=1.0, **kwargs):
    """gradkit.flash_attention forward and backward against the fp64 reference; returns the measured errors."""
    q, k, v = p.leaves()
    out = gradkit.flash_attention(q, k, v, p.n1, p.layout, scale=p.scale, keep_prob=keep_prob, **p.seq, **kwargs)
    ref_kwargs = {key: value for key, value in kwargs.items() if key in ("pse", "atten_mask", "sparse_mode",
                                                                          "pre_tokens", "next_tokens", "pse_type")}
    rq, rk, rv = p.ref_leaves()
    expected = reference.flash_attention(rq, rk, rv, p.n1, p.layout, scale=p.scale, keep=ref_keep,
                                         keep_prob=keep_prob, **p.seq, **ref_kwargs)
    assert out.dtype == p.dtype and out.shape == expected.shape
    dy = (torch.rand(out.shape, generator=p.gen, dtype=torch.float64) * 2 - 1).to(p.dtype)
    out.backward(dy)
    expected.backward(dy.double())
    errors = {"out": normwise(out.detach(), expected.detach())}
    assert errors["out"] <= OUT_GATE[p.dtype], errors
    for name, ours, ref in (("dq", q.grad, rq.grad), ("dk", k.grad, rk.grad), ("dv", v.grad, rv.grad)):
        assert ours.dtype == p.dtype and ours.shape == ref.shape
        errors[name] = normwise(ours, ref)
        assert errors[name] <= GRAD_GATE[p.dtype], (name, errors)
    return errors


CASES = [  # layout, sizes, keywords
    ("BNSD", {}, dict(sparse_mode=3)),
    ("BSND", dict(dv=8), {}),
    ("BSH", dict(n2=1), dict(sparse_mode=2)),
    ("SBH", dict(s1=40), dict(sparse_mode=3)),
    ("TND", dict(seq_q=[7, 0, 17], seq_kv=[9, 5, 17], n2=1, batch=3), dict(sparse_mode=3)),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("layout,sizes,kwargs", CASES, ids=[c[0] for c in CASES])
def test_forward_and_gradients_match_the_fp64_reference(dtype, layout, sizes, kwargs):
    p = Problem(layout, dtype, seed=len(layout), **sizes)
    if "sparse_mode" in kwargs:
        kwargs = dict(kwargs, atten_mask=gradkit.flash_attention_causal_mask())
    check_forward_backward(p, **kwargs)


def test_raw_forward_statistics_and_entry_points():
    """softmax_max / softmax_sum are the reference's row max and sum, 8 equal lanes; TND default statistics are
    per-batch [N1][S1_b] blocks, "same_as_input" ones token-major; fully masked rows carry -FLT_MAX / +FLT_MAX."""
    p = Problem("BSND", torch.float32, s1=40, s2=24, seed=3)
    mask = gradkit.flash_attention_causal_mask()
    res = gradkit.ops.flash_attention_score(p.q, p.k, p.v, p.n1, "BSND", scale=p.scale, atten_mask=mask,
                                            sparse_mode=3)
    assert res.api == "aclnnFlashAttentionScoreV2"
    _, maxes, sums = reference.flash_attention(p.q, p.k, p.v, p.n1, "BSND", scale=p.scale, atten_mask=mask,
                                               sparse_mode=3, statistics=True)
    assert torch.equal(res.softmax_max, res.softmax_max[..., :1].expand_as(res.softmax_max))
    for b in range(2):
        m, s = res.softmax_max[b, :, :, 0].double(), res.softmax_sum[b, :, :, 0].double()
        invalid = torch.isinf(maxes[b])  # rows i < S1 - S2 see no column under rightDownCausal with S1 > S2
        assert invalid.any() and (~invalid).any()
        assert torch.all(m[invalid] == -FLT_MAX) and torch.all(s[invalid] == FLT_MAX)
        assert torch.allclose(m[~invalid], maxes[b][~invalid], rtol=1e-5, atol=1e-6)
        assert torch.allclose(s[~invalid], sums[b][~invalid], rtol=1e-5)
    assert torch.all(res.attention_out[:, :16] == 0)  # invalid rows: output 0

    t = Problem("TND", torch.float32, seq_q=[5, 11], seq_kv=[7, 11], batch=2, seed=4)
    plain = gradkit.ops.flash_attention_score(t.q, t.k, t.v, t.n1, "TND", scale=t.scale, **t.seq)
    same = gradkit.ops.flash_attention_score(t.q, t.k, t.v, t.n1, "TND", scale=t.scale, softmax_layout="same_as_input",
                                             **t.seq)
    assert (plain.api, same.api) == ("aclnnFlashAttentionVarLenScoreV2", "aclnnFlashAttentionVarLenScoreV4")
    assert torch.equal(plain.attention_out, same.attention_out)
    _, maxes, _ = reference.flash_attention(t.q, t.k, t.v, t.n1, "TND", scale=t.scale, statistics=True, **t.seq)
    per_batch = torch.cat([m.reshape(-1) for m in maxes])  # [N1][S1_b] blocks in batch order
    assert torch.allclose(plain.softmax_max[..., 0].reshape(-1).double(), per_batch, rtol=1e-5)
    token_major = torch.cat([m.transpose(0, 1) for m in maxes])  # [T1, N1]
    assert torch.allclose(same.softmax_max[..., 0].double(), token_major, rtol=1e-5)
    grads = gradkit.ops.flash_attention_score_grad(t.q, t.k, t.v, same.attention_out, t.n1, "TND", same.softmax_max,
                                                   same.softmax_sum, same.attention_out, scale=t.scale,
                                                   softmax_layout="same_as_input", **t.seq)
    assert grads.api == "aclnnFlashAttentionUnpaddingScoreGradV4"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_full_mask_and_pse(dtype):
    """A [B, 1, S1, S2] bool mask (sparse mode 0) with a BNSS pse added before the scale (pse_type 1), a BN1S pse
    added after it (pse_type 0), and generated ALiBi from slopes (pse_type 2, S1 == S2)."""
    p = Problem("BNSD", dtype, s1=24, s2=24, seed=5)
    mask = torch.rand(2, 1, 24, 24, generator=p.gen) < 0.25
    pse = (torch.rand(2, 4, 24, 24, generator=p.gen, dtype=torch.float64) * 2 - 1).to(dtype)
    check_forward_backward(p, atten_mask=mask, pse=pse, pse_type=1)
    pse_row = (torch.rand(2, 4, 1, 24, generator=p.gen, dtype=torch.float64) * 2 - 1).to(dtype)
    check_forward_backward(p, atten_mask=mask, pse=pse_row, pse_type=0)
    slopes = torch.tensor([0.5, 0.25, 0.125, 0.0625], dtype=torch.float32)
    check_forward_backward(p, pse=slopes, pse_type=2)


def test_philox_stream_matches_the_worked_values():
    """The reference's own Philox4x32-7 stream: spec fag.md 3.6 (seed 2, offset 0)."""
    stream = reference.fa_philox_bytes(2, 0, 32)
    assert bytes(stream[:16]).hex() == "6230cfaf399c53f67a471d9b81a3ce89"
    assert bytes(stream[16:]).hex() == "ee95467549627a88614a76c59e6cf51a"
    keep = reference.fa_philox_keep(2, 0, 0.9, 1, [1], [32])[0].reshape(-1)
    assert "".join("1" if x else "0" for x in keep.tolist()) == "11111110111111110111111111111101"


@pytest.mark.parametrize("layout,sizes", [("BSH", {}), ("TND", dict(seq_q=[6, 13], seq_kv=[19, 13], batch=2))],
                         ids=["BSH", "TND"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_philox_dropout_forward_and_backward_use_the_same_mask(layout, sizes, dtype):
    """keep_prob < 1 without a mask: the forward (ScoreV4) and the backward (GradV4) draw the Philox keep mask of
    (seed, offset) (rows padded to 16 bytes, spec fag.md 3.4); the reference draws it with its own stream."""
    p = Problem(layout, dtype, seed=6, **sizes)
    seed, offset, keep_prob = 1234567, 32, 0.8
    keep = reference.fa_philox_keep(seed, offset, keep_prob, p.n1, p.q_lens, p.kv_lens)
    kept = torch.cat([k.reshape(-1) for k in keep]).double().mean().item()
    assert 0.7 < kept < 0.9  # (T + 1) / 256 = 0.80
    check_forward_backward(p, ref_keep=keep, keep_prob=keep_prob, seed=seed, offset=offset)
    raw = gradkit.ops.flash_attention_score(p.q, p.k, p.v, p.n1, layout, scale=p.scale, keep_prob=keep_prob,
                                            seed=seed, offset=offset, **p.seq)
    assert raw.api == "aclnnFlashAttentionScoreV4" and (raw.seed, raw.offset) == (seed, offset)
    again = gradkit.ops.flash_attention_score(p.q, p.k, p.v, p.n1, layout, scale=p.scale, keep_prob=keep_prob,
                                              seed=seed, offset=offset + 16, **p.seq)
    assert not torch.equal(raw.attention_out, again.attention_out)  # the next block of the stream


def test_packed_drop_mask():
    """An external packed keep mask (GradV2 path): element ((b*N1 + n)*S1 + i)*S2 + j, LSB first."""
    p = Problem("SBH", torch.float32, seed=7)
    numel = 2 * 4 * 24 * 40
    drop_mask = torch.randint(0, 256, ((numel + 7) // 8,), generator=p.gen, dtype=torch.uint8)
    keep = reference.fa_unpack_drop_mask(drop_mask, p.n1, p.q_lens, p.kv_lens)
    check_forward_backward(p, ref_keep=keep, keep_prob=0.5, drop_mask=drop_mask)


def test_reference_gradcheck_fp64():
    """The reference itself against finite differences (torch.autograd.gradcheck) with a mask, a pse and dropout,
    so that the gradients above compare with true derivatives. The operators take no fp64: they are checked
    against this reference."""
    p = Problem("BSND", torch.float64, batch=1, n1=2, n2=1, s1=5, s2=6, d=4, dv=3, seed=8)
    mask = torch.rand(5, 6, generator=p.gen) < 0.3
    pse = torch.rand(1, 2, 5, 6, generator=p.gen, dtype=torch.float64)
    keep = [torch.rand(2, 5, 6, generator=p.gen) < 0.8]

    def f(q, k, v):
        return reference.flash_attention(q, k, v, 2, "BSND", scale=0.7, atten_mask=mask, pse=pse, keep=keep,
                                         keep_prob=0.8)

    assert torch.autograd.gradcheck(f, tuple(p.ref_leaves()))


def test_torch_npu_names_round_trip():
    """gradkit.torch_npu.npu_fusion_attention / npu_fusion_attention_grad: torch_npu's arguments and returns,
    the same values as gradkit.flash_attention."""
    p = Problem("BSND", torch.bfloat16, seed=9)
    mask = gradkit.flash_attention_causal_mask()
    out, m, s, softmax_out, seed, offset, numels = gradkit.torch_npu.npu_fusion_attention(
        p.q, p.k, p.v, p.n1, "BSND", atten_mask=mask, scale=p.scale, sparse_mode=3)
    assert softmax_out.numel() == 0 and (seed, offset, numels) == (0, 0, 0)
    dy = torch.rand(out.shape, generator=p.gen).to(torch.bfloat16)
    dq, dk, dv, dpse = gradkit.torch_npu.npu_fusion_attention_grad(
        p.q, p.k, p.v, dy, p.n1, "BSND", atten_mask=mask, softmax_max=m, softmax_sum=s, attention_in=out,
        scale_value=p.scale, sparse_mode=3)
    assert dpse.numel() == 0
    q, k, v = p.leaves()
    ours = gradkit.flash_attention(q, k, v, p.n1, "BSND", atten_mask=mask, sparse_mode=3)
    ours.backward(dy)
    assert torch.equal(ours, out) and torch.equal(q.grad, dq) and torch.equal(k.grad, dk) and torch.equal(v.grad, dv)

    # Dropout: seed / offset / numels name the mask the grad draws again.
    out, m, s, _, seed, offset, numels = gradkit.torch_npu.npu_fusion_attention(
        p.q, p.k, p.v, p.n1, "BSND", scale=p.scale, keep_prob=0.9)
    assert numels == 2 * 4 * 24 * 40 and seed != 0
    grads = gradkit.torch_npu.npu_fusion_attention_grad(
        p.q, p.k, p.v, dy, p.n1, "BSND", softmax_max=m, softmax_sum=s, attention_in=out, scale_value=p.scale,
        keep_prob=0.9, seed=seed, offset=offset, numels=numels)
    q, k, v = p.leaves()
    ours = gradkit.flash_attention(q, k, v, p.n1, "BSND", keep_prob=0.9, seed=seed, offset=offset)
    ours.backward(dy)
    assert torch.equal(ours, out) and torch.equal(q.grad, grads[0]) and torch.equal(v.grad, grads[2])


def test_torch_npu_v2_names_carry_pse_type_and_start_indices():
    """npu_fusion_attention_v2 / npu_fusion_attention_grad_v2: pre_tokens / next_tokens, pse_type 2 (ALiBi slopes)
    with q_start_idx / kv_start_idx give gradkit.flash_attention's values with the same options."""
    p = Problem("BNSD", torch.float32, seed=11, s1=24, s2=24)  # generated biases need S1 == S2
    slopes = torch.tensor([0.25, 0.125, 0.5, 0.0625], dtype=torch.float32)[:p.n1]
    options = dict(pse=slopes, pse_type=2, q_start_idx=[3], kv_start_idx=[1])
    out, m, s, _, _, _, _ = gradkit.torch_npu.npu_fusion_attention_v2(
        p.q, p.k, p.v, p.n1, "BNSD", scale=p.scale, pre_tokens=2147483647, next_tokens=2147483647, **options)
    dy = torch.rand(out.shape, generator=p.gen)
    dq, dk, dv, _ = gradkit.torch_npu.npu_fusion_attention_grad_v2(
        p.q, p.k, p.v, dy, p.n1, "BNSD", softmax_max=m, softmax_sum=s, attention_in=out, scale_value=p.scale,
        **options)
    q, k, v = p.leaves()
    ours = gradkit.flash_attention(q, k, v, p.n1, "BNSD", scale=p.scale, **options)
    ours.backward(dy)
    assert torch.equal(ours, out) and torch.equal(q.grad, dq) and torch.equal(k.grad, dk) and torch.equal(v.grad, dv)
    # The bias is really applied: without it the output differs.
    plain = gradkit.torch_npu.npu_fusion_attention_v2(p.q, p.k, p.v, p.n1, "BNSD", scale=p.scale)[0]
    assert not torch.equal(plain, out)


def test_autograd_attributes_strides_and_errors():
    assert gradkit.flash_attention.Function is gradkit.autograd.FlashAttentionFunction
    assert gradkit.flash_attention.forward_op is gradkit.ops.flash_attention_score
    assert gradkit.flash_attention.backward_op is gradkit.ops.flash_attention_score_grad
    p = Problem("BNSD", torch.float32, seed=10)
    # Strided inputs (a transposed BSND view read as BNSD) give the contiguous inputs' bits.
    views = [t.transpose(1, 2).contiguous().transpose(1, 2) for t in (p.q, p.k, p.v)]
    assert not views[0].is_contiguous()
    plain = gradkit.ops.flash_attention_score(p.q, p.k, p.v, 4, "BNSD", scale=p.scale)
    viewed = gradkit.ops.flash_attention_score(*views, 4, "BNSD", scale=p.scale)
    assert torch.equal(plain.attention_out, viewed.attention_out)
    with pytest.raises(gradkit.AclnnError) as error:  # headNum must equal query's N
        gradkit.ops.flash_attention_score(p.q, p.k, p.v, 3, "BNSD", scale=p.scale)
    assert error.value.status == 161002 and "head" in error.value.message.lower()
    with pytest.raises(gradkit.AclnnError) as error:  # N1 % N2 != 0
        gradkit.ops.flash_attention_score(p.q, p.k[:, :1].expand(2, 3, 40, 16), p.v[:, :1].expand(2, 3, 40, 16), 4,
                                          "BNSD", scale=p.scale)
    assert error.value.status == 161002
    with pytest.raises(ValueError):  # dropout in the backward needs the forward's seed
        gradkit.ops.flash_attention_score_grad(p.q, p.k, p.v, plain.attention_out, 4, "BNSD", plain.softmax_max,
                                               plain.softmax_sum, plain.attention_out, keep_prob=0.9)
