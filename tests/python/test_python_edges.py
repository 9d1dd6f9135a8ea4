"""The Python module's answers to calls a careless user makes (issue 27's probes): a query of the wrong rank, meta
and fake tensors, a sparse mode that needs a mask given none, and a second derivative through operators that have
none. Each is a clear exception naming the argument, never a bare IndexError / BufferError or silently detached
gradients.

Found from the build tree by gradkit_package.py (skipped when the build has no module). Runs with Debian's torch
1.13 and with a current torch."""
import pytest
import torch

from gradkit_package import PYTHON_DIR  # noqa: F401  (puts the package on sys.path, or skips this module)

import gradkit  # noqa: E402


def _qkv(shape=(1, 2, 8, 16), dtype=torch.float32, requires_grad=False):
    torch.manual_seed(0)
    return [torch.randn(shape, dtype=dtype, requires_grad=requires_grad) for _ in range(3)]


def test_flash_attention_with_a_query_of_the_wrong_rank_names_it():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match=r"query: expected 4 dims for input_layout 'BNSD' \(\[B, N, S, D\]\), "
                                         r"given shape \[2, 8, 16\]"):
        gradkit.flash_attention(q[0], k, v, 2, "BNSD")
    with pytest.raises(ValueError, match=r"key: expected 3 dims for input_layout 'BSH'"):
        gradkit.flash_attention(q.reshape(1, 8, 32), k, v.reshape(1, 8, 32), 2, "BSH")
    with pytest.raises(ValueError, match="input_layout must be"):
        gradkit.flash_attention(q, k, v, 2, "NSD")


def test_meta_tensors_are_refused_naming_the_argument():
    q, k, v = _qkv()
    meta = torch.empty(q.shape, device="meta")
    with pytest.raises(ValueError, match=r"argument 'query': expected a CPU tensor with data .* device 'meta'"):
        gradkit.ops.flash_attention_score(meta, k, v, 2, "BNSD")
    with pytest.raises(ValueError, match=r"argument 'grad_output'.*'meta'"):
        gradkit.ops.threshold_backward(torch.empty(4, device="meta"), torch.ones(4), 0.0)


def test_fake_tensors_are_refused_naming_the_argument():
    fake_tensor = pytest.importorskip("torch._subclasses.fake_tensor")
    q, k, v = _qkv()
    with fake_tensor.FakeTensorMode() as mode:
        fake_q = mode.from_tensor(q)
        with pytest.raises(ValueError, match=r"argument 'query': .*(no data|device)"):
            gradkit.ops.flash_attention_score(fake_q, k, v, 2, "BNSD")


@pytest.mark.parametrize("sparse_mode", [2, 3, 4])
def test_a_template_sparse_mode_without_a_mask_is_refused(sparse_mode):
    q, k, v = _qkv()
    with pytest.raises(gradkit.AclnnError) as error:
        gradkit.flash_attention(q, k, v, 2, "BNSD", sparse_mode=sparse_mode)
    assert error.value.status == 161001
    assert "attenMaskOptional" in str(error.value) and f"sparseMode {sparse_mode}" in str(error.value)
    # With the template it runs (causal, mode 4 with next_tokens 0: the first query sees only the first key).
    out = gradkit.flash_attention(q, k, v, 2, "BNSD", sparse_mode=sparse_mode, next_tokens=0,
                                  atten_mask=gradkit.flash_attention_causal_mask())
    assert torch.allclose(out[:, :, 0], v[:, :, 0], rtol=1e-6, atol=1e-6)


def test_keep_prob_that_is_zero_as_a_float_is_refused():
    q, k, v = _qkv()
    for keep_prob in (1e-300, 1e-46, 1e-40):
        with pytest.raises(gradkit.AclnnError, match="keepProb") as error:
            gradkit.flash_attention(q, k, v, 2, "BNSD", keep_prob=keep_prob, seed=1)
        assert error.value.status == 161002


@pytest.mark.parametrize("name", ["relu", "dropout", "flash_attention"])
def test_double_backward_raises_instead_of_detaching(name):
    q, k, v = _qkv(requires_grad=True)
    if name == "relu":
        out, leaf = gradkit.relu(q), q
    elif name == "dropout":
        out, leaf = gradkit.dropout(q, 0.25, seed=3), q
    else:
        out, leaf = gradkit.flash_attention(q, k, v, 2, "BNSD"), q
    (grad,) = torch.autograd.grad((out * out).sum(), [leaf], create_graph=True)
    assert grad.requires_grad, "a first derivative taken with create_graph must stay in the graph"
    with pytest.raises(RuntimeError, match="differentiate twice"):
        grad.sum().backward()


def test_kernels_follow_torch_threads():
    """torch.set_num_threads applies to gradkit's kernels (unless GRADKIT_NUM_THREADS fixes the count)."""
    import os

    if "GRADKIT_NUM_THREADS" in os.environ:
        pytest.skip("GRADKIT_NUM_THREADS fixes the count")
    before = torch.get_num_threads()
    try:
        for threads in (1, 3):
            torch.set_num_threads(threads)
            gradkit.relu(torch.randn(8, requires_grad=True)).sum().backward()
            assert gradkit._C.num_threads() == threads
    finally:
        torch.set_num_threads(before)
