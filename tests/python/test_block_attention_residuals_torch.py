"""gradkit.block_attention_residuals (aclnnBlockAttentionResiduals / aclnnBlockAttentionResidualsGrad) against fp64
torch autograd of the reference formula (gradkit.reference.block_attention_residuals), with Debian's torch 1.13 or a
current one. Cases: float32, float16, bfloat16; N = 1, 4, 8 (and 100, the forward's limit); H = 64 and 4096 (whole
16-lane groups) and 50 (not); T = 5 and 70 (three 32-token chunks of the gradient's weight sums).

The fp64 reference takes the same 16-bit inputs widened exactly, so it differs from gradkit only by gradkit's fp32
arithmetic and the final rounding. Measured over three seeds per case (hidden_states and the four gradients):
- 16-bit (float16, bfloat16) outputs: every element within 0.5 ulp of the fp64 value plus at most 6.7e-7 of the
  tensor's largest value (a plain fp32 torch computation of the formula: 2.3e-7), i.e. rounded correctly up to fp32
  noise; 99.6 % of hidden_states, grad_partial_block, grad_block_res equal to the fp64 value rounded (fp32 torch: the
  same), the weight gradients one element of H apart at worst (0.984 for H = 64; fp32 torch: 0.980). Gate: 0.5 ulp
  + 2e-6 of the largest per element, 99 % exact for the three [T, ..] tensors.
- float32 outputs: normwise at most 1.2e-6 (fp32 torch: 5.4e-7), per element at most 1.6e-6 of the largest
  (grad_norm_weight, N = 100: 303 values a weight sums over; fp32 torch: 6.9e-7). Gate: 5e-6 for both.
Also: inv_norm and probs against the reference's (normwise 1e-6), need_backward=False / no_grad giving the same bits
and keeping nothing, the raw gradient equal to autograd's (strided and given outputs, numpy arrays, N = 0 on the
gradient alone), T = 0, strided inputs giving the bits of dense ones, cann_ops_transformer's names, the errors of bad
calls, and (torch >= 2) torch.func.grad and vmap."""
import pytest
import torch

import gradkit_package  # noqa: F401  (puts the built gradkit package on sys.path)

import gradkit  # noqa: E402
from gradkit import reference  # noqa: E402

EPS = 1e-6
SIXTEEN_BIT_FLOOR = 2e-6  # of the tensor's largest value, added to 0.5 ulp
SIXTEEN_BIT_EXACT = 0.99  # fraction of hidden_states, grad_partial_block, grad_block_res rounded as the fp64 value
FP32_RTOL = 5e-6  # float32: normwise, and per element of the largest value
SAVED_RTOL = 1e-6  # inv_norm, probs normwise
NAMES = ("hidden_states", "grad_partial_block", "grad_block_res", "grad_proj_weight", "grad_norm_weight")


def inputs(t, n, h, dtype, seed, proj_2d=False):
    """partial_block, block_res (rows of different scales), proj_weight (scores of O(1): a softmax that is neither
    flat nor one-hot), norm_weight, and the gradient of hidden_states."""
    generator = torch.Generator().manual_seed(seed)
    partial = torch.randn(t, h, generator=generator).to(dtype)
    block_res = (torch.randn(t, n, h, generator=generator) * (0.5 + torch.rand(t, n, 1, generator=generator)))
    proj = 2 * torch.randn(h, generator=generator) / h ** 0.5
    norm = 1 + 0.2 * torch.randn(h, generator=generator)
    grad = torch.randn(t, h, generator=generator).to(dtype)
    proj = proj.reshape(1, h) if proj_2d else proj
    return (partial, block_res.to(dtype), proj.to(dtype), norm.to(dtype)), grad


def run_gradkit(ins, grad, **kwargs):
    """gradkit.block_attention_residuals with autograd: hidden_states and the gradients of the four inputs."""
    leaves = [t.detach().clone().requires_grad_() for t in ins]
    out = gradkit.block_attention_residuals(*leaves, **kwargs)
    out.backward(grad)
    return out.detach(), [t.grad for t in leaves]


def fp64_reference(ins, grad):
    """The reference in fp64 with autograd: hidden_states (before any rounding) and the four gradients."""
    leaves = [t.detach().double().requires_grad_() for t in ins]
    out = reference.block_attention_residuals(*leaves, compute=torch.float64)
    out.backward(grad.double())
    return out.detach(), [t.grad for t in leaves]


def ulp(values, dtype):
    """One ulp of the 16-bit `dtype` at each |value| (the spacing in its binade), in fp64."""
    mantissa = 10 if dtype == torch.float16 else 7
    smallest = 2.0 ** -14 if dtype == torch.float16 else 2.0 ** -126
    exponent = torch.floor(torch.log2(values.abs().clamp_min(smallest)))
    return torch.pow(2.0, exponent - mantissa)


def normwise(got, expected):
    return ((got.double() - expected).norm() / expected.norm()).item()


def assert_close(got, expected, name):
    """The gates of the module docstring for one output of got's dtype against its fp64 value."""
    assert got.shape == expected.shape, name
    error = (got.double() - expected).abs()
    largest = expected.abs().max()
    if got.dtype == torch.float32:
        assert normwise(got, expected) <= FP32_RTOL, f"{name}: normwise {normwise(got, expected):.3g}"
        worst = (error.max() / largest).item()
        assert worst <= FP32_RTOL, f"{name}: {worst:.3g} of the largest value on one element"
        return
    worst = ((error - 0.5 * ulp(expected, got.dtype)).max() / largest).item()
    assert worst <= SIXTEEN_BIT_FLOOR, f"{name}: {worst:.3g} of the largest value beyond 0.5 ulp"
    if name in NAMES[:3]:
        fraction = (got == expected.to(got.dtype)).double().mean().item()
        assert fraction >= SIXTEEN_BIT_EXACT, f"{name}: {fraction:.4f} rounded as the fp64 value"


def assert_matches(out, grads, ins, ref_out, ref_grads):
    dtype = ins[0].dtype
    assert out.dtype == dtype and all(g.dtype == dtype for g in grads)
    assert [g.shape for g in grads] == [t.shape for t in ins]
    for name, got, expected in zip(NAMES, [out] + list(grads), [ref_out] + list(ref_grads)):
        assert_close(got, expected, name)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("n", [1, 4, 8])
@pytest.mark.parametrize("h", [64, 50])
@pytest.mark.parametrize("t", [5, 70])
def test_forward_and_gradients_match_fp64_autograd(dtype, n, h, t):
    ins, grad = inputs(t, n, h, dtype, seed=100 * n + h + t, proj_2d=(n == 4))
    out, grads = run_gradkit(ins, grad)
    assert_matches(out, grads, ins, *fp64_reference(ins, grad))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("n", [8, 100])
def test_wide_hidden_and_the_most_blocks(dtype, n):
    h = 4096 if n == 8 else 96
    ins, grad = inputs(3, n, h, dtype, seed=n)
    out, grads = run_gradkit(ins, grad, valid_block_num=n)
    assert_matches(out, grads, ins, *fp64_reference(ins, grad))


def test_saved_tensors_follow_their_formulas():
    ins, _ = inputs(6, 4, 50, torch.bfloat16, seed=1)
    out = gradkit.ops.block_attention_residuals(*ins)
    assert out.inv_norm.shape == out.probs.shape == (6, 5)
    assert out.inv_norm.dtype == out.probs.dtype == torch.float32
    _, inv_norm, probs = reference.block_attention_residuals(*ins, compute=torch.float64, intermediates=True)
    assert normwise(out.inv_norm, inv_norm) <= SAVED_RTOL  # measured 5.5e-8
    assert normwise(out.probs, probs) <= SAVED_RTOL  # measured 6.6e-8
    assert (out.probs.double().sum(-1) - 1).abs().max() <= 1e-6


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_need_backward_false_and_no_grad_give_the_same_bits(dtype):
    ins, grad = inputs(7, 4, 64, dtype, seed=2)
    saved = gradkit.ops.block_attention_residuals(*ins)
    plain = gradkit.ops.block_attention_residuals(*ins, need_backward=False)
    assert torch.equal(plain.hidden_states, saved.hidden_states)
    assert plain.inv_norm is None and plain.probs is None
    leaves = [t.clone().requires_grad_() for t in ins]
    with torch.no_grad():
        inference = gradkit.block_attention_residuals(*leaves)
    assert inference.grad_fn is None and torch.equal(inference, saved.hidden_states)
    assert torch.equal(gradkit.block_attention_residuals(*ins), saved.hidden_states)  # no input needs a gradient
    trained = gradkit.block_attention_residuals(ins[0], ins[1], ins[2], leaves[3])  # only norm_weight needs one
    assert trained.grad_fn is not None and torch.equal(trained.detach(), saved.hidden_states)
    unsaved = gradkit.block_attention_residuals.Function.apply(*leaves, -1, EPS, False)
    assert unsaved[1].numel() == 0 and unsaved[2].numel() == 0
    with pytest.raises(RuntimeError, match="need_backward=False"):
        unsaved[0].sum().backward()


@pytest.mark.parametrize("proj_2d", [False, True])
def test_raw_gradient_equals_autograd_with_any_layout(proj_2d):
    ins, grad = inputs(40, 4, 50, torch.bfloat16, seed=3, proj_2d=proj_2d)
    _, auto_grads = run_gradkit(ins, grad)
    f = gradkit.ops.block_attention_residuals(*ins)
    proj = ins[2].reshape(1, -1)
    raw = gradkit.ops.block_attention_residuals_grad(ins[0], ins[1], proj, ins[3], grad, f.inv_norm, f.probs)
    assert raw.grad_proj_weight.shape == (1, 50)
    assert all(torch.equal(a, b.reshape(a.shape)) for a, b in zip(auto_grads, raw))
    for valid in (0, 4):  # upstream's default 0 and N also mean every block
        again = gradkit.ops.block_attention_residuals_grad(ins[0], ins[1], proj, ins[3], grad, f.inv_norm, f.probs,
                                                           valid_block_num=valid)
        assert all(torch.equal(a, b) for a, b in zip(again, raw))
    # strided inputs, given strided outputs: the bits of dense ones
    partial = ins[0].t().contiguous().t()
    block_res = ins[1].permute(2, 0, 1).contiguous().permute(1, 2, 0)
    norm = torch.stack([ins[3], ins[3]], -1)[:, 0]
    proj_strided = torch.stack([proj, proj], -1)[..., 1]
    hidden = torch.empty(40, 100, dtype=torch.bfloat16)[:, ::2]
    strided = gradkit.ops.block_attention_residuals(partial, block_res, proj_strided, norm, hidden_states=hidden)
    assert strided.hidden_states is hidden and all(torch.equal(a, b) for a, b in zip(strided, f))
    outs = [torch.empty(*shape, 2, dtype=torch.bfloat16)[..., 1] for shape in ((40, 50), (40, 4, 50), (1, 50), (50,))]
    grad_strided = grad.t().contiguous().t()
    inv_norm_strided = f.inv_norm.t().contiguous().t()
    given = gradkit.ops.block_attention_residuals_grad(partial, block_res, proj_strided, norm, grad_strided,
                                                       inv_norm_strided, f.probs, grad_partial_block=outs[0],
                                                       grad_block_res=outs[1], grad_proj_weight=outs[2],
                                                       grad_norm_weight=outs[3])
    assert all(a is b for a, b in zip(given, outs)) and all(torch.equal(a, b) for a, b in zip(given, raw))
    # autograd with strided leaves and a broadcast gradient (stride 0) gives the dense bits too
    leaves = [t.detach().requires_grad_() for t in (partial, block_res, proj_strided.reshape(ins[2].shape), norm)]
    gradkit.block_attention_residuals(*leaves).backward(torch.ones(1, 1, dtype=torch.bfloat16).expand(40, 50))
    _, ones_grads = run_gradkit(ins, torch.ones(40, 50, dtype=torch.bfloat16))
    assert all(torch.equal(t.grad, g) for t, g in zip(leaves, ones_grads))


def test_gradient_alone_takes_no_blocks():
    # N = 0 (the gradient's limit, not the forward's): one value per token, probs 1, so the gradient of
    # partial_block is grad_hidden_states and the weight gradients are zeros.
    ins, grad = inputs(9, 1, 50, torch.float32, seed=4)
    partial, _, proj, norm = ins
    block_res = torch.empty(9, 0, 50)
    inv_norm = torch.rsqrt(partial.double().square().mean(-1, keepdim=True) + EPS).float()
    got = gradkit.ops.block_attention_residuals_grad(partial, block_res, proj.reshape(1, -1), norm, grad, inv_norm,
                                                     torch.ones(9, 1))
    assert torch.equal(got.grad_partial_block, grad) and got.grad_block_res.shape == (9, 0, 50)
    assert not got.grad_proj_weight.any() and not got.grad_norm_weight.any()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_no_tokens(dtype):
    ins, _ = inputs(0, 4, 50, dtype, seed=5)
    leaves = [t.clone().requires_grad_() for t in ins]
    out = gradkit.block_attention_residuals(*leaves)
    assert out.shape == (0, 50) and out.dtype == dtype
    out.sum().backward()
    assert leaves[0].grad.shape == (0, 50) and leaves[1].grad.shape == (0, 4, 50)
    assert leaves[2].grad.shape == (50,) and not leaves[2].grad.any() and not leaves[3].grad.any()
    assert reference.block_attention_residuals(*ins).shape == (0, 50)


def test_numpy_arrays_give_the_same_bits_as_torch():
    ins, grad = inputs(6, 4, 50, torch.float16, seed=6, proj_2d=True)
    with_torch = gradkit.ops.block_attention_residuals(*ins)
    with_numpy = gradkit.ops.block_attention_residuals(*(t.numpy() for t in ins))
    assert all(torch.equal(a, torch.from_numpy(b)) for a, b in zip(with_torch, with_numpy))
    expected = gradkit.ops.block_attention_residuals_grad(*ins, grad, with_torch.inv_norm, with_torch.probs)
    raw = gradkit.ops.block_attention_residuals_grad(*(t.numpy() for t in ins), grad.numpy(), *with_numpy[1:])
    assert all(torch.equal(torch.from_numpy(a), b) for a, b in zip(raw, expected))
    # bfloat16 as uint16 bit patterns
    bf16 = [t.bfloat16() for t in ins]
    as_bf16 = [gradkit.as_bf16(t.view(torch.int16).numpy().view("uint16")) for t in bf16]
    got = gradkit.ops.block_attention_residuals(*as_bf16, need_backward=False).hidden_states
    want = gradkit.ops.block_attention_residuals(*bf16, need_backward=False).hidden_states
    assert torch.equal(torch.from_numpy(got.view("int16")).view(torch.bfloat16), want)


def test_cann_ops_transformer_names():
    ins, grad = inputs(6, 4, 50, torch.bfloat16, seed=7, proj_2d=True)
    cot = gradkit.cann_ops_transformer
    f = gradkit.ops.block_attention_residuals(*ins)
    assert torch.equal(cot.block_attention_residuals(*ins), f.hidden_states)
    got = cot.ops.block_attention_residuals_backward(*ins, grad, f.inv_norm, f.probs)
    expected = gradkit.ops.block_attention_residuals_grad(*ins, grad, f.inv_norm, f.probs)
    assert isinstance(got, tuple) and len(got) == 4 and all(torch.equal(a, b) for a, b in zip(got, expected))
    leaves = [t.clone().requires_grad_() for t in ins]
    cot.ops.block_attention_residuals(*leaves, valid_block_num=4, norm_eps=EPS).backward(grad)
    assert all(torch.equal(t.grad, e) for t, e in zip(leaves, expected))


def assert_rejects(call, argument, *fragments, api="aclnnBlockAttentionResiduals"):
    with pytest.raises(gradkit.AclnnError) as error:
        call()
    message = error.value.message
    assert error.value.status == 161002 and error.value.api == api + "GetWorkspaceSize", message
    assert f"argument '{argument}'" in message, message
    for fragment in fragments:
        assert fragment in message, message


def test_bad_calls_raise_named_errors():
    ins, grad = inputs(3, 4, 50, torch.bfloat16, seed=8)
    partial, block_res, proj, norm = ins
    ops = gradkit.ops
    wide = torch.zeros(3, 101, 50, dtype=torch.bfloat16)
    assert_rejects(lambda: ops.block_attention_residuals(partial, wide, proj, norm), "blockRes", "[1, 100]",
                   "N = 101")
    leaf = partial.clone().requires_grad_()
    assert_rejects(lambda: gradkit.block_attention_residuals(leaf, wide, proj, norm), "blockRes")
    for valid in (3, 0, 5):  # the forward takes -1 or N only
        assert_rejects(lambda: ops.block_attention_residuals(*ins, valid_block_num=valid), "validBlockNum",
                       "N = 4", str(valid))
    assert_rejects(lambda: ops.block_attention_residuals(*ins, norm_eps=0.0), "normEps")
    assert_rejects(lambda: ops.block_attention_residuals(partial, block_res.half(), proj, norm), "blockRes",
                   "FLOAT16", "BFLOAT16")
    assert_rejects(lambda: ops.block_attention_residuals(partial, block_res, proj.float(), norm), "projWeight")
    assert_rejects(lambda: ops.block_attention_residuals(*(t.double() for t in ins)), "partialBlock")
    assert_rejects(lambda: ops.block_attention_residuals(partial, block_res, proj, norm[:49]), "normWeight")
    assert_rejects(lambda: ops.block_attention_residuals(partial, block_res[:2], proj, norm), "blockRes")
    f = ops.block_attention_residuals(*ins)
    grad_api = "aclnnBlockAttentionResidualsGrad"
    proj2 = proj.reshape(1, -1)
    assert_rejects(lambda: ops.block_attention_residuals_grad(*ins, grad, f.inv_norm, f.probs), "projWeight",
                   "[1, H]", api=grad_api)
    assert_rejects(lambda: ops.block_attention_residuals_grad(partial, block_res, proj2, norm, grad.half(),
                                                              f.inv_norm, f.probs), "gradHiddenStates", api=grad_api)
    assert_rejects(lambda: ops.block_attention_residuals_grad(partial, block_res, proj2, norm, grad,
                                                              f.inv_norm.bfloat16(), f.probs), "invNorm",
                   api=grad_api)
    assert_rejects(lambda: ops.block_attention_residuals_grad(partial, block_res, proj2, norm, grad, f.inv_norm,
                                                              f.probs, valid_block_num=2), "validBlockNum",
                   api=grad_api)
    assert_rejects(lambda: ops.block_attention_residuals_grad(partial, block_res, proj2, norm, grad, f.inv_norm,
                                                              f.probs[:, :4]), "probs", api=grad_api)
    deep = torch.zeros(3, 129, 50, dtype=torch.bfloat16)
    assert_rejects(lambda: ops.block_attention_residuals_grad(partial, deep, proj2, norm, grad, torch.zeros(3, 130),
                                                              torch.zeros(3, 130)), "blockRes", "[0, 128]",
                   api=grad_api)
    with pytest.raises(ValueError, match="valid_block_num"):
        reference.block_attention_residuals(*ins, valid_block_num=3)


@pytest.mark.skipif(not hasattr(torch, "func"), reason="torch.func needs torch >= 2.0")
def test_torch_func_grad_and_vmap():
    from torch.func import grad, vmap

    ins, g = inputs(6, 4, 50, torch.float32, seed=9)

    def loss(proj):
        return (gradkit.block_attention_residuals(ins[0], ins[1], proj, ins[3]) * g).sum()

    leaf = ins[2].clone().requires_grad_()
    loss(leaf).backward()
    assert torch.equal(grad(loss)(ins[2]), leaf.grad)
    batch = torch.stack([ins[0], ins[0].flip(0), 2 * ins[0]])  # three samples of partial_block
    function = lambda a: gradkit.block_attention_residuals(a, *ins[1:])  # noqa: E731
    assert torch.equal(vmap(function)(batch), torch.stack([function(a) for a in batch]))
    sample_loss = lambda a: (function(a) * g).sum()  # noqa: E731
    assert torch.equal(vmap(grad(sample_loss))(batch), torch.stack([grad(sample_loss)(a) for a in batch]))
