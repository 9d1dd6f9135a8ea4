"""gradkit.mhc_post (aclnnMhcPost / aclnnMhcPostBackward) against fp64 torch autograd of the reference formula
out = h_res^T x + h_out (x) h_post (gradkit.reference.mhc_post, docs/mhc_post.md), with Debian's torch 1.13 or a
current one.

Gates (as tests/python/test_mhc_torch.py): 16-bit outputs (out, grad_x, grad_h_out) are fp32 sums rounded once, so
each element lies within one ulp of its dtype of the fp64 value; fp32 outputs (grad_h_res, grad_h_post: sums over D
in fp32) normwise within 1e-5. Also: strided inputs and outputs, h_res None (a plain residual, grad_x = the
incoming gradient bit for bit), gradcheck-style finite differences of the fp64 reference along a random direction
(so the reference itself is checked), cann_ops_transformer's name, and the errors of bad calls."""
import pytest
import torch

from gradkit_package import PYTHON_DIR  # noqa: F401  (puts the package on sys.path, or skips this module)

import gradkit  # noqa: E402
from gradkit import reference  # noqa: E402

FP32_RTOL = 1e-5


def ulp(values, dtype):
    """One ulp of `dtype` at each |value| (the spacing above it), in fp64."""
    mantissa = 10 if dtype == torch.float16 else 7
    smallest = 2.0 ** -14 if dtype == torch.float16 else 2.0 ** -126
    exponent = torch.floor(torch.log2(values.abs().clamp_min(smallest)))
    return torch.pow(2.0, exponent - mantissa)


def assert_within_ulp(got, expected, name):
    assert got.dtype in (torch.bfloat16, torch.float16), name
    error = (got.double() - expected).abs()
    bound = ulp(expected, got.dtype)
    worst = (error / bound).max().item()
    assert worst <= 1.0, f"{name}: {worst:.3f} ulp"


def assert_normwise(got, expected, name):
    error = (got.double() - expected).norm() / expected.norm().clamp_min(1e-300)
    assert error <= FP32_RTOL, f"{name}: normwise {error:.3g}"


def inputs(lead=(6,), n=4, d=64, dtype=torch.bfloat16, with_h_res=True, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = (torch.rand(*lead, n, d, generator=generator) * 4 - 2).to(dtype)
    h_res = torch.rand(*lead, n, n, generator=generator) / n if with_h_res else None
    h_out = (torch.rand(*lead, d, generator=generator) * 2 - 1).to(dtype)
    h_post = torch.rand(*lead, n, generator=generator) * 2
    grad = (torch.rand(*lead, n, d, generator=generator) * 2 - 1).to(dtype)
    return x, h_res, h_out, h_post, grad


def fp64_reference(x, h_res, h_out, h_post, grad):
    """The reference forward in fp64 with autograd: out and the gradients of the four inputs for `grad`."""
    leaves = [t.detach().double().requires_grad_() if t is not None else None for t in (x, h_res, h_out, h_post)]
    out = reference.mhc_post(*leaves, compute=torch.float64)
    out.backward(grad.double())
    return out.detach(), [t.grad if t is not None else None for t in leaves]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shape", [((6,), 4, 64), ((2, 3), 4, 100), ((5,), 6, 40), ((3,), 8, 17)])
def test_forward_and_gradients_match_fp64_autograd(dtype, shape):
    lead, n, d = shape
    x, h_res, h_out, h_post, grad = inputs(lead, n, d, dtype)
    leaves = [t.clone().requires_grad_() for t in (x, h_res, h_out, h_post)]
    out = gradkit.mhc_post(*leaves)
    out.backward(grad)
    expected, expected_grads = fp64_reference(x, h_res, h_out, h_post, grad)
    assert out.dtype == dtype and out.shape == x.shape
    assert_within_ulp(out, expected, "out")
    assert_within_ulp(leaves[0].grad, expected_grads[0], "grad_x")
    assert_normwise(leaves[1].grad, expected_grads[1], "grad_h_res")
    assert_within_ulp(leaves[2].grad, expected_grads[2], "grad_h_out")
    assert_normwise(leaves[3].grad, expected_grads[3], "grad_h_post")


def test_reference_gradients_agree_with_finite_differences():
    x, h_res, h_out, h_post, grad = inputs((3,), 4, 16, torch.float32)
    args = [t.double() for t in (x, h_res, h_out, h_post)]
    _, grads = fp64_reference(*args, grad)
    generator = torch.Generator().manual_seed(5)
    for index, arg in enumerate(args):
        direction = torch.randn(arg.shape, generator=generator, dtype=torch.float64)
        step = 1e-6
        plus = list(args)
        minus = list(args)
        plus[index] = arg + step * direction
        minus[index] = arg - step * direction
        difference = ((reference.mhc_post(*plus, compute=torch.float64) -
                       reference.mhc_post(*minus, compute=torch.float64)) * grad.double()).sum() / (2 * step)
        assert torch.isclose(difference, (grads[index] * direction).sum(), rtol=1e-7, atol=1e-9), index


def test_without_h_res_is_a_plain_residual():
    x, _, h_out, h_post, grad = inputs((4,), 8, 32, torch.float16, with_h_res=False)
    leaves = [t.clone().requires_grad_() for t in (x, h_out, h_post)]
    out = gradkit.mhc_post(leaves[0], None, leaves[1], leaves[2])
    out.backward(grad)
    expected = (x.float() + h_out.float().unsqueeze(-2) * h_post.unsqueeze(-1)).to(torch.float16)
    assert torch.equal(out, expected)  # one product and one sum in fp32, rounded once
    assert torch.equal(leaves[0].grad, grad)


def test_strided_inputs_and_outputs_equal_dense_ones():
    x, h_res, h_out, h_post, grad = inputs((5,), 4, 48)
    dense = gradkit.ops.mhc_post(x, h_res, h_out, h_post)
    x_strided = x.transpose(0, 1).contiguous().transpose(0, 1)  # [T, N, D] with T innermost in memory
    out = torch.empty(5, 4, 96, dtype=x.dtype)[..., ::2]
    got = gradkit.ops.mhc_post(x_strided, h_res.transpose(-1, -2).contiguous().transpose(-1, -2), h_out, h_post,
                               out=out)
    assert got is out and torch.equal(out, dense)
    grads = gradkit.ops.mhc_post_backward(grad, x, h_res, h_out, h_post)
    grad_x = torch.empty(5, 4, 96, dtype=x.dtype)[..., 1::2]
    strided = gradkit.ops.mhc_post_backward(grad.transpose(0, 1).contiguous().transpose(0, 1), x_strided, h_res,
                                            h_out, h_post, grad_x=grad_x)
    for a, b in zip(grads, strided):
        assert torch.equal(a, b)


def test_cann_ops_transformer_name():
    x, h_res, h_out, h_post, _ = inputs()
    assert torch.equal(gradkit.cann_ops_transformer.mhc_post(x, h_res, h_out, h_post),
                       gradkit.ops.mhc_post(x, h_res, h_out, h_post))


def test_bad_calls_raise_named_errors():
    x, h_res, h_out, h_post, _ = inputs()
    with pytest.raises(gradkit.AclnnError) as error:
        gradkit.ops.mhc_post(x, h_res, h_out.float(), h_post)
    assert error.value.status == 161002 and "hOut" in error.value.message
    with pytest.raises(gradkit.AclnnError) as error:
        gradkit.ops.mhc_post(x, h_res[:, :3], h_out, h_post)
    assert error.value.status == 161002 and "hRes" in error.value.message
