"""gradkit.mhc_pre_sinkhorn (aclnnMhcPreSinkhorn / aclnnMhcPreSinkhornBackward) against fp64 torch autograd of the
reference formula (gradkit.reference.mhc_pre_sinkhorn: reference.mhc_pre with HF32 matmul operands, then
reference.mhc_sinkhorn with eps = hc_eps), with Debian's torch 1.13 or a current one. Profiles: the default Ascend950
(TND and BSND, c = 4096 and 7168, a few tokens) in this process; Ascend910B (BSND only, c = 128 and 256) in a
subprocess, since the profile is fixed by a process's first call.

The reference models what each profile computes: the forward's matmul on operands rounded to HF32; the backward's
two matmuls on the fp32 operands (Ascend950) or on h_mix's gradient, phi and x all rounded to HF32 (Ascend910B:
reference hf32_backward=True). Measured over four seeds per case (bf16 and fp16):
- hin (16-bit): every element within 0.5 ulp of the fp64 value (+1e-6 of the largest), 99.7 % equal to the fp64
  value rounded. Gate: 1 ulp + 1e-6 of the largest, 99 % exact.
- grad_x (16-bit): within 0.5 ulp + 1e-5 of the largest (a plain fp32 torch computation of the formula: the same),
  99.2 % exact (the worst: an Ascend910B case where one element of h_mix's gradient lies within fp32 noise of an
  HF32 rounding boundary, so fp32 and fp64 round it apart; fp32 torch: the same 99.2 %). Gate: 1 ulp + 1e-5 of
  the largest, 98 % exact. (Modelling the Ascend950 backward with HF32 phi instead of fp32 phi, a wrong model,
  measured up to 3 ulp and 86 % exact.)
- h_post, h_res (fp32): normwise at most 1.0e-6, per element 7e-6 relative (K = n c = 16384 fp32 sums in h_mix;
  fp32 torch: 1.8e-6 normwise). Gate: 1e-5 normwise, 5e-5 per element.
- grad_phi, grad_alpha, grad_bias (fp32): normwise at most 6.6e-6 (grad_alpha, 3 elements), grad_phi 1.9e-6 on
  Ascend950 (fp32 torch: up to 1.7e-5 for grad_alpha, 1e-6 for grad_phi); Ascend910B 3e-8 .. 1e-6, 8.2e-6 for
  grad_phi in the boundary case above (fp32 torch: the same). Gate: 5e-5 normwise. Without the HF32 backward
  operands in the reference, Ascend910B's grad_phi misses by more than that (checked).
Also: the saved tensors against their formulas, need_backward=False / no_grad giving the same bits and keeping
nothing, the raw backward equal to autograd's (also with grad_h_res [.., n, n], strided and given outputs, numpy
arrays), outputs left out of the loss, cann_ops_transformer's names, the errors of bad calls, and (torch >= 2)
torch.func.grad and vmap."""
import os
import subprocess
import sys

import pytest
import torch

from gradkit_package import PYTHON_DIR

import gradkit  # noqa: E402
from gradkit import reference  # noqa: E402

HC_EPS = NORM_EPS = 1e-6
N = 4
ROWS = N * N + 2 * N
ITERS = 20
FP32_RTOL = 1e-5  # h_post, h_res normwise
FP32_ELEMENT_RTOL = 5e-5  # h_post, h_res per element
GRAD_RTOL = 5e-5  # grad_phi, grad_alpha, grad_bias normwise
HIN_FLOOR, GRAD_X_FLOOR = 1e-6, 1e-5  # of the tensor's largest value, added to the 1-ulp bound
HIN_EXACT, GRAD_X_EXACT = 0.99, 0.98  # fractions equal to the fp64 value rounded to the 16-bit type


def inputs(lead, c, dtype, seed):
    """x, phi (scaled so that h_mix is O(1)), alpha, bias, and the gradients of hin, h_post, h_res."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(*lead, N, c, generator=generator).to(dtype)
    phi = torch.randn(ROWS, N * c, generator=generator) * (N * c) ** -0.5
    alpha = torch.tensor([0.8, 1.1, 0.9]) + 0.1 * torch.randn(3, generator=generator)
    bias = 0.5 * torch.randn(ROWS, generator=generator)
    grads = (torch.randn(*lead, c, generator=generator).to(dtype), torch.randn(*lead, N, generator=generator),
             torch.randn(*lead, N * N, generator=generator))
    return (x, phi, alpha, bias), grads


def run_gradkit(ins, grads):
    """gradkit.mhc_pre_sinkhorn with autograd: the three outputs and the gradients of the four inputs."""
    leaves = [t.clone().requires_grad_() for t in ins]
    outs = gradkit.mhc_pre_sinkhorn(*leaves)
    torch.autograd.backward(outs, grads)
    return [o.detach() for o in outs], [t.grad for t in leaves]


def fp64_reference(ins, grads, hf32_backward=False):
    """The reference in fp64 with autograd: (fp64 hin before its rounding, h_post, h_res) and the four gradients."""
    leaves = [t.detach().double().requires_grad_() for t in ins]
    outs = reference.mhc_pre_sinkhorn(*leaves, compute=torch.float64, hf32_backward=hf32_backward)
    torch.autograd.backward([outs[0].double()] + list(outs[1:]), [g.double() for g in grads])
    with torch.no_grad():  # hin before it is rounded to x's dtype
        hin = reference.mhc_pre(*(t.double() for t in ins), None, NORM_EPS, HC_EPS, torch.float64, True)[0]
    return [hin, outs[1].detach(), outs[2].detach()], [t.grad for t in leaves]


def ulp(values, dtype):
    """One ulp of `dtype` at each |value| (the spacing above it), in fp64."""
    mantissa = 10 if dtype == torch.float16 else 7
    smallest = 2.0 ** -14 if dtype == torch.float16 else 2.0 ** -126
    exponent = torch.floor(torch.log2(values.abs().clamp_min(smallest)))
    return torch.pow(2.0, exponent - mantissa)


def normwise(got, expected):
    return ((got.double() - expected).norm() / expected.norm()).item()


def assert_16bit(got, expected, name, floor, exact):
    error = (got.double() - expected).abs()
    worst = (error / (ulp(expected, got.dtype) + floor * expected.abs().max())).max().item()
    assert worst <= 1.0, f"{name}: {worst:.3f} of 1 ulp + {floor:g} of the largest"
    fraction = (got == expected.to(got.dtype)).double().mean().item()
    assert fraction >= exact, f"{name}: {fraction:.4f} of the elements rounded as the fp64 value"


def assert_matches(outs, grads, ref_outs, ref_grads):
    hin, h_post, h_res = outs
    assert_16bit(hin, ref_outs[0], "hin", HIN_FLOOR, HIN_EXACT)
    for name, got, expected in (("h_post", h_post, ref_outs[1]), ("h_res", h_res, ref_outs[2])):
        assert got.dtype == torch.float32 and got.shape == expected.shape, name
        assert normwise(got, expected) <= FP32_RTOL, f"{name}: normwise {normwise(got, expected):.3g}"
        element = ((got.double() - expected).abs() / expected.abs()).max().item()
        assert element <= FP32_ELEMENT_RTOL, f"{name}: {element:.3g} relative on one element"
    assert_16bit(grads[0], ref_grads[0], "grad_x", GRAD_X_FLOOR, GRAD_X_EXACT)
    for name, got, expected in zip(("grad_phi", "grad_alpha", "grad_bias"), grads[1:], ref_grads[1:]):
        assert got.dtype == torch.float32 and got.shape == expected.shape, name
        assert normwise(got, expected) <= GRAD_RTOL, f"{name}: normwise {normwise(got, expected):.3g}"


@pytest.mark.parametrize("case", [((3,), 4096, torch.bfloat16), ((3,), 4096, torch.float16),
                                  ((1, 2), 4096, torch.bfloat16), ((2,), 7168, torch.float16)])
def test_ascend950_forward_and_gradients_match_fp64_autograd(case):
    lead, c, dtype = case
    ins, grads = inputs(lead, c, dtype, seed=c + len(lead))
    outs, got_grads = run_gradkit(ins, grads)
    assert outs[0].dtype == dtype and outs[0].shape == lead + (c,)
    assert outs[1].shape == lead + (N,) and outs[2].shape == lead + (N * N,)
    assert got_grads[0].dtype == dtype and got_grads[0].shape == ins[0].shape
    assert_matches(outs, got_grads, *fp64_reference(ins, grads))
    # the columns of the 20th iteration's matrices sum to 1 (within the last step's eps)
    assert (outs[2].double().reshape(*lead, N, N).sum(-2) - 1).abs().max() <= 1e-5


A2_CASES = [((2, 3), 128, torch.bfloat16), ((1, 5), 256, torch.float16)]


def a2_worker(in_path, out_path):
    """Runs in a subprocess with GRADKIT_SOC=Ascend910B: gradkit's outputs and gradients for the saved cases, the
    need_backward=False outputs, and the errors of the calls this profile rejects."""
    cases = torch.load(in_path)
    results = []
    for ins, grads in cases:
        outs, got_grads = run_gradkit(ins, grads)
        plain = gradkit.ops.mhc_pre_sinkhorn(*ins, need_backward=False)
        results.append((outs, got_grads, list(plain[:3]), all(t is None for t in plain[3:])))
    ins = cases[0][0]
    rejected = {}
    calls = {"tnd": lambda: gradkit.ops.mhc_pre_sinkhorn(ins[0][0], *ins[1:]),
             "c100": lambda: gradkit.ops.mhc_pre_sinkhorn(torch.zeros(1, 2, N, 100, dtype=torch.bfloat16),
                                                          torch.zeros(ROWS, N * 100), *ins[2:])}
    for name, call in calls.items():
        try:
            call()
            rejected[name] = None
        except gradkit.AclnnError as error:
            rejected[name] = (error.status, error.message)
    torch.save({"results": results, "rejected": rejected}, out_path)


def test_ascend910b_profile_bsnd_matches_fp64_autograd_with_hf32_backward(tmp_path):
    cases = [inputs(lead, c, dtype, seed=c) for lead, c, dtype in A2_CASES]
    torch.save(cases, tmp_path / "in.pt")
    script = ("import sys\nsys.path.insert(0, sys.argv[1])\nimport test_mhc_pre_sinkhorn_torch as t\n"
              "t.a2_worker(sys.argv[2], sys.argv[3])\n")
    env = dict(os.environ, GRADKIT_SOC="Ascend910B", PYTHONPATH=PYTHON_DIR)
    run = subprocess.run([sys.executable, "-c", script, os.path.dirname(os.path.abspath(__file__)),
                          str(tmp_path / "in.pt"), str(tmp_path / "out.pt")], env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    got = torch.load(tmp_path / "out.pt")
    for (ins, grads), (outs, got_grads, plain, none_saved) in zip(cases, got["results"]):
        ref_outs, ref_grads = fp64_reference(ins, grads, hf32_backward=True)
        assert_matches(outs, got_grads, ref_outs, ref_grads)
        assert all(torch.equal(a, b) for a, b in zip(plain, outs)) and none_saved
        # the backward's HF32 operands are visible: an fp32 backward misses grad_phi by more than the gate
        _, fp32_grads = fp64_reference(ins, grads, hf32_backward=False)
        assert normwise(got_grads[1], fp32_grads[1]) > GRAD_RTOL
    status, message = got["rejected"]["tnd"]
    assert status == 161002 and "argument 'x'" in message and "Ascend950" in message, message
    status, message = got["rejected"]["c100"]
    assert status == 161002 and "argument 'x'" in message and "multiple of 128" in message, message


def test_saved_tensors_follow_their_formulas():
    ins, _ = inputs((2,), 4096, torch.bfloat16, seed=1)
    out = gradkit.ops.mhc_pre_sinkhorn(*ins)
    x, phi, alpha, bias = (t.double() for t in ins)
    shapes = {"h_pre": (2, N), "hc_before_norm": (2, ROWS), "inv_rms": (2, 1), "sum_out": (2 * ITERS, 2, N),
              "norm_out": (2 * ITERS, 2, N, N)}
    for name, shape in shapes.items():
        value = getattr(out, name)
        assert value.shape == shape and value.dtype == torch.float32, name
    xf = x.reshape(2, N * 4096)
    inv_rms = torch.rsqrt(xf.square().mean(-1, keepdim=True) + NORM_EPS)
    h_mix = xf @ reference.round_hf32(phi).T
    h_pre = torch.sigmoid(h_mix[:, :N] * inv_rms * alpha[0] + bias[:N]) + HC_EPS
    assert normwise(out.inv_rms, inv_rms) <= FP32_RTOL  # measured 2e-6 (as aclnnMhcPre's; fp32 torch: 5e-8)
    assert normwise(out.hc_before_norm, h_mix) <= FP32_RTOL
    assert normwise(out.h_pre, h_pre) <= FP32_RTOL
    logits = (h_mix[:, 2 * N:] * inv_rms * alpha[2] + bias[2 * N:]).reshape(2, N, N)
    exp = torch.exp(logits - logits.amax(-1, keepdim=True))
    assert normwise(out.sum_out[0], exp.sum(-1) + HC_EPS) <= FP32_RTOL  # the softmax's row sums
    assert normwise(out.norm_out[0], torch.softmax(logits, -1) + HC_EPS) <= FP32_RTOL
    norm, sums = out.norm_out.double(), out.sum_out.double()
    for k in range(1, 2 * ITERS):
        dim = -2 if k % 2 else -1  # odd steps: column sums, even steps: row sums
        assert normwise(sums[k], norm[k - 1].sum(dim) + HC_EPS) <= 1e-6, k
        assert normwise(norm[k], norm[k - 1] / sums[k].unsqueeze(dim)) <= 1e-6, k
    assert torch.equal(out.norm_out[-1].reshape(2, N * N), out.h_res)


def test_need_backward_false_and_no_grad_give_the_same_bits():
    ins, grads = inputs((3,), 4096, torch.float16, seed=2)
    saved = gradkit.ops.mhc_pre_sinkhorn(*ins)
    plain = gradkit.ops.mhc_pre_sinkhorn(*ins, need_backward=False)
    assert all(torch.equal(a, b) for a, b in zip(plain[:3], saved[:3]))
    assert all(t is None for t in plain[3:])
    leaves = [t.clone().requires_grad_() for t in ins]
    with torch.no_grad():
        inference = gradkit.mhc_pre_sinkhorn(*leaves)
    assert all(o.grad_fn is None and torch.equal(o, s) for o, s in zip(inference, saved[:3]))
    assert all(torch.equal(o, s) for o, s in zip(gradkit.mhc_pre_sinkhorn(*ins), saved[:3]))  # no input needs one
    trained = gradkit.mhc_pre_sinkhorn(ins[0], ins[1], ins[2], leaves[3])  # only bias needs a gradient
    assert all(o.grad_fn is not None and torch.equal(o.detach(), s) for o, s in zip(trained, saved[:3]))
    unsaved = gradkit.mhc_pre_sinkhorn.Function.apply(*leaves, N, ITERS, HC_EPS, NORM_EPS, False)
    with pytest.raises(RuntimeError, match="need_backward=False"):
        unsaved[1].sum().backward()


def test_raw_backward_equals_autograd_with_any_layout():
    ins, grads = inputs((1, 3), 4096, torch.bfloat16, seed=3)
    _, auto_grads = run_gradkit(ins, grads)
    f = gradkit.ops.mhc_pre_sinkhorn(*ins)
    raw = gradkit.ops.mhc_pre_sinkhorn_backward(*grads, *ins, *f[3:], hc_eps=HC_EPS)
    assert all(torch.equal(a, b) for a, b in zip(raw, auto_grads))
    square = gradkit.ops.mhc_pre_sinkhorn_backward(grads[0], grads[1], grads[2].reshape(1, 3, N, N), *ins, *f[3:])
    assert all(torch.equal(a, b) for a, b in zip(square, raw))
    # strided inputs, given strided outputs
    x_strided = ins[0].transpose(1, 2).contiguous().transpose(1, 2)
    phi_strided = ins[1].t().contiguous().t()
    hin, h_post, h_res = (torch.empty(*shape, dtype=dtype)[..., ::2] for shape, dtype in
                          (((1, 3, 8192), ins[0].dtype), ((1, 3, 2 * N), torch.float32),
                           ((1, 3, 2 * N * N), torch.float32)))
    strided = gradkit.ops.mhc_pre_sinkhorn(x_strided, phi_strided, *ins[2:], hin=hin, h_post=h_post, h_res=h_res)
    assert strided.hin is hin and strided.h_post is h_post and strided.h_res is h_res
    assert all(torch.equal(a, b) for a, b in zip(strided, f))
    grad_x = torch.empty(1, 3, N, 8192, dtype=ins[0].dtype)[..., 1::2]
    grads_strided = [g.transpose(0, 1).contiguous().transpose(0, 1) for g in grads]
    again = gradkit.ops.mhc_pre_sinkhorn_backward(*grads_strided, x_strided, phi_strided, *ins[2:], *f[3:],
                                                  grad_x=grad_x)
    assert again.grad_x is grad_x and all(torch.equal(a, b) for a, b in zip(again, raw))


def test_outputs_left_out_of_the_loss_get_zero_gradients():
    ins, grads = inputs((2,), 4096, torch.bfloat16, seed=4)
    f = gradkit.ops.mhc_pre_sinkhorn(*ins)
    leaves = [t.clone().requires_grad_() for t in ins]
    h_res = gradkit.mhc_pre_sinkhorn(*leaves)[2]
    h_res.backward(grads[2])
    expected = gradkit.ops.mhc_pre_sinkhorn_backward(torch.zeros_like(grads[0]), torch.zeros(2, N), grads[2], *ins,
                                                     *f[3:])
    assert all(torch.equal(t.grad, e) for t, e in zip(leaves, expected))
    _, ref_grads = fp64_reference(ins, (torch.zeros_like(grads[0]), torch.zeros(2, N), grads[2]))
    for got, ref in zip(expected[1:], ref_grads[1:]):
        assert normwise(got, ref) <= GRAD_RTOL


def test_numpy_arrays_give_the_same_bits_as_torch():
    ins, grads = inputs((2,), 4096, torch.float16, seed=5)
    with_torch = gradkit.ops.mhc_pre_sinkhorn(*ins)
    with_numpy = gradkit.ops.mhc_pre_sinkhorn(*(t.numpy() for t in ins))
    assert all(torch.equal(a, torch.from_numpy(b)) for a, b in zip(with_torch, with_numpy))
    raw = gradkit.ops.mhc_pre_sinkhorn_backward(*(t.numpy() for t in grads + ins), *with_numpy[3:])
    expected = gradkit.ops.mhc_pre_sinkhorn_backward(*grads, *ins, *with_torch[3:])
    assert all(torch.equal(torch.from_numpy(a), b) for a, b in zip(raw, expected))


def test_cann_ops_transformer_names():
    ins, grads = inputs((2,), 4096, torch.bfloat16, seed=6)
    cot = gradkit.cann_ops_transformer
    outs = cot.mhc_pre_sinkhorn(*ins, N, ITERS)
    f = gradkit.ops.mhc_pre_sinkhorn(*ins)
    assert isinstance(outs, tuple) and all(torch.equal(a, b) for a, b in zip(outs, f[:3]))
    got = cot.ops.mhc_pre_sinkhorn_backward(*grads, *ins, *f[3:], HC_EPS)
    expected = gradkit.ops.mhc_pre_sinkhorn_backward(*grads, *ins, *f[3:])
    assert isinstance(got, tuple) and all(torch.equal(a, b) for a, b in zip(got, expected))
    leaves = [t.clone().requires_grad_() for t in ins]
    torch.autograd.backward(cot.mhc_pre_sinkhorn(*leaves, N, ITERS, hc_eps=HC_EPS, norm_eps=NORM_EPS), grads)
    assert all(torch.equal(t.grad, e) for t, e in zip(leaves, expected))


def assert_rejects(call, argument, status=161002):
    with pytest.raises(gradkit.AclnnError) as error:
        call()
    assert error.value.status == status, error.value.message
    assert f"argument '{argument}'" in error.value.message, error.value.message


def test_bad_calls_raise_named_errors():
    ins, grads = inputs((2,), 4096, torch.bfloat16, seed=7)
    x, phi, alpha, bias = ins
    ops = gradkit.ops
    assert_rejects(lambda: ops.mhc_pre_sinkhorn(*ins, hc_mult=5), "hcMult")
    x5 = torch.zeros(2, 5, 4096, dtype=torch.bfloat16)
    assert_rejects(lambda: ops.mhc_pre_sinkhorn(x5, torch.zeros(35, 5 * 4096), alpha, torch.zeros(35), hc_mult=5),
                   "hcMult")
    assert_rejects(lambda: gradkit.mhc_pre_sinkhorn(x5.requires_grad_(), torch.zeros(35, 5 * 4096), alpha,
                                                    torch.zeros(35), 5), "hcMult")
    for save in (True, False):
        assert_rejects(lambda: ops.mhc_pre_sinkhorn(*ins, num_iters=10, need_backward=save), "numIters")
    assert_rejects(lambda: ops.mhc_pre_sinkhorn(x.float(), phi, alpha, bias), "x")
    assert_rejects(lambda: ops.mhc_pre_sinkhorn(x, phi[:, :-1], alpha, bias), "phi")
    assert_rejects(lambda: ops.mhc_pre_sinkhorn(x, phi, alpha[:2], bias), "alpha")
    assert_rejects(lambda: ops.mhc_pre_sinkhorn(x, phi, alpha, bias.double()), "bias")
    assert_rejects(lambda: ops.mhc_pre_sinkhorn(x[..., :1024], phi[:, :N * 1024], alpha, bias), "x", 561002)
    f = ops.mhc_pre_sinkhorn(*ins)
    assert_rejects(lambda: ops.mhc_pre_sinkhorn_backward(grads[0].half(), *grads[1:], *ins, *f[3:]), "x")
    assert_rejects(lambda: ops.mhc_pre_sinkhorn_backward(*grads, *ins, f.h_pre, f.hc_before_norm, f.inv_rms,
                                                         f.sum_out[:20], f.norm_out[:20]), "sumOut", 561002)
    assert_rejects(lambda: ops.mhc_pre_sinkhorn_backward(*grads[:2], grads[2][:, :8], *ins, *f[3:]), "gradHRes")
    with pytest.raises(ValueError, match="hc_mult"):
        reference.mhc_pre_sinkhorn(x5, torch.zeros(35, 5 * 4096), alpha, torch.zeros(35), hc_mult=4)


@pytest.mark.skipif(not hasattr(torch, "func"), reason="torch.func needs torch >= 2.0")
def test_torch_func_grad_and_vmap():
    from torch.func import grad, vmap

    ins, grads = inputs((2,), 4096, torch.bfloat16, seed=8)

    def loss(phi):
        hin, h_post, h_res = gradkit.mhc_pre_sinkhorn(ins[0], phi, ins[2], ins[3])
        return (hin.float() * grads[0].float()).sum() + (h_post * grads[1]).sum() + (h_res * grads[2]).sum()

    leaf = ins[1].clone().requires_grad_()
    loss(leaf).backward()
    assert torch.equal(grad(loss)(ins[1]), leaf.grad)
    samples = ins[0].unsqueeze(1)  # [2, 1, n, c]: one TND call of one token per sample
    got = vmap(lambda a: gradkit.mhc_pre_sinkhorn(a, *ins[1:]))(samples)
    expected = gradkit.ops.mhc_pre_sinkhorn(samples, *ins[1:])  # BSND [2, 1, n, c] at once
    assert all(torch.equal(a, b) for a, b in zip(got, expected[:3]))
