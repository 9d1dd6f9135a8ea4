"""gradkit.mhc_sinkhorn (aclnnMhcSinkhorn / aclnnMhcSinkhornBackward) against the pure-torch formula
(gradkit.reference.mhc_sinkhorn) in fp64 and its fp64 autograd, with Debian's torch 1.13 or a current one.

Gates: the output and the gradient of x normwise within 1e-5 of fp64, each output element within 2e-5 relative and
each gradient element within 1e-5 of the gradient's largest (measured: 3e-7 normwise, 2.3e-6 on the worst output
element, 6e-7 on the gradient; about 10x below the gates). After 20 rounds the columns sum to 1; a uniform matrix
is checked by hand. Also: fp64 finite differences of the reference (torch.autograd.gradcheck: the oracle's own
gradient), save=False / no_grad giving the same bits and keeping nothing, the raw backward equal to autograd's,
strided inputs and outputs equal to dense ones, numpy arrays equal to torch tensors, the errors of bad calls and of
another SoC profile, and (torch >= 2) torch.func.grad / vmap."""
import os
import subprocess
import sys

import pytest
import torch

from gradkit_package import PYTHON_DIR

import gradkit  # noqa: E402
from gradkit import reference  # noqa: E402

EPS = 1e-6
NORM_RTOL = 1e-5


def sinkhorn_input(lead=(6,), n=4, scale=3.0, seed=0):
    """Logits of a spread that gives softmax entries from ~1e-5 to ~1 (scale 3 for n = 8)."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(*lead, n, n, generator=generator) * scale
    grad = torch.randn(*lead, n, n, generator=generator)
    return x, grad


def fp64_reference(x, grad, num_iters, eps=EPS):
    """The reference output and the gradient of x for `grad`, in fp64 with autograd."""
    leaf = x.detach().double().requires_grad_()
    out = reference.mhc_sinkhorn(leaf, eps, num_iters, compute=torch.float64)
    out.backward(grad.double())
    return out.detach(), leaf.grad


def assert_close(got, expected, name, element_rtol):
    error = (got.double() - expected).abs()
    normwise = (error.norm() / expected.norm()).item()
    assert normwise <= NORM_RTOL, f"{name}: normwise {normwise:.3g}"
    worst = (error / (element_rtol * expected.abs())).max().item() if element_rtol else 0.0
    assert worst <= 1.0, f"{name}: {worst:.3g} of the per-element bound"


@pytest.mark.parametrize("eps", [EPS, 1e-2])  # 1e-2: where each eps enters shows at the gates
@pytest.mark.parametrize("num_iters", [1, 20])
@pytest.mark.parametrize("n", [4, 6, 8])
@pytest.mark.parametrize("lead", [(7,), (2, 5)])
def test_forward_and_gradient_match_fp64_autograd(lead, n, num_iters, eps):
    x, grad = sinkhorn_input(lead, n, seed=10 * n + num_iters)
    leaf = x.clone().requires_grad_()
    out = gradkit.mhc_sinkhorn(leaf, eps, num_iters)
    out.backward(grad)
    expected, expected_grad = fp64_reference(x, grad, num_iters, eps)
    assert out.dtype == torch.float32 and out.shape == x.shape
    assert_close(out, expected, "output", 2e-5)
    assert_close(leaf.grad, expected_grad, "grad_x", None)
    worst = ((leaf.grad.double() - expected_grad).abs().max() / expected_grad.abs().max()).item()
    assert worst <= 1e-5, f"grad_x: largest error {worst:.3g} of the largest gradient"
    # The last step divides by the column sums + eps: each column sums to c / (c + eps), c its sum before. After
    # 20 rounds c is near 1 (the rows were just normalised), so 1 within 1e-5; after one, c is a softmax's
    # column sum and may be small.
    if num_iters == 20 and eps == EPS:
        assert (out.double().sum(-2) - 1).abs().max() <= 1e-5


def test_many_tokens_across_the_kernel_tiles():
    # 520 tokens of n = 6: several tiles of the kernel's split, with a partial last one.
    x, grad = sinkhorn_input((4, 130), 6, scale=2.0, seed=3)
    leaf = x.clone().requires_grad_()
    out = gradkit.mhc_sinkhorn(leaf, EPS, 20)
    out.backward(grad)
    expected, expected_grad = fp64_reference(x, grad, 20)
    assert_close(out, expected, "output", 2e-5)
    assert_close(leaf.grad, expected_grad, "grad_x", None)


def test_uniform_logits_by_hand():
    # softmax of zeros is 1/n; one iteration: (1/n + eps) / (n (1/n + eps) + eps) per element, for any eps.
    eps = 0.01
    out = gradkit.ops.mhc_sinkhorn(torch.zeros(2, 4, 4), eps, 1).output
    expected = (0.25 + eps) / (4 * (0.25 + eps) + eps)
    assert torch.allclose(out, torch.full((2, 4, 4), expected), rtol=1e-6, atol=0)
    assert torch.allclose(reference.mhc_sinkhorn(torch.zeros(4, 4, dtype=torch.float64), eps, 1),
                          torch.full((4, 4), expected, dtype=torch.float64), rtol=1e-15, atol=0)


def test_reference_gradient_agrees_with_finite_differences():
    x, _ = sinkhorn_input((2,), 4, scale=1.0, seed=4)
    for num_iters in (1, 3):
        assert torch.autograd.gradcheck(lambda a: reference.mhc_sinkhorn(a, 1e-3, num_iters),
                                        (x.double().requires_grad_(),), eps=1e-6, atol=1e-9, rtol=1e-6)


@pytest.mark.parametrize("num_iters", [1, 20])
def test_save_false_and_no_grad_give_the_same_bits(num_iters):
    x, _ = sinkhorn_input((3, 5), 8, seed=5)
    saved = gradkit.ops.mhc_sinkhorn(x, EPS, num_iters)
    plain = gradkit.ops.mhc_sinkhorn(x, EPS, num_iters, save=False)
    assert torch.equal(plain.output, saved.output)
    assert plain.norm_out is None and plain.sum_out is None
    tokens = 15
    assert saved.norm_out.shape == (2 * num_iters * tokens * 8 * 8,) and saved.norm_out.dtype == torch.float32
    assert saved.sum_out.shape == (2 * num_iters * tokens * 8,) and saved.sum_out.dtype == torch.float32
    with torch.no_grad():
        inference = gradkit.mhc_sinkhorn(x.clone().requires_grad_(), EPS, num_iters)
    assert inference.grad_fn is None and torch.equal(inference, saved.output)
    assert torch.equal(gradkit.mhc_sinkhorn(x, EPS, num_iters), saved.output)  # x needs no gradient
    trained = gradkit.mhc_sinkhorn(x.clone().requires_grad_(), EPS, num_iters)
    assert trained.grad_fn is not None and torch.equal(trained.detach(), saved.output)


def test_raw_backward_equals_autograd_and_refuses_without_saved_steps():
    x, grad = sinkhorn_input((9,), 6, seed=6)
    leaf = x.clone().requires_grad_()
    gradkit.mhc_sinkhorn(leaf, EPS, 20).backward(grad)
    forward = gradkit.ops.mhc_sinkhorn(x, EPS, 20)
    assert torch.equal(gradkit.ops.mhc_sinkhorn_backward(grad, forward.norm_out, forward.sum_out), leaf.grad)
    unsaved = gradkit.mhc_sinkhorn.Function.apply(x.clone().requires_grad_(), EPS, 20, False)[0]
    with pytest.raises(RuntimeError, match="save=False"):
        unsaved.sum().backward()


def test_strided_inputs_and_outputs_equal_dense_ones():
    x, grad = sinkhorn_input((5,), 8, seed=7)
    dense = gradkit.ops.mhc_sinkhorn(x, EPS, 20)
    x_strided = x.transpose(-1, -2).contiguous().transpose(-1, -2)  # column-major matrices
    out = torch.empty(5, 8, 16)[..., ::2]
    got = gradkit.ops.mhc_sinkhorn(x_strided, EPS, 20, out=out)
    assert got.output is out and torch.equal(out, dense.output)
    assert torch.equal(got.norm_out, dense.norm_out) and torch.equal(got.sum_out, dense.sum_out)
    expected = gradkit.ops.mhc_sinkhorn_backward(grad, dense.norm_out, dense.sum_out)
    grad_x = torch.empty(8, 5, 8).transpose(0, 1)
    strided = gradkit.ops.mhc_sinkhorn_backward(grad.transpose(0, 1).contiguous().transpose(0, 1),
                                                dense.norm_out, dense.sum_out, grad_x=grad_x)
    assert strided is grad_x and torch.equal(grad_x, expected)
    leaf = x_strided.clone().transpose(-1, -2).contiguous().transpose(-1, -2).requires_grad_()
    gradkit.mhc_sinkhorn(leaf, EPS, 20).backward(grad)
    assert torch.equal(leaf.grad, expected)


def test_numpy_arrays_give_the_same_bits_as_torch():
    x, grad = sinkhorn_input((4,), 4, seed=8)
    with_torch = gradkit.ops.mhc_sinkhorn(x, EPS, 20)
    with_numpy = gradkit.ops.mhc_sinkhorn(x.numpy(), EPS, 20)
    for a, b in zip(with_torch, with_numpy):
        assert torch.equal(a, torch.from_numpy(b))
    grad_x = gradkit.ops.mhc_sinkhorn_backward(grad.numpy(), with_numpy.norm_out, with_numpy.sum_out)
    assert torch.equal(torch.from_numpy(grad_x),
                       gradkit.ops.mhc_sinkhorn_backward(grad, with_torch.norm_out, with_torch.sum_out))


def assert_rejects(call, argument):
    with pytest.raises(gradkit.AclnnError) as error:
        call()
    assert error.value.status == 161002, error.value.message
    assert f"argument '{argument}'" in error.value.message, error.value.message


def test_bad_calls_raise_named_errors():
    x, grad = sinkhorn_input((3,), 4)
    assert_rejects(lambda: gradkit.ops.mhc_sinkhorn(x.double(), EPS, 20), "x")
    assert_rejects(lambda: gradkit.mhc_sinkhorn(x.double().requires_grad_(), EPS, 20), "x")
    assert_rejects(lambda: gradkit.ops.mhc_sinkhorn(torch.zeros(3, 5, 5), EPS, 20), "x")
    assert_rejects(lambda: gradkit.ops.mhc_sinkhorn(torch.zeros(3, 4, 6), EPS, 20), "x")
    assert_rejects(lambda: gradkit.ops.mhc_sinkhorn(torch.zeros(4, 4), EPS, 20), "x")
    for num_iters in (0, 101, -3):
        for save in (True, False):
            assert_rejects(lambda: gradkit.ops.mhc_sinkhorn(x, EPS, num_iters, save=save), "numIters")
    saved = gradkit.ops.mhc_sinkhorn(x, EPS, 20)
    assert_rejects(lambda: gradkit.ops.mhc_sinkhorn_backward(grad, saved.norm_out[:-8], saved.sum_out), "normOut")
    assert_rejects(lambda: gradkit.ops.mhc_sinkhorn_backward(grad.double(), saved.norm_out, saved.sum_out),
                   "gradOutput")
    with pytest.raises(ValueError, match="norm_out"):  # no aclTensor for a numpy view with negative strides
        gradkit.ops.mhc_sinkhorn_backward(grad.numpy(), saved.norm_out.numpy()[::-1], saved.sum_out.numpy())


def test_other_profiles_refuse_the_operator():
    # The profile is fixed by the first call of a process, hence a fresh interpreter.
    script = ("import numpy as np, gradkit\n"
              "try:\n"
              "    gradkit.ops.mhc_sinkhorn(np.zeros((2, 4, 4), np.float32))\n"
              "except gradkit.AclnnError as error:\n"
              "    print(error.status, error.message)\n")
    env = dict(os.environ, GRADKIT_SOC="Ascend910B", PYTHONPATH=PYTHON_DIR)
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("161002") and "Ascend950" in result.stdout, result.stdout


@pytest.mark.skipif(not hasattr(torch, "func"), reason="torch.func needs torch >= 2.0")
def test_torch_func_grad_and_vmap():
    from torch.func import grad, vmap

    x, _ = sinkhorn_input((3, 5), 4, seed=9)

    def loss(a):
        return gradkit.mhc_sinkhorn(a, EPS, 20).square().sum()

    leaf = x[0].clone().requires_grad_()
    loss(leaf).backward()
    assert torch.equal(grad(loss)(x[0]), leaf.grad)
    assert torch.equal(vmap(lambda a: gradkit.mhc_sinkhorn(a, EPS, 20))(x),
                       gradkit.ops.mhc_sinkhorn(x, EPS, 20).output)
    assert torch.equal(vmap(grad(loss))(x), torch.stack([grad(loss)(sample) for sample in x]))
