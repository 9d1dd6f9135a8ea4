"""gradkit.nn with the torch of this interpreter. scaled_dot_product_attention: on Debian's torch 1.13 (no
torch.library.custom_op, no torch SDPA) it runs through gradkit.autograd's Function, checked here against attention
written in fp64 torch (softmax(Q K^T * scale + mask) V, differentiated by autograd); tests/python/current_torch/
test_torch_library.py checks it against torch's own SDPA. Gate: normwise relative error <= 1e-5 in fp32 (as
tests/python/test_flash_attention_torch.py). CPU autocast; the MhcPre module."""
import gradkit_package  # noqa: F401  (puts the built gradkit package on sys.path)
import pytest
import torch

from gradkit.nn.functional import scaled_dot_product_attention as gk_sdpa


def reference(q, k, v, mask=None, causal=False, scale=None):
    """fp64 attention with SDPA's semantics: bool mask True takes part, float mask added; GQA by repeating heads."""
    q, k, v = (x.double() for x in (q, k, v))
    group = q.shape[-3] // k.shape[-3]
    k, v = k.repeat_interleave(group, dim=-3), v.repeat_interleave(group, dim=-3)
    scores = q @ k.transpose(-1, -2) * (scale if scale is not None else q.shape[-1] ** -0.5)
    if causal:
        mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
    if mask is not None and mask.dtype == torch.bool:
        scores = scores.masked_fill(~mask, float("-inf"))
    elif mask is not None:
        scores = scores + mask.double()
    return torch.softmax(scores, dim=-1) @ v


def relative(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


@pytest.mark.parametrize("case", ["plain", "causal", "bool_mask", "float_mask", "gqa", "three_dims"])
def test_matches_fp64_attention(case):
    torch.manual_seed(4)
    heads, kv_heads = (4, 2) if case == "gqa" else (2, 2)
    q = torch.randn(2, heads, 20, 16, requires_grad=True)
    k, v = torch.randn(2, kv_heads, 28, 16, requires_grad=True), torch.randn(2, kv_heads, 28, 8, requires_grad=True)
    kwargs, ref_kwargs = {}, {}
    if case == "causal":
        kwargs["is_causal"] = ref_kwargs["causal"] = True
    elif case == "bool_mask":
        kwargs["attn_mask"] = ref_kwargs["mask"] = torch.rand(20, 28) > 0.3
    elif case == "float_mask":
        kwargs["attn_mask"] = ref_kwargs["mask"] = torch.randn(2, 1, 20, 28)
    elif case == "gqa":
        kwargs["enable_gqa"] = True
    inputs = (q[0], k[0], v[0]) if case == "three_dims" else (q, k, v)
    ours, want = gk_sdpa(*inputs, **kwargs), reference(*inputs, **ref_kwargs)
    assert ours.shape == want.shape and relative(ours, want) <= 1e-5
    dy = torch.randn(want.shape)
    got = torch.autograd.grad(ours, (q, k, v), dy)
    expected = torch.autograd.grad(want, (q, k, v), dy.double())
    for name, a, b in zip("qkv", got, expected):
        assert relative(a, b) <= 1e-5, name


def test_cpu_autocast_runs_in_bfloat16():
    """Under torch.autocast("cpu") float32 inputs run in bfloat16 (as torch's SDPA does), gradients come back float32."""
    torch.manual_seed(6)
    q, k, v = (torch.randn(1, 2, 16, 16, requires_grad=True) for _ in range(3))
    with torch.autocast("cpu"):
        out = gk_sdpa(q, k, v)
    assert out.dtype == torch.bfloat16
    expected = gk_sdpa(*(x.detach().bfloat16() for x in (q, k, v)))
    assert torch.equal(out, expected)
    out.float().sum().backward()
    assert q.grad.dtype == torch.float32 and k.grad is not None and v.grad is not None


def test_mhc_pre_module_is_the_function_with_its_parameters():
    import gradkit

    module = gradkit.nn.MhcPre(4, 64, generator=torch.Generator().manual_seed(1))
    assert [name for name, _ in module.named_parameters()] == ["phi", "alpha", "bias", "gamma"]
    assert module.phi.shape == (24, 256) and module.bias[8:].reshape(4, 4).equal(torch.eye(4))
    x = torch.randn(2, 5, 4, 64).bfloat16()
    outs = module(x)
    want = gradkit.mhc_pre(x, module.phi, module.alpha, module.bias, module.gamma)
    assert all(torch.equal(a, b) for a, b in zip(outs, want))
    sum(o.float().sum() for o in outs).backward()
    assert all(p.grad is not None for p in module.parameters())
    assert gradkit.nn.MhcPre(4, 64, norm_weight=False).gamma is None


def test_compressor_module_is_the_function_with_its_parameters():
    import gradkit

    module = gradkit.nn.Compressor(1024, 128, 4, coff=2, generator=torch.Generator().manual_seed(2))
    assert [name for name, _ in module.named_parameters()] == ["wkv", "wgate", "ape"]
    assert module.wkv.shape == (256, 1024) and module.wkv.dtype == torch.bfloat16
    assert module.ape.shape == (4, 256) and module.ape.dtype == torch.float32 and not module.ape.any()
    x = torch.randn(1, 12, 1024).bfloat16()
    out = module(x)
    want = gradkit.compressor(x, module.wkv, module.wgate, module.ape, 4, coff=2)
    assert out.shape == (1, 3, 128) and torch.equal(out, want)
    out.float().square().sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in module.parameters())
