"""The gradkit Python module (python/, docs/python.md) against pure-torch references, with Debian's torch 1.13.

Found from the build tree by gradkit_package.py (<build>/python/gradkit next to the library ctest names in
GRADKIT_LIB; GRADKIT_PYTHON_DIR overrides); skipped when the build has no module (GRADKIT_BUILD_PYTHON=OFF;
./run.sh test turns it on).

What is asserted, per wrapper:
- relu: forward and gradient bit for bit equal to torch's ReLU (a selection: no rounding), fp32 / bf16 / fp16,
  contiguous and strided; torch.autograd.gradcheck in fp32 (the op takes no fp64) away from the kink.
- dropout: output = x * keep / (1 - p) with gradkit's own keep mask (unpacked) within the one-ulp difference of
  the scale's rounding (V3 multiplies by RN32(1 / RN32(1 - p)), the reference by RN32(1 / (1 - p))); gradient bit
  for bit equal to torch's native_dropout_backward for fp32 and to RN_T(RN32(RN32(g * m) * RN32(scale))) for bf16
  (docs/dropout.md); gradcheck in fp32 with a fixed seed (dropout is linear for a fixed mask).
- mhc_pre (x is bf16 / fp16 only, so no gradcheck on the op itself): forward and the five gradients against the
  pure-torch reference (gradkit.reference.mhc_pre) in fp64 with autograd, fed the same output gradients; the
  gradients also against central finite differences of the fp64 reference along random directions. Gates as
  tests/python/test_mhc_torch.py: 16-bit outputs within one ulp, fp32 ones normwise within 1e-5.
- every wrapper: any strides in and out (views written in place, nothing else touched), numpy arrays (bf16 as
  uint16 with as_bf16), numpy without torch, errors as AclnnError(status, message), threads.
"""
import subprocess
import sys
import threading

import numpy as np
import pytest
import torch

FP32_RTOL = 1e-5  # normwise gate of fp32 outputs (test_mhc_torch.py explains the margin)


from gradkit_package import PYTHON_DIR  # noqa: E402,F401  (puts the package on sys.path, or skips this module)

import gradkit  # noqa: E402
from gradkit import reference  # noqa: E402
from seeds import stable_seed  # noqa: E402

FLOATS = [torch.float32, torch.bfloat16, torch.float16]


def ulp(dtype):
    return {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11, torch.float32: 2.0**-24}[dtype]


def strided(tensor):
    """The same values as a non-contiguous view (transposed storage with a gap between rows)."""
    big = torch.zeros(tensor.shape[::-1] + (2,), dtype=tensor.dtype)
    view = big[..., 0].permute(*reversed(range(tensor.dim())))
    view.copy_(tensor)
    assert not view.is_contiguous()
    assert torch.equal(view.contiguous().view(torch.uint8), tensor.contiguous().view(torch.uint8))  # NaN too
    return view


def normwise(actual, expected):
    return ((actual.double() - expected.double()).norm() / expected.double().norm()).item()


# ------------------------------------------------------------------------------------------------ relu


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_relu_matches_torch_bit_for_bit(dtype, layout):
    generator = torch.Generator().manual_seed(1)
    values = torch.randn(37, 29, generator=generator).to(dtype)
    values[0, :5] = torch.tensor([0.0, -0.0, 1e-30, -1e-30, float("nan")]).to(dtype)
    grad = torch.randn(37, 29, generator=generator).to(dtype)
    if layout == "strided":
        values, grad = strided(values), strided(grad)
    x = values.clone().requires_grad_()
    y = gradkit.relu(x)
    y.backward(grad)
    x_ref = values.clone().requires_grad_()
    # torch 1.13 has no fp16 ReLU on the CPU: the fp16 reference runs in fp32 (exact: ReLU selects values).
    y_ref = torch.relu(x_ref.float()).to(dtype) if dtype == torch.float16 else torch.relu(x_ref)
    y_ref.backward(grad)
    assert torch.equal(y.contiguous().view(torch.uint8), y_ref.contiguous().view(torch.uint8))  # bits, NaN too
    assert torch.equal(x.grad, x_ref.grad)
    assert x.grad.count_nonzero() > 0 and (x.grad == 0).sum() > 0  # both branches taken


def test_relu_gradcheck_fp32():
    generator = torch.Generator().manual_seed(2)
    x = torch.randn(6, 5, generator=generator)
    x = (x + 0.1 * x.sign()).requires_grad_()  # |x| > 0.1 > eps: finite differences never cross the kink
    assert torch.autograd.gradcheck(gradkit.relu, (x,), eps=1e-3, atol=1e-3, rtol=1e-3)


def test_relu_backward_op_is_threshold_backward_with_broadcast_and_out_view():
    grad = torch.randn(4, 1, 6)
    self = torch.randn(5, 6)
    expected = torch.ops.aten.threshold_backward(grad.expand(4, 5, 6).contiguous(), self.expand(4, 5, 6), 0)
    assert torch.equal(gradkit.relu.backward_op(grad, self), expected)
    storage = torch.full((4, 5, 12), 7.0)
    out = storage[..., ::2]  # written in place through the view; the other half untouched
    assert gradkit.ops.threshold_backward(grad, self, 0, out=out) is out
    assert torch.equal(out, expected) and torch.all(storage[..., 1::2] == 7.0)


def test_relu_rejects_fp64_with_status_and_message():
    with pytest.raises(gradkit.AclnnError) as error:
        gradkit.relu(torch.randn(3, dtype=torch.float64, requires_grad=True)).sum().backward()
    assert error.value.status == 161002
    assert error.value.api == "aclnnThresholdBackwardGetWorkspaceSize"
    assert "gradOutput" in error.value.message and "DOUBLE" in error.value.message
    assert isinstance(error.value, RuntimeError) and "161002" in str(error.value)


# ------------------------------------------------------------------------------------------------ dropout


def dropout_reference_bits(grad, keep, scale):
    """RN_T(RN32(RN32(g * m) * RN32(scale))): torch's native_dropout_backward (docs/dropout.md, DECISIONS)."""
    return ((grad.float() * keep.float()) * torch.tensor(scale, dtype=torch.float32)).to(grad.dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_dropout_matches_the_reference_with_the_same_mask(dtype, layout):
    generator = torch.Generator().manual_seed(3)
    p = 0.3
    values = torch.randn(61, 47, generator=generator).to(dtype)
    grad = torch.randn(61, 47, generator=generator).to(dtype)
    if layout == "strided":
        values, grad = strided(values), strided(grad)
    x = values.clone().requires_grad_()
    y, mask = gradkit.dropout(x, p, seed=1234, offset=8, return_mask=True)
    keep = gradkit.ops.unpack_dropout_mask(mask, x.shape)
    assert mask.dtype == torch.uint8 and mask.numel() == (x.numel() + 127) // 128 * 16
    assert abs(keep.float().mean().item() - (1 - p)) < 0.03
    expected = reference.dropout(values.float(), keep, p)  # fp32, rounded once below
    assert torch.allclose(y.float(), expected.to(dtype).float(), rtol=ulp(dtype), atol=0)
    assert torch.equal(y == 0, ~keep | (values == 0))
    y.backward(grad)
    scale = gradkit.ops.native_dropout_scale(p)
    if dtype == torch.float32:
        expected_grad = torch.ops.aten.native_dropout_backward(grad, keep, scale)
    else:
        expected_grad = dropout_reference_bits(grad, keep, scale)
    assert torch.equal(x.grad, expected_grad)


def test_dropout_gradcheck_fp32_fixed_mask():
    x = torch.randn(9, 7, generator=torch.Generator().manual_seed(4)).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: gradkit.dropout(t, 0.4, seed=99), (x,), eps=1e-3, atol=1e-3, rtol=1e-3)


def test_dropout_seeds_offsets_and_eval():
    x = torch.randn(1000)
    a = gradkit.dropout(x, 0.5, seed=7)
    assert torch.equal(a, gradkit.dropout(x, 0.5, seed=7))
    assert not torch.equal(a, gradkit.dropout(x, 0.5, seed=8))
    assert not torch.equal(a, gradkit.dropout(x, 0.5, seed=7, offset=4))
    torch.manual_seed(5)
    b = gradkit.dropout(x, 0.5)
    torch.manual_seed(5)
    assert torch.equal(b, gradkit.dropout(x, 0.5))  # the default seed comes from torch's generator
    xe = x.clone().requires_grad_()
    ye = gradkit.dropout(xe, 0.5, training=False)
    ye.backward(torch.ones(1000))
    assert torch.equal(ye, x) and torch.equal(xe.grad, torch.ones(1000))


def test_dropout_paths_and_raw_ops():
    x = torch.randn(300)
    out, mask, path = gradkit.ops.native_dropout(x, 0.25, seed=3, return_path=True)
    assert path == "v3"
    grad = torch.randn(300)
    scale = gradkit.ops.native_dropout_scale(0.25)
    by_dispatch, backward_path = gradkit.ops.native_dropout_backward(grad, mask, scale, return_path=True)
    assert backward_path == "v3grad"
    assert torch.equal(by_dispatch, gradkit.ops.dropout_v3_grad(grad, mask, scale))
    assert gradkit.ops.native_dropout_backward(grad, None, 1.0, return_path=True)[1] == "clone"


def test_dropout_errors():
    with pytest.raises(gradkit.AclnnError) as error:
        gradkit.dropout(torch.randn(10), 1.5, seed=1)
    assert error.value.status == 161002 and "p" in error.value.message
    with pytest.raises(gradkit.AclnnError) as error:  # a mask of the wrong size
        gradkit.ops.native_dropout_backward(torch.randn(300), torch.zeros(16, dtype=torch.uint8), 2.0)
    assert error.value.status == 161002 and "mask" in error.value.message


# ------------------------------------------------------------------------------------------------ mhc_pre


def mhc_inputs(dtype, n=4, d=64, lead=(24,), seed=5, gamma=True, layout="contiguous"):
    generator = torch.Generator().manual_seed(seed)
    rows = n * n + 2 * n
    x = torch.randn(*lead, n, d, generator=generator).to(dtype)
    phi = torch.randn(rows, n * d, generator=generator) * 0.05
    alpha = torch.tensor([0.8, 0.6, 0.4])
    bias = torch.randn(rows, generator=generator) * 0.2
    g = (torch.rand(n, d, generator=generator) + 0.5) if gamma else None
    if layout == "strided":
        x, phi = strided(x), strided(phi)
    return x, phi, alpha, bias, g


def mhc_check_16bit(actual, expected64, dtype):
    """Within one ulp of the fp64 value (plus 1e-6 of the largest element for near-cancellations)."""
    bound = ulp(dtype) * expected64.abs() + 1e-6 * expected64.abs().max()
    assert torch.all((actual.double() - expected64).abs() <= bound)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("with_gamma", [True, False])
def test_mhc_pre_forward_and_gradients_match_the_fp64_reference(dtype, layout, with_gamma):
    x, phi, alpha, bias, gamma = mhc_inputs(dtype, gamma=with_gamma, layout=layout)
    params = [t for t in (x, phi, alpha, bias, gamma) if t is not None]
    ours = [t.clone().requires_grad_() for t in params]
    ref = [t.detach().double().requires_grad_() for t in params]
    if not with_gamma:
        ours.append(None)
        ref.append(None)
    h_in, h_post, h_res = gradkit.mhc_pre(*ours)
    r_in, r_post, r_res = reference.mhc_pre(*ref, compute=torch.float64)
    mhc_check_16bit(h_in, r_in, dtype)
    assert normwise(h_post, r_post) <= FP32_RTOL and normwise(h_res, r_res) <= FP32_RTOL
    # fp32 reference (what a framework runs): the same forward within fp32 noise.
    f_in, f_post, f_res = reference.mhc_pre(*[t.detach() if t is not None else None for t in ours])
    assert normwise(h_post, f_post) <= FP32_RTOL and normwise(h_res, f_res) <= FP32_RTOL
    generator = torch.Generator().manual_seed(6)
    g_in = torch.randn(h_in.shape, generator=generator).to(dtype)
    g_post = torch.randn(h_post.shape, generator=generator)
    g_res = strided(torch.randn(h_res.shape, generator=generator))  # gradients with strides too
    torch.autograd.backward([h_in, h_post, h_res], [g_in, g_post, g_res])
    torch.autograd.backward([r_in, r_post, r_res], [g_in.double(), g_post.double(), g_res.double()])
    mhc_check_16bit(ours[0].grad, ref[0].grad, dtype)
    for mine, theirs in zip(ours[1:], ref[1:]):
        if mine is not None:
            assert normwise(mine.grad, theirs.grad) <= FP32_RTOL


def test_mhc_pre_gradients_match_finite_differences_of_the_fp64_reference():
    """Directional derivatives: (L(p + h v) - L(p - h v)) / 2h of the fp64 reference, L = <outputs, G>, against
    <our gradient, v> for each of x, phi, alpha, bias, gamma. fp64 central differences with h = 1e-6 are exact to
    ~1e-9 relative here, so the gate is the fp32 one (1e-5) on a scalar."""
    x, phi, alpha, bias, gamma = mhc_inputs(torch.bfloat16, lead=(2, 8), seed=8)
    params = [x, phi, alpha, bias, gamma]
    ours = [t.clone().requires_grad_() for t in params]
    outputs = gradkit.mhc_pre(*ours)
    generator = torch.Generator().manual_seed(9)
    weights = [torch.randn(o.shape, generator=generator).to(o.dtype) for o in outputs]
    torch.autograd.backward(outputs, weights)

    def loss(values):
        return sum((o.double() * w.double()).sum() for o, w in
                   zip(reference.mhc_pre(*values, compute=torch.float64), weights)).item()

    for index, param in enumerate(params):
        direction = torch.randn(param.shape, generator=generator, dtype=torch.float64)
        base = [p.double() for p in params]
        h = 1e-6
        plus = list(base)
        minus = list(base)
        plus[index] = base[index] + h * direction
        minus[index] = base[index] - h * direction
        # h_in is compared through its fp64 value: the reference keeps x's dtype for h_in, here fp64.
        numeric = (loss(plus) - loss(minus)) / (2 * h)
        products = ours[index].grad.double() * direction
        analytic = products.sum().item()
        # grad_x is rounded once to bf16 (half an ulp per element), the fp32 gradients carry fp32 noise.
        tolerance = ulp(torch.bfloat16) / 2 * products.abs().sum().item() if index == 0 else FP32_RTOL * abs(numeric)
        assert abs(analytic - numeric) <= tolerance + 1e-9, (index, analytic, numeric)


def test_mhc_pre_bsnd_hf32_and_torch_npu_names():
    x, phi, alpha, bias, gamma = mhc_inputs(torch.bfloat16, lead=(2, 12))
    plain = gradkit.ops.mhc_pre(x, phi, alpha, bias, gamma)
    assert plain.h_in.shape == (2, 12, 64) and plain.h_res.shape == (2, 12, 4, 4) and plain.inv_rms.shape == (2, 12)
    hf32 = gradkit.ops.mhc_pre(x, phi, alpha, bias, gamma, op_impl_mode=1)
    _, e_post, e_res = reference.mhc_pre(x, phi, alpha, bias, gamma, hf32=True, compute=torch.float64)
    assert normwise(hf32.h_post, e_post) <= FP32_RTOL and normwise(hf32.h_res, e_res) <= FP32_RTOL
    assert normwise(hf32.h_res, plain.h_res) > FP32_RTOL  # HF32 is visibly not fp32
    npu = gradkit.torch_npu.npu_mhc_pre(x, phi, alpha, bias, gamma=gamma, out_flag=1)
    assert all(torch.equal(a, b) for a, b in zip(npu, plain))
    grads = gradkit.torch_npu.npu_mhc_pre_backward(
        x, phi, alpha, torch.ones(2, 12, 64, dtype=torch.bfloat16), torch.ones(2, 12, 4), torch.ones(2, 12, 4, 4),
        plain.inv_rms, plain.h_mix, plain.h_pre, plain.h_post, gamma=gamma, hc_eps=1e-6, grad_x_post=None)
    raw = gradkit.ops.mhc_pre_backward(x, phi, alpha, torch.ones(2, 12, 64, dtype=torch.bfloat16),
                                       torch.ones(2, 12, 4), torch.ones(2, 12, 4, 4), plain.inv_rms, plain.h_mix,
                                       plain.h_pre, plain.h_post, gamma)
    assert all(torch.equal(a, b) for a, b in zip(grads, raw))
    no_caches = gradkit.torch_npu.npu_mhc_pre(x, phi, alpha, bias, gamma=gamma)
    assert torch.equal(no_caches[0], plain.h_in) and torch.count_nonzero(no_caches[4]) == 0


def test_mhc_pre_backward_grad_x_post_in_place():
    x, phi, alpha, bias, gamma = mhc_inputs(torch.bfloat16)
    out = gradkit.ops.mhc_pre(x, phi, alpha, bias, gamma)
    grads_in = (torch.randn(out.h_in.shape).bfloat16(), torch.randn(out.h_post.shape), torch.randn(out.h_res.shape))
    caches = (out.inv_rms, out.h_mix, out.h_pre, out.h_post)
    post = torch.randn(x.shape).bfloat16()
    separate = gradkit.ops.mhc_pre_backward(x, phi, alpha, *grads_in, *caches, gamma, grad_x_post=post)
    in_place = post.clone()
    result = gradkit.ops.mhc_pre_backward(x, phi, alpha, *grads_in, *caches, gamma, grad_x_post=in_place,
                                          grad_x=in_place)
    assert result.grad_x is in_place and torch.equal(in_place, separate.grad_x)
    without = gradkit.ops.mhc_pre_backward(x, phi, alpha, *grads_in, *caches, gamma)
    assert not torch.equal(without.grad_x, separate.grad_x)


def test_mhc_pre_errors():
    x, phi, alpha, bias, gamma = mhc_inputs(torch.bfloat16)
    with pytest.raises(gradkit.AclnnError) as error:
        gradkit.mhc_pre(x[..., :60], phi[:, :240], alpha, bias)
    assert error.value.status == 161002 and "'x'" in error.value.message and "D = 60" in error.value.message
    with pytest.raises(gradkit.AclnnError) as error:
        gradkit.mhc_pre(x.float(), phi, alpha, bias)
    assert error.value.status == 161002 and error.value.api == "aclnnMhcPreGetWorkspaceSize"
    with pytest.raises(gradkit.AclnnError) as error:
        gradkit.ops.mhc_pre(x, phi, alpha, bias, op_impl_mode=2)
    assert error.value.status == 161002 and error.value.api == "aclnnMhcPreV2GetWorkspaceSize"


# ------------------------------------------------------------------------------------------------ numpy, threads


def test_numpy_arrays_give_the_same_bits_as_torch():
    x, phi, alpha, bias, gamma = mhc_inputs(torch.bfloat16)
    with_torch = gradkit.ops.mhc_pre(x, phi, alpha, bias, gamma)
    x_bits = x.view(torch.int16).numpy().view(np.uint16)
    with_numpy = gradkit.ops.mhc_pre(gradkit.as_bf16(x_bits), phi.numpy(), alpha.numpy(), bias.numpy(),
                                     gamma.numpy())
    assert with_numpy.h_in.dtype == np.uint16
    assert np.array_equal(with_numpy.h_in, with_torch.h_in.view(torch.int16).numpy().view(np.uint16))
    assert np.array_equal(with_numpy.h_res, with_torch.h_res.numpy())
    grad = np.random.default_rng(1).standard_normal((40, 30)).astype(np.float32)
    self = np.random.default_rng(2).standard_normal((30, 40)).astype(np.float32).T  # strided view
    assert np.array_equal(gradkit.ops.threshold_backward(grad, self), np.where(self > 0, grad, 0))
    out, mask = gradkit.ops.native_dropout(grad, 0.5, seed=11)
    keep = gradkit.ops.unpack_dropout_mask(mask, grad.shape)
    t_out, t_mask = gradkit.ops.native_dropout(torch.from_numpy(grad), 0.5, seed=11)
    assert np.array_equal(mask, t_mask.numpy()) and np.array_equal(out, t_out.numpy())
    assert np.array_equal(out == 0, ~keep | (grad == 0))
    with pytest.raises(ValueError, match="negative strides"):
        gradkit.ops.threshold_backward(grad[::-1], grad)


def test_numpy_only_interpreter_without_torch():
    """The raw operators import and run where torch cannot be imported."""
    script = (
        "import sys; sys.modules['torch'] = None\n"
        f"sys.path.insert(0, {PYTHON_DIR!r})\n"
        "import numpy as np, gradkit\n"
        "assert not hasattr(gradkit, 'relu')\n"
        "a = np.array([[-1.0, 2.0], [3.0, -4.0]], np.float32)\n"
        "print(gradkit.ops.threshold_backward(np.ones_like(a), a).tolist())\n"
        "try:\n"
        "    gradkit.ops.threshold_backward(a.astype(np.float64), a.astype(np.float64))\n"
        "except gradkit.AclnnError as e:\n"
        "    print(e.status)\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.split("\n")[:2] == ["[[0.0, 1.0], [1.0, 0.0]]", "161002"]


def test_threads_call_the_operators_at_once_with_the_serial_bits():
    x, phi, alpha, bias, gamma = mhc_inputs(torch.bfloat16, lead=(64,))
    serial = gradkit.ops.mhc_pre(x, phi, alpha, bias, gamma).h_res
    grad = torch.randn(200, 300)
    serial_relu = gradkit.ops.threshold_backward(grad, grad)
    results, errors = [], []

    def work():
        try:
            for _ in range(5):
                results.append((gradkit.ops.mhc_pre(x, phi, alpha, bias, gamma).h_res,
                                gradkit.ops.threshold_backward(grad, grad)))
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(results) == 20
    assert all(torch.equal(a, serial) and torch.equal(b, serial_relu) for a, b in results)


# ------------------------------------------------------------------------------------------------ compressor
#
# gradkit.compressor (aclnnCompressor + aclnnCompressorGrad) against gradkit.reference.compressor, the pure-torch
# forward of spec compressor.md 4.1, evaluated in fp64 and differentiated by autograd (the reference itself is
# gradchecked below). ulp(dtype) below is the unit roundoff u of the type (2^-8 bf16, 2^-11 fp16: the largest relative
# error of one correct rounding). Gates:
# - cmp_kv (16-bit, one fp32 softmax-weighted sum rounded once): each element within u relative of the fp64 value,
#   plus 1e-6 of the largest element for fp32 noise and sums that cancel to near zero (as mhc_pre's h_in); measured
#   up to 0.99 of that bound (correct rounding), so a second rounding or a 16-bit intermediate fails.
# - softmax_score, kv, d_ape (fp32): normwise 1e-5 (FP32_RTOL). Each is a fp32 dot product over H = 1024 exact
#   products of 16-bit inputs, then a softmax over at most 2*cr rows, or (d_ape) a sum of such terms: errors of
#   order 1e-7 (measured 6e-8 to 3.4e-7), while a wrong term (an APE row off by one position, a history row from
#   the wrong cache slot, a dropped prev half) is of order one.
# - d_x, d_wkv, d_wgate (16-bit): normwise within u. The final rounding of fp32 sums alone gives about 0.42 u
#   (measured 0.42-0.43 u in every case below), so the gate leaves a margin of 2.3 for the fp32 GEMM noise, while a
#   wrong routing (a token's gradient sent to the neighbouring block, the prev half dropped) is of order one. An
#   implementation that rounds the GEMM operands dK, dZ to the 16-bit type as upstream does (spec 9 #9) would have
#   to be re-measured against it. Rows no block reads must be exactly 0.

COMPRESSOR_HIDDEN = 1024  # the smallest H the operators accept (a multiple of 512 in [1024, 10240])


def int32(values):
    return None if values is None else torch.tensor(values, dtype=torch.int32)


def compressor_problem(dtype, layout, coff, cr, *, history, d=128, seed=0, cache_mode=1):
    """Inputs and keywords of one compressor call. BSH: two batches of S = 4cr + 1 tokens, the second with seqused
    short by cr + 2. TH: three batches (one empty, one with seqused short by one) and two rows at the end that no
    batch owns. history: start_pos > 0 (incl. one not a multiple of cr) with a random state cache read through a
    shuffled block table (block 0 unused); else the operator's stateless default (no cache, start_pos None)."""
    generator = torch.Generator().manual_seed(seed)

    def uniform(shape, bound):
        return (torch.rand(shape, generator=generator, dtype=torch.float64) * 2 - 1) * bound

    bound = (3.0 / COMPRESSOR_HIDDEN) ** 0.5  # projections of order one
    channels = coff * d
    kwargs = {"coff": coff}
    if layout == "BSH":
        seq = 4 * cr + 1
        x = uniform([2, seq, COMPRESSOR_HIDDEN], 1)
        kwargs["seqused"] = int32([seq, seq - cr - 2])
        starts, ends = [0, 2 * cr + 1], [seq, 2 * cr + 1 + seq]
        batch, longest = 2, seq
    else:
        cu = [0, 3 * cr, 3 * cr, 7 * cr + 2]
        x = uniform([cu[-1] + 2, COMPRESSOR_HIDDEN], 1)
        kwargs["cu_seqlens"] = int32(cu)
        kwargs["seqused"] = int32([3 * cr, 0, 4 * cr - 1])
        starts = [cr + 1, 0, 5]
        ends = [starts[b] + cu[b + 1] - cu[b] for b in range(3)]
        batch, longest = 3, 4 * cr + 2
    if history:
        kwargs["start_pos"] = int32(starts)
        if cache_mode == 1:
            block_size = 8
            columns = -(-max(ends) // block_size)
            table = (torch.randperm(batch * columns, generator=generator) + 1).view(batch, columns)
        else:  # one ring buffer per batch, the smallest allowed
            block_size = coff * cr + longest - 1
            table = torch.randperm(batch, generator=generator) + 1
        kwargs["state_cache"] = uniform([int(table.max()) + 1, block_size, 2 * channels], 1).float()
        kwargs["state_block_table"] = table.to(torch.int32)
        kwargs["cache_mode"] = cache_mode
    inputs = (x.to(dtype), uniform([channels, COMPRESSOR_HIDDEN], bound).to(dtype),
              uniform([channels, COMPRESSOR_HIDDEN], bound).to(dtype), uniform([cr, channels], 0.5).float())
    return inputs, kwargs


def compressor_routed_tokens(x, cr, kwargs):
    """A bool per token row: read by some compressed block (tokens before the uncompressed tail of their batch)."""
    tokens = x.shape[0] * x.shape[1] if x.dim() == 3 else x.shape[0]
    cu = kwargs.get("cu_seqlens")
    batch = x.shape[0] if cu is None else len(cu) - 1
    routed = torch.zeros(tokens, dtype=torch.bool)
    for b in range(batch):
        first = b * x.shape[1] if cu is None else int(cu[b])
        start = 0 if kwargs.get("start_pos") is None else int(kwargs["start_pos"][b])
        used = int(kwargs["seqused"][b])
        last = (start + used) // cr * cr - start  # the tokens before `last` are compressed
        routed[first:first + max(0, last)] = True
    return routed


def assert_within_one_ulp(actual, expected64):
    bound = ulp(actual.dtype) * expected64.abs() + 1e-6 * expected64.abs().max()
    worst = ((actual.double() - expected64).abs() / bound).max().item()
    assert worst <= 1, f"an element is {worst:.3g} ulp-bounds away from the fp64 value"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("layout", ["BSH", "TH"])
@pytest.mark.parametrize("coff, cr", [(1, 4), (2, 3)], ids=["coff1_cr4", "coff2_cr3"])
@pytest.mark.parametrize("history", [False, True], ids=["start0", "history"])
def test_compressor_forward_and_gradients_match_the_fp64_reference(dtype, layout, coff, cr, history):
    inputs, kwargs = compressor_problem(dtype, layout, coff, cr, history=history,
                                        seed=stable_seed(dtype, layout, coff, history))
    cache_before = kwargs["state_cache"].clone() if history else None
    ours = [t.clone().requires_grad_() for t in inputs]
    ref = [t.detach().double().requires_grad_() for t in inputs]
    ref_kwargs = dict(kwargs, state_cache=cache_before)
    cmp_kv = gradkit.compressor(*ours, cr, **kwargs)
    expected, e_score, e_kv = reference.compressor(*ref, cr, compute=torch.float64, intermediates=True,
                                                   **ref_kwargs)
    assert cmp_kv.dtype == dtype and cmp_kv.shape == expected.shape
    assert_within_one_ulp(cmp_kv, expected)
    # The intermediates the backward reads, and the state cache written in place (this call's tokens).
    raw = gradkit.ops.compressor(*inputs, cr, grad_enabled=True, **dict(kwargs, state_cache=(
        cache_before.clone() if history else None)))
    assert torch.equal(raw.cmp_kv, cmp_kv)
    assert normwise(raw.softmax_score, e_score) <= FP32_RTOL and normwise(raw.kv, e_kv) <= FP32_RTOL
    if history:
        assert not torch.equal(kwargs["state_cache"], cache_before)
    weights = torch.randn(cmp_kv.shape, generator=torch.Generator().manual_seed(7)).to(dtype)
    cmp_kv.backward(weights)
    (expected * weights.double()).sum().backward()
    for name, mine, theirs in zip(("d_x", "d_wkv", "d_wgate"), ours[:3], ref[:3]):
        assert mine.grad.dtype == dtype
        error = normwise(mine.grad, theirs.grad)
        assert error <= ulp(dtype), (name, error)
    assert ours[3].grad.dtype == torch.float32 and normwise(ours[3].grad, ref[3].grad) <= FP32_RTOL
    routed = compressor_routed_tokens(inputs[0], cr, kwargs)
    d_x = ours[0].grad.reshape(routed.shape[0], -1)
    assert torch.all(d_x[~routed] == 0) and torch.all(d_x[routed].abs().sum(-1) > 0)


def test_compressor_reference_gradcheck_fp64():
    """The reference's autograd (the oracle of the test above) against finite differences: small shapes the
    reference takes (not the operator), coff 2 with history, TH with an empty batch and seqused."""
    generator = torch.Generator().manual_seed(12)
    cr, d, hidden = 3, 2, 5
    x = torch.randn(14, hidden, generator=generator, dtype=torch.float64)
    wkv, wgate = (torch.randn(2 * d, hidden, generator=generator, dtype=torch.float64) * 0.5 for _ in range(2))
    ape = torch.randn(cr, 2 * d, generator=generator, dtype=torch.float64)
    cache = torch.randn(3, 8, 4 * d, generator=generator, dtype=torch.float64)
    kwargs = {"coff": 2, "cu_seqlens": int32([0, 7, 7, 12]), "seqused": int32([7, 0, 4]), "start_pos": int32([4, 0, 1]),
              "state_cache": cache, "state_block_table": int32([[1, 2], [0, 0], [2, 1]]), "compute": torch.float64}

    def function(*leaves):
        return reference.compressor(*leaves, cr, intermediates=True, **kwargs)

    leaves = [t.requires_grad_() for t in (x, wkv, wgate, ape)]
    assert torch.autograd.gradcheck(function, leaves)


def test_compressor_stateless_default_reads_zero_history_and_keeps_nothing():
    inputs, kwargs = compressor_problem(torch.bfloat16, "TH", 2, 4, history=False, seed=3)
    default = gradkit.ops.compressor(*inputs, 4, grad_enabled=True, **kwargs)
    cache, table = gradkit.ops.compressor_stateless_cache(inputs[0], inputs[1], 4, 2, cu_seqlens=kwargs["cu_seqlens"])
    assert cache.shape[0] == 1 and torch.count_nonzero(table) == 0
    explicit = gradkit.ops.compressor(*inputs, 4, grad_enabled=True, state_cache=cache, state_block_table=table,
                                      start_pos=int32([0, 0, 0]), **kwargs)
    assert all(torch.equal(a, b) for a, b in zip(default, explicit))
    assert torch.count_nonzero(cache) == 0 and torch.count_nonzero(table) == 0  # entry 0: "do not write"
    # start_pos > 0 without a cache: the history reads zeros, as the reference without a cache does.
    start = int32([5, 0, 2])
    shifted = gradkit.ops.compressor(*inputs, 4, start_pos=start, **kwargs)
    expected = reference.compressor(*[t.double() for t in inputs], 4, start_pos=start, compute=torch.float64,
                                    **kwargs)
    assert_within_one_ulp(shifted.cmp_kv, expected)
    assert shifted.softmax_score is None and shifted.kv is None  # without grad_enabled


def test_compressor_ring_buffer_cache_mode_2():
    inputs, kwargs = compressor_problem(torch.float16, "BSH", 2, 5, history=True, seed=4, cache_mode=2)
    before = kwargs["state_cache"].clone()
    cmp_kv = gradkit.compressor(*inputs, 5, **kwargs)
    expected = reference.compressor(*[t.double() for t in inputs], 5, compute=torch.float64,
                                    **dict(kwargs, state_cache=before))
    assert_within_one_ulp(cmp_kv, expected)
    assert not cmp_kv.requires_grad  # nothing required a gradient: the forward ran without gradEnabled


def test_compressor_strided_inputs_outputs_and_gradients():
    """Views with any strides in (x, wkv, wgate, ape, the state cache, d_cmp_kv) and out (cmp_kv, softmax_score, kv,
    the four gradients, written in place): the bits of the contiguous call."""
    inputs, kwargs = compressor_problem(torch.bfloat16, "BSH", 2, 4, history=True, seed=5)
    cache = kwargs.pop("state_cache")
    plain = gradkit.ops.compressor(*inputs, 4, grad_enabled=True, state_cache=cache.clone(), **kwargs)
    views = [strided(t) for t in inputs]
    cache_view = strided(cache)
    outputs = {"cmp_kv": strided(torch.zeros(plain.cmp_kv.shape, dtype=torch.bfloat16)),
               "softmax_score": strided(torch.zeros(plain.softmax_score.shape)),
               "kv": strided(torch.zeros(plain.kv.shape))}
    viewed = gradkit.ops.compressor(*views, 4, grad_enabled=True, state_cache=cache_view, **kwargs, **outputs)
    assert viewed.cmp_kv is outputs["cmp_kv"] and viewed.kv is outputs["kv"]
    assert all(torch.equal(a, b) for a, b in zip(plain, viewed))
    d_cmp_kv = torch.randn(plain.cmp_kv.shape).bfloat16()
    grad_kwargs = {k: kwargs[k] for k in ("seqused", "start_pos", "coff")}
    grads = gradkit.ops.compressor_grad(*inputs[:3], d_cmp_kv, plain.softmax_score, plain.kv, 4, **grad_kwargs)
    given = {"d_x": strided(torch.zeros(inputs[0].shape, dtype=torch.bfloat16)),
             "d_ape": strided(torch.zeros(inputs[3].shape))}
    strided_grads = gradkit.ops.compressor_grad(*views[:3], strided(d_cmp_kv), strided(plain.softmax_score),
                                                strided(plain.kv), 4, **grad_kwargs, **given)
    assert strided_grads.d_x is given["d_x"] and strided_grads.d_ape is given["d_ape"]
    assert all(torch.equal(a, b) for a, b in zip(grads, strided_grads))
    # Through autograd, with strided leaves and a strided incoming gradient.
    leaves = [t.clone().requires_grad_() for t in views]
    gradkit.compressor(*leaves, 4, state_cache=cache.clone(), **kwargs).backward(strided(d_cmp_kv))
    assert all(torch.equal(leaf.grad, g) for leaf, g in zip(leaves, grads))


def test_compressor_numpy_arrays_give_the_same_bits_as_torch():
    inputs, kwargs = compressor_problem(torch.bfloat16, "TH", 1, 4, history=False, seed=6)
    with_torch = gradkit.ops.compressor(*inputs, 4, grad_enabled=True, **kwargs)

    def bits(t):
        return gradkit.as_bf16(t.view(torch.int16).numpy().view(np.uint16))

    np_kwargs = {k: (v.numpy() if isinstance(v, torch.Tensor) else v) for k, v in kwargs.items()}
    with_numpy = gradkit.ops.compressor(bits(inputs[0]), bits(inputs[1]), bits(inputs[2]), inputs[3].numpy(), 4,
                                        grad_enabled=True, **np_kwargs)
    assert with_numpy.cmp_kv.dtype == np.uint16
    assert np.array_equal(with_numpy.cmp_kv, with_torch.cmp_kv.view(torch.int16).numpy().view(np.uint16))
    assert np.array_equal(with_numpy.softmax_score, with_torch.softmax_score.numpy())
    d_cmp_kv = torch.randn(with_torch.cmp_kv.shape).bfloat16()
    grad_kwargs = {"cu_seqlens": np_kwargs["cu_seqlens"], "seqused": np_kwargs["seqused"], "coff": 1}
    np_grads = gradkit.ops.compressor_grad(bits(inputs[0]), bits(inputs[1]), bits(inputs[2]), bits(d_cmp_kv),
                                           with_numpy.softmax_score, with_numpy.kv, 4, **grad_kwargs)
    grads = gradkit.ops.compressor_grad(*inputs[:3], d_cmp_kv, with_torch.softmax_score, with_torch.kv, 4,
                                        cu_seqlens=kwargs["cu_seqlens"], seqused=kwargs["seqused"])
    assert np.array_equal(np_grads.d_x, grads.d_x.view(torch.int16).numpy().view(np.uint16))
    assert np.array_equal(np_grads.d_ape, grads.d_ape.numpy())


def test_compressor_upstream_torch_extension_names():
    import gradkit.cann_ops_transformer.ops as custom_ops

    assert gradkit.cann_ops_transformer.compressor is custom_ops.compressor
    inputs, kwargs = compressor_problem(torch.bfloat16, "TH", 2, 4, history=True, seed=8)
    cache = kwargs.pop("state_cache")
    leaves = [t.clone().requires_grad_() for t in inputs]
    upstream_cache = cache.clone()
    cmp_kv = custom_ops.compressor(leaves[0], leaves[1], leaves[2], upstream_cache, leaves[3], 4, **kwargs)
    ours = [t.clone().requires_grad_() for t in inputs]
    our_cache = cache.clone()
    expected = gradkit.compressor(*ours, 4, state_cache=our_cache, **kwargs)
    assert torch.equal(cmp_kv, expected) and torch.equal(upstream_cache, our_cache)
    assert not torch.equal(upstream_cache, cache)  # written in place
    weights = torch.randn(cmp_kv.shape).bfloat16()
    cmp_kv.backward(weights)
    expected.backward(weights)
    assert all(torch.equal(a.grad, b.grad) for a, b in zip(leaves, ours))
    assert gradkit.compressor.Function is gradkit.autograd.CompressorFunction
    assert gradkit.compressor.forward_op is gradkit.ops.compressor
    assert gradkit.compressor.backward_op is gradkit.ops.compressor_grad
    assert not hasattr(gradkit.torch_npu, "npu_compressor")  # torch_npu has no public function for it


def test_compressor_errors_carry_status_and_message():
    inputs, kwargs = compressor_problem(torch.bfloat16, "TH", 1, 4, history=False, seed=9)
    x, wkv, wgate, ape = inputs
    with pytest.raises(gradkit.AclnnError) as error:  # TH without cu_seqlens: a required pointer is null
        gradkit.compressor(x, wkv, wgate, ape, 4)
    assert error.value.status == 161001 and error.value.api == "aclnnCompressorGetWorkspaceSize"
    assert "cuSeqlensOptional" in error.value.message
    with pytest.raises(gradkit.AclnnError) as error:  # D = 256
        gradkit.compressor(x, wkv.repeat(2, 1), wgate.repeat(2, 1), ape.repeat(1, 2), 4, **kwargs)
    assert error.value.status == 161002 and "'wkv'" in error.value.message
    with pytest.raises(gradkit.AclnnError) as error:  # seqused beyond the batch's length
        gradkit.ops.compressor(x, wkv, wgate, ape, 4, **dict(kwargs, seqused=int32([99, 0, 0])))
    assert error.value.status == 161002 and "sequsedOptional" in error.value.message
    out = gradkit.ops.compressor(x, wkv, wgate, ape, 4, grad_enabled=True, **kwargs)
    with pytest.raises(gradkit.AclnnError) as error:  # cmp_ratio outside [2, 128]
        gradkit.ops.compressor_grad(x, wkv, wgate, out.cmp_kv, out.softmax_score, out.kv, 1, **kwargs)
    assert error.value.status == 161002 and error.value.api == "aclnnCompressorGradGetWorkspaceSize"
    assert "cmpRatio" in error.value.message and isinstance(error.value, RuntimeError)
    with pytest.raises(gradkit.AclnnError) as error:  # the forward through autograd, fp32 x
        gradkit.compressor(x.float().requires_grad_(), wkv, wgate, ape, 4, **kwargs)
    assert error.value.status == 161002 and "'x'" in error.value.message
