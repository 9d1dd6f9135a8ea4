"""gradkit.nn.HyperConnection (the whole mHC layer: MhcPre, MhcSinkhorn, the sub-layer, MhcPost, and their
backwards; or the fused MhcPreSinkhorn pair) against fp64 torch autograd of the same module in pure torch
(reference=torch.float64: gradkit.reference's formulas), with the same parameters, inputs and sub-layer.

Measured (seeds 0-3; bf16 streams and a dense Linear sub-layer, D = 64 and 128; one fp16 case):
- the next streams and grad x (16-bit, compared with the fp64 layer's rounded to the same dtype): normwise at most
  1.1e-5 and 8e-5, the largest error 1.4e-4 and 1.5e-3 of the largest magnitude (one bf16 ulp of it is 3.9e-3),
  at least 99.93 % equal. Gate: 1e-3 normwise, one ulp of the largest, 99 % equal.
- the parameters' gradients (fp32: phi, alpha, bias, gamma, the sub-layer's weight): normwise at most 8.9e-7
  (4.6e-6 with fp16 streams). Gate: 2e-5, where a 0.01 % error in one gradient fails.
The fused variant (Ascend950 profile: D = 4096, HF32 matmul operands forward, fp32 backward) rounds h_in to bf16
from an HF32 computation, and about 0.3 % of its elements land one ulp off the fp64 layer's (the values lie within
fp32 noise of a rounding boundary; tests/python/test_mhc_pre_sinkhorn_torch.py); a dense sub-layer would spread
each of those over a whole row, so this test wraps an element-wise one. Measured: next streams 5.4e-5 normwise,
grad x 2.2e-4 (2.0e-3 of the largest), 99.5 % equal; the parameters' gradients 3.3e-5 (they sum h_in over the
tokens). Gates: the same for the streams, 2e-4 for the parameters."""
import os
import re

import gradkit_package  # noqa: F401  (puts the built gradkit package on sys.path)
import pytest
import torch

import gradkit
from gradkit.nn import HyperConnection

MANTISSA_BITS = {torch.bfloat16: 8, torch.float16: 11}  # significand bits, the implicit one included
PARAMETER_GATE, FUSED_PARAMETER_GATE = 2e-5, 2e-4


class Linear(torch.nn.Module):
    """A sub-layer with a weight of its own, taking h_in in fp32; forward(h, scale) scales its output."""

    def __init__(self, dim, generator):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(dim, dim, generator=generator) / dim ** 0.5)

    def forward(self, h, scale=1.0):
        return (h.float() @ self.weight.t()) * scale


class Scale(torch.nn.Module):
    """An element-wise sub-layer (a weight per channel), taking h_in in fp32."""

    def __init__(self, dim, generator):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(dim, generator=generator))

    def forward(self, h):
        return h.float() * self.weight


def layer(dim, seed, sublayer=Linear, **kwargs):
    """A HyperConnection around a fresh sub-layer; the same seed gives the same parameters."""
    generator = torch.Generator().manual_seed(seed)
    return HyperConnection(sublayer(dim, generator), n=4, dim=dim, generator=generator, **kwargs)


def run(module, x, weight, *args):
    """The next streams and the gradients of sum(next * weight): x's, then every parameter's by name."""
    x = x.clone().requires_grad_(True)
    out = module(x, *args)
    (out.float() * weight).sum().backward()
    return out.detach(), x.grad, {name: p.grad for name, p in module.named_parameters()}


def assert_close_to_fp64(ours, exact, what):
    """16-bit results against the fp64 layer's (rounded to the same dtype): normwise within 1e-3, every element
    within one ulp of the largest magnitude, 99 % equal. (Per element the error is not bounded by the element's own
    ulp: a result near zero sums terms of the largest magnitude.)"""
    ulp_of_one = 2.0 ** (1 - MANTISSA_BITS[ours.dtype])
    ours, exact = ours.double(), exact.double()
    largest = exact.abs().max()
    assert (ours - exact).norm() <= 1e-3 * exact.norm(), (what, ((ours - exact).norm() / exact.norm()).item())
    assert (ours - exact).abs().max() <= ulp_of_one * largest, what
    assert (ours == exact).double().mean() >= 0.99, (what, (ours == exact).double().mean().item())


def assert_matches_fp64_layer(x, dim, seed, *args, parameter_gate=PARAMETER_GATE, **kwargs):
    weight = torch.randn(x.shape, generator=torch.Generator().manual_seed(seed + 100))
    ours = run(layer(dim, seed, **kwargs), x, weight, *args)
    exact = run(layer(dim, seed, reference=torch.float64, **kwargs), x, weight, *args)
    assert ours[0].dtype == x.dtype and ours[0].shape == x.shape
    assert_close_to_fp64(ours[0], exact[0], "next streams")
    assert_close_to_fp64(ours[1], exact[1], "grad x")
    assert ours[2].keys() == exact[2].keys()
    for name, grad in ours[2].items():
        assert grad is not None, name
        error = (grad.double() - exact[2][name].double()).norm() / exact[2][name].double().norm()
        assert error <= parameter_gate, (name, error.item())
    return ours


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("shape", [(24, 4, 128), (2, 9, 4, 64)], ids=["TND", "BSND"])
def test_matches_fp64_autograd_of_the_layer(shape, seed):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed)).bfloat16()
    _, _, grads = assert_matches_fp64_layer(x, shape[-1], seed)
    assert set(grads) == {"sublayer.weight", "pre.phi", "pre.alpha", "pre.bias", "pre.gamma"}


def test_float16_streams_and_sublayer_arguments():
    """fp16 streams; extra arguments reach the sub-layer (scale 0.5)."""
    x = torch.randn(16, 4, 64, generator=torch.Generator().manual_seed(5)).half()
    assert_matches_fp64_layer(x, 64, 5, 0.5)


@pytest.mark.parametrize("seed", range(2))
def test_fused_pre_sinkhorn_matches_fp64_autograd_of_the_layer(seed):
    """fused=True: aclnnMhcPreSinkhorn(+Backward) (Ascend950 profile: D = 4096), no norm weight."""
    x = torch.randn(3, 4, 4096, generator=torch.Generator().manual_seed(seed)).bfloat16()
    _, _, grads = assert_matches_fp64_layer(x, 4096, seed, fused=True, sublayer=Scale,
                                            parameter_gate=FUSED_PARAMETER_GATE)
    assert set(grads) == {"sublayer.weight", "pre.phi", "pre.alpha", "pre.bias"}


def test_identity_sublayer_is_the_composition_of_the_operators():
    """The module is mhc_pre -> mhc_sinkhorn -> mhc_post, bit for bit (here with the identity as the sub-layer)."""
    x = torch.randn(8, 4, 64, generator=torch.Generator().manual_seed(7)).bfloat16()
    module = HyperConnection(lambda h: h, n=4, dim=64, num_iters=7, sinkhorn_eps=1e-4,
                             generator=torch.Generator().manual_seed(7))
    p = module.pre
    with torch.no_grad():
        h_in, h_post, logits = gradkit.mhc_pre(x, p.phi, p.alpha, p.bias, p.gamma)
        expected = gradkit.mhc_post(x, gradkit.mhc_sinkhorn(logits, 1e-4, 7), h_in, h_post)
        assert torch.equal(module(x), expected)


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="dim"):
        HyperConnection(torch.nn.Identity(), n=4)
    with pytest.raises(TypeError, match="callable"):
        HyperConnection(3, n=4, dim=64)
    with pytest.raises(ValueError, match="norm weight"):
        HyperConnection(torch.nn.Identity(), n=4, dim=64, fused=True, norm_weight=True)
    with pytest.raises(ValueError, match="reference"):
        HyperConnection(torch.nn.Identity(), n=4, dim=64, reference=torch.float16)
    module = HyperConnection(lambda h: h[..., :32], n=4, dim=64)
    with pytest.raises(ValueError, match=r"input's shape \(8, 64\), got \(8, 32\)"):
        module(torch.zeros(8, 4, 64, dtype=torch.bfloat16))
    with pytest.raises(gradkit.AclnnError, match="x"):  # the operators' own checks: fp32 streams
        HyperConnection(torch.nn.Identity(), n=4, dim=64)(torch.zeros(8, 4, 64))


def test_parameters_and_repr():
    module = layer(64, 0)
    assert module.pre.phi.shape == (24, 256) and module.pre.gamma.shape == (4, 64)
    assert "sublayer.weight" in dict(module.named_parameters())
    assert "n=4, dim=64, num_iters=20" in repr(module)
    assert HyperConnection(torch.nn.Identity(), n=4, dim=64, fused=True).pre.gamma is None


def test_the_example_of_docs_mhc_runs():
    """docs/mhc.md's HyperConnection example (its one python block) runs as written and trains every parameter."""
    path = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "mhc.md")
    with open(path) as f:
        text = f.read()
    example = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    names = {}
    exec(compile(example, path, "exec"), names)
    assert names["x"].shape == (8, 128, 4, 256)
    assert all(p.grad is not None for p in names["block"].parameters())
