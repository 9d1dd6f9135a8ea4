"""mHC against PyTorch (Debian's torch 1.13). The forward of spec mhc.md section 7, written below in torch and run
in fp64 with autograd, is the reference for aclnnMhcPre (its outputs) and for aclnnMhcPreBackward (the gradients
of x, phi, alpha, bias and gamma). Our backward is fed with our own aclnnMhcPre caches, as in a training step.

Precision gates (docs/mhc.md, "How it is verified"):
- 16-bit outputs (hIn, gradX) are computed in fp32 and rounded once. Each element must lie within one ulp of the
  16-bit type of the fp64 value (half an ulp of rounding, the rest for fp32 noise near a rounding boundary), plus
  1e-6 of the tensor's largest value for elements that cancel to near zero; and at least 99% of the elements must
  equal the fp64 value rounded to the type, which a second rounding or a 16-bit intermediate would break.
- fp32 outputs: normwise relative error ||ours - ref|| / ||ref|| <= 1e-5. fp32 carries 2^-24 = 6e-8; the sums run
  over at most a few thousand terms and their inputs (the fp32 caches) carry a few roundings each, which gives
  errors of order 1e-7. 1e-5 keeps a margin of about 100 over that, yet is below the effect of HF32 operands
  (2^-12 = 2.4e-4 per operand, about 1e-4 normwise) and far below any wrong term in a formula.
- grad_alpha (three sums over every token and column, whose terms cancel: its normwise error reached 1.3e-5 on some
  inputs) is judged per element against the sum of its terms' magnitudes instead: |ours - ref| <= 1e-6 sum |terms|
  (fp32 accumulation gives about 1e-7 of it: the worst of 720 random problems was 9.9e-8).
- V2 with opImplMode 1 is compared with the same torch forward whose matmul operands (x * gamma and phi; in the
  backward dm and phi, dm and x * gamma) are rounded to HF32 (11 explicit mantissa bits, ties away from zero)
  with the same fp32 gate, and must miss the plain fp32 reference by more than that gate.
"""
import pytest
import torch

from gradkit_ctypes import AclnnError, load_library, mhc_pre, mhc_pre_backward
from seeds import stable_seed

LIB = load_library()
NORM_EPS = 1e-6
HC_EPS = 1e-6
FP32_RTOL = 1e-5
SUM_RTOL = 1e-6
D = 64  # the smallest hidden size the Ascend950 profile accepts (a multiple of 64)


def round_to_hf32(values):
    """fp64 or fp32 values -> fp32, then to HF32: 11 explicit mantissa bits, ties away from zero (spec mhc.md 6).
    Adding half of the 12 dropped bits to the sign-magnitude pattern and truncating rounds the magnitude."""
    bits = values.float().contiguous().view(torch.int32)
    return ((bits + 0x800) & ~0xFFF).view(torch.float32).double()


class Hf32Matmul(torch.autograd.Function):
    """h_mix = xg @ phi^T with both operands rounded to HF32 and exact accumulation; the backward rounds the operands
    of its two matmuls (dm @ phi and dm^T @ xg) the same way, as the op does with opImplMode 1."""

    @staticmethod
    def forward(ctx, xg, phi):
        ctx.save_for_backward(xg, phi)
        return round_to_hf32(xg) @ round_to_hf32(phi).T

    @staticmethod
    def backward(ctx, dm):
        xg, phi = ctx.saved_tensors
        dm = round_to_hf32(dm)
        return dm @ round_to_hf32(phi), dm.T @ round_to_hf32(xg)


def torch_forward(x, phi, alpha, bias, gamma, hf32=False):
    """Spec mhc.md section 7 on fp64 tensors (x [..., N, D]); returns h_in, h_post, h_res, inv_rms, h_mix, h_pre."""
    lead, (n, d) = x.shape[:-2], x.shape[-2:]
    xf = x.reshape(-1, n, d)  # one view of x used by all three paths, so autograd adds their gradients
    tokens = xf.shape[0]
    xflat = xf.reshape(tokens, n * d)
    inv_rms = torch.rsqrt(xflat.pow(2).mean(-1) + NORM_EPS)  # raw x: gamma is not part of the RMS
    xg = xflat if gamma is None else xflat * gamma.reshape(-1)
    h_mix = Hf32Matmul.apply(xg, phi) if hf32 else xg @ phi.T
    w = h_mix * inv_rms[:, None]
    # The pre-activations alpha_k * w_k + bias_k of the three maps (returned with w: the terms of grad_alpha).
    pre = [w[:, :n] * alpha[0] + bias[:n], w[:, n:2 * n] * alpha[1] + bias[n:2 * n], w[:, 2 * n:] * alpha[2] +
           bias[2 * n:]]
    h_pre = torch.sigmoid(pre[0]) + HC_EPS
    h_post = 2 * torch.sigmoid(pre[1])
    h_res = pre[2]
    if h_res.shape[1] == n * n:
        h_res = h_res.reshape(tokens, n, n)
    h_in = (h_pre[:, :, None] * xf).sum(1)
    return {"h_in": h_in.reshape(*lead, d), "h_post": h_post.reshape(*lead, n),
            "h_res": h_res.reshape(*lead, *h_res.shape[1:]), "inv_rms": inv_rms.reshape(lead),
            "h_mix": h_mix.reshape(*lead, -1), "h_pre": h_pre.reshape(*lead, n),
            "pre": pre, "w": [w[:, :n], w[:, n:2 * n], w[:, 2 * n:]]}


def make_problem(dtype, layout, n, with_gamma, seed):
    """Random inputs: x in [-1, 1] (16-bit), phi scaled by 1/sqrt(N*D) so that the pre-activations are of order 1."""
    generator = torch.Generator().manual_seed(seed)

    def uniform(shape, low, high):
        return torch.rand(shape, generator=generator, dtype=torch.float64) * (high - low) + low

    k, rows = n * D, n * n + 2 * n
    lead = [40] if layout == "TND" else [2, 20]
    return {"x": uniform(lead + [n, D], -1, 1).to(dtype),
            "phi": (uniform([rows, k], -1, 1) / k**0.5).float(),
            "alpha": torch.tensor([0.8, 1.1, 0.9]),
            "bias": uniform([rows], -0.5, 0.5).float(),
            "gamma": uniform([n, D], 0.5, 1.5).float() if with_gamma else None,
            "grad_h_in": uniform(lead + [D], -1, 1).to(dtype),
            "grad_h_post": uniform(lead + [n], -1, 1).float(),
            "grad_h_res": uniform(lead + [n, n], -1, 1).float(),
            "grad_x_post": uniform(lead + [n, D], -0.25, 0.25).to(dtype)}


def reference(p, with_post, hf32=False):
    """The torch forward in fp64 and, by autograd, the five gradients the backward must produce."""
    leaves = {k: None if p[k] is None else p[k].double().requires_grad_() for k in ("x", "phi", "alpha", "bias",
                                                                                    "gamma")}
    out = torch_forward(leaves["x"], leaves["phi"], leaves["alpha"], leaves["bias"], leaves["gamma"], hf32)
    outputs = [out["h_in"], out["h_post"], out["h_res"]]
    output_grads = [p["grad_h_in"].double(), p["grad_h_post"].double(), p["grad_h_res"].double()]
    # grad_alpha[k] = sum over tokens and columns of dL/dpre_k * w_k: the sum of the absolute terms scales its check.
    grad_pre = torch.autograd.grad(outputs, out["pre"], output_grads, retain_graph=True)
    alpha_terms = torch.stack([(g * w).abs().sum() for g, w in zip(grad_pre, out["w"])]).detach()
    torch.autograd.backward(outputs, output_grads)
    grads = {"grad_x": leaves["x"].grad + (p["grad_x_post"].double() if with_post else 0),
             "grad_phi": leaves["phi"].grad, "grad_alpha": leaves["alpha"].grad, "grad_bias": leaves["bias"].grad,
             "grad_gamma": None if p["gamma"] is None else leaves["gamma"].grad, "alpha_terms": alpha_terms}
    return {k: v.detach() for k, v in out.items() if k not in ("pre", "w")}, grads


def ours(p, with_post, op_impl_mode=None):
    forward = mhc_pre(LIB, p["x"], p["phi"], p["alpha"], p["bias"], p["gamma"], NORM_EPS, HC_EPS, op_impl_mode)
    backward = mhc_pre_backward(LIB, p["x"], p["phi"], p["alpha"], p["grad_h_in"], p["grad_h_post"],
                                p["grad_h_res"], forward["inv_rms"], forward["h_mix"], forward["h_pre"],
                                forward["h_post"], p["gamma"], p["grad_x_post"] if with_post else None, HC_EPS,
                                op_impl_mode)
    return forward, backward


def normwise_error(got, expected):
    return ((got.double() - expected).norm() / expected.norm()).item()


def assert_fp32_close(name, got, expected):
    error = normwise_error(got, expected)
    assert error <= FP32_RTOL, f"{name}: normwise relative error {error:.3g} > {FP32_RTOL}"


def ulp(values, dtype):
    """The spacing of `dtype` (bfloat16 or float16) at |values| (fp64)."""
    mantissa_bits, min_exponent = (7, -126) if dtype == torch.bfloat16 else (10, -14)
    _, exponent = torch.frexp(values.abs())  # |v| = m * 2^exponent, 0.5 <= m < 1
    return torch.pow(2.0, (torch.clamp(exponent - 1, min=min_exponent) - mantissa_bits).double())


def assert_rounded_once(name, got, expected):
    dtype = got.dtype
    error = (got.double() - expected).abs()
    tolerance = ulp(expected, dtype) + 1e-6 * expected.abs().max()
    worst = (error / tolerance).max().item()
    assert worst <= 1, f"{name}: an element is {worst:.3g} tolerances (1 ulp) away from the fp64 value"
    same = (got == expected.float().to(dtype)).double().mean().item()
    assert same >= 0.99, f"{name}: only {same:.2%} of the elements equal the fp64 value rounded to {dtype}"


def check_forward(got, expected):
    assert_rounded_once("hIn", got["h_in"], expected["h_in"])
    for key in ("h_post", "h_res", "inv_rms", "h_mix", "h_pre"):
        assert got[key].shape == expected[key].shape, key
        assert_fp32_close(key, got[key], expected[key])


def assert_sum_close(name, got, expected, terms):
    """Each element of a long signed sum within SUM_RTOL of the sum of its terms' magnitudes (fp64 `terms`)."""
    worst = ((got.double() - expected).abs() / terms).max().item()
    assert worst <= SUM_RTOL, f"{name}: an element misses by {worst:.3g} of the sum of its terms' magnitudes"


def check_backward(got, expected):
    assert_rounded_once("gradX", got["grad_x"], expected["grad_x"])
    for key in ("grad_phi", "grad_bias", "grad_gamma"):
        if expected[key] is None:
            assert got[key] is None
            continue
        assert_fp32_close(key, got[key], expected[key])
    assert_sum_close("grad_alpha", got["grad_alpha"], expected["grad_alpha"], expected["alpha_terms"])


@pytest.mark.parametrize("with_post", [True, False], ids=["gradXPost", "noGradXPost"])
@pytest.mark.parametrize("with_gamma", [True, False], ids=["gamma", "noGamma"])
@pytest.mark.parametrize("n", [4, 6, 8], ids=lambda n: f"N{n}")
@pytest.mark.parametrize("layout", ["TND", "BSND"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_forward_and_gradients_match_torch_fp64(dtype, layout, n, with_gamma, with_post):
    p = make_problem(dtype, layout, n, with_gamma, seed=stable_seed(dtype, layout, n, with_gamma))
    expected_forward, expected_grads = reference(p, with_post)
    got_forward, got_grads = ours(p, with_post)
    check_forward(got_forward, expected_forward)
    check_backward(got_grads, expected_grads)


def test_v2_mode_0_is_v1_bit_for_bit():
    p = make_problem(torch.bfloat16, "TND", 4, True, seed=5)
    v1_forward, v1_grads = ours(p, True)
    v2_forward, v2_grads = ours(p, True, op_impl_mode=0)
    for key, value in list(v1_forward.items()) + list(v1_grads.items()):
        assert torch.equal(value, (v2_forward | v2_grads)[key]), key


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_v2_hf32_matches_hf32_emulating_torch(dtype):
    p = make_problem(dtype, "BSND", 4, True, seed=11)
    expected_forward, expected_grads = reference(p, True, hf32=True)
    got_forward, got_grads = ours(p, True, op_impl_mode=1)
    check_forward(got_forward, expected_forward)
    check_backward(got_grads, expected_grads)
    # HF32 is really applied: the plain fp32 reference is farther away than the gate.
    plain_forward, plain_grads = reference(p, True, hf32=False)
    assert normwise_error(got_forward["h_mix"], plain_forward["h_mix"]) > FP32_RTOL
    assert normwise_error(got_grads["grad_phi"], plain_grads["grad_phi"]) > FP32_RTOL


def test_backward_without_gamma_leaves_the_grad_gamma_buffer_untouched():
    # DECISIONS.md: gamma null with a gradGamma buffer -> gradGamma is not written (as upstream).
    p = make_problem(torch.bfloat16, "TND", 4, False, seed=3)
    forward = mhc_pre(LIB, p["x"], p["phi"], p["alpha"], p["bias"], None, NORM_EPS, HC_EPS)
    buffer = torch.full((4, D), 7.0)
    grads = mhc_pre_backward(LIB, p["x"], p["phi"], p["alpha"], p["grad_h_in"], p["grad_h_post"], p["grad_h_res"],
                             forward["inv_rms"], forward["h_mix"], forward["h_pre"], forward["h_post"], None, None,
                             HC_EPS, grad_gamma_buffer=buffer)
    assert grads["grad_gamma"] is buffer
    assert torch.equal(buffer, torch.full((4, D), 7.0))
    _, expected = reference(p, False)
    assert_fp32_close("grad_phi", grads["grad_phi"], expected["grad_phi"])


@pytest.mark.parametrize("case, argument", [
    ("op_impl_mode", "opImplMode"),
    ("x_dtype", "x"),
    ("streams", "x"),
])
def test_errors_raise_with_status_and_message(case, argument):
    p = make_problem(torch.bfloat16, "TND", 4, True, seed=1)
    mode = None
    if case == "op_impl_mode":
        mode = 2
    elif case == "x_dtype":
        p["x"] = p["x"].float()
    else:  # N = 5: the Ascend950 profile accepts N in {4, 6, 8}
        p["x"] = torch.zeros(40, 5, D, dtype=torch.bfloat16)
        p["phi"] = torch.zeros(35, 5 * D)
        p["bias"] = torch.zeros(35)
        p["gamma"] = torch.ones(5, D)
    with pytest.raises(AclnnError) as raised:
        mhc_pre(LIB, p["x"], p["phi"], p["alpha"], p["bias"], p["gamma"], NORM_EPS, HC_EPS, mode)
    assert raised.value.status == 161002
    assert f"argument '{argument}'" in raised.value.message, raised.value.message
    assert raised.value.message.startswith("aclnnMhcPre"), raised.value.message
