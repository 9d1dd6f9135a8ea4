"""DeepSeek-V4's sparse attention operators as torch.library custom ops (python/gradkit/_library_sparse.py) with a
current PyTorch: torch.library.opcheck (schema, fake kernel, autograd registration) of sparse_flash_mla and its
backward op, lightning_indexer, lightning_indexer_kl_loss and sparse_flash_mla_softmax_l1_norm, in BSND and TND,
CSA (index lists) and HCA (dense); the custom ops' gradients equal the eager autograd.Functions' bits; and
torch.compile(fullgraph=True) / torch.export of gradkit.nn.CompressedSparseAttention."""
import gradkit_package  # noqa: F401  (puts the built gradkit package on sys.path)
import pytest
import torch

if not hasattr(torch.library, "custom_op"):
    pytest.skip(f"torch {torch.__version__} has no torch.library.custom_op (>= 2.4)", allow_module_level=True)

import gradkit

HAS_L1 = hasattr(gradkit._C, "sparse_flash_mla_softmax_l1_norm")
needs_l1 = pytest.mark.skipif(not HAS_L1, reason="aclnnSparseFlashMlaSoftmaxL1Norm is not in this build yet")
SCALE = 512 ** -0.5


def smla_inputs(layout, mode, dtype=torch.bfloat16, heads=2, seq=(9, 12), ratio=4, topk=2, grad=True):
    """(q, ori_kv, cmp_kv, sinks, indices, cu_seqlens_q, cu_seqlens_ori_kv, cu_seqlens_cmp_kv, residual) of a small
    call: BSND with one batch, or TND with two batches of unequal lengths; mode "csa" lists compressed rows (-1
    included), "hca" reads them all."""
    gen = torch.Generator().manual_seed(3)

    def rand(*shape, scale=1.0):
        return ((torch.rand(*shape, generator=gen) * 2 - 1) * scale).to(dtype).requires_grad_(grad)

    rows = [s // ratio for s in seq]
    if layout == "BSND":
        seq, rows = seq[-1:], rows[-1:]
        q, ori, cmp = rand(1, seq[0], heads, 512, scale=4), rand(1, seq[0], 1, 512), rand(1, rows[0], 1, 512)
        lengths = (None, None, None)
        index_shape = (1, seq[0], 1, topk)
    else:
        cu = torch.tensor([0, seq[0], sum(seq)], dtype=torch.int32)
        cuc = torch.tensor([0, rows[0], sum(rows)], dtype=torch.int32)
        q, ori, cmp = rand(sum(seq), heads, 512, scale=4), rand(sum(seq), 1, 512), rand(sum(rows), 1, 512)
        lengths = (cu, cu, cuc)
        index_shape = (sum(seq), 1, topk)
    sinks = (torch.rand(heads, generator=gen) * 2 - 1).requires_grad_(grad)
    indices = None
    if mode == "csa":
        indices = torch.randint(-1, max(rows), index_shape, generator=gen, dtype=torch.int32)
    residual = torch.tensor([s % ratio for s in seq], dtype=torch.int32)
    return q, ori, cmp, sinks, indices, *lengths, residual


def smla_attributes(ratio=4, window=5):
    """softmax_scale, cmp_ratio, ori_mask_mode, cmp_mask_mode, ori_win_left, ori_win_right."""
    return (SCALE, ratio, 4, 3, window, 0)


CASES = [(layout, mode) for layout in ("BSND", "TND") for mode in ("csa", "hca")]


@pytest.mark.parametrize("layout,mode", CASES)
def test_opcheck_sparse_flash_mla_and_its_grad(layout, mode):
    args = smla_inputs(layout, mode)
    torch.library.opcheck(torch.ops.gradkit.sparse_flash_mla, (*args, *smla_attributes()))
    plain = [t.detach() if isinstance(t, torch.Tensor) else t for t in args]
    q, ori, cmp, sinks, indices, *lengths = plain
    out, lse = torch.ops.gradkit.sparse_flash_mla(*plain, *smla_attributes())
    d_out = torch.randn(out.shape, generator=torch.Generator().manual_seed(4)).to(out.dtype)
    for need in ((True, True, True), (False, True, False)):
        torch.library.opcheck(torch.ops.gradkit.sparse_flash_mla_grad,
                              (q, ori, cmp, d_out, out, lse, sinks, indices, *lengths, *smla_attributes(), *need))


def test_opcheck_sparse_flash_mla_without_cmp_kv():
    q, ori, _, sinks, _, *lengths, _ = smla_inputs("BSND", "hca")
    torch.library.opcheck(torch.ops.gradkit.sparse_flash_mla,
                          (q, ori, None, sinks, None, *lengths, None, SCALE, 1, 3, 0, -1, -1))


@pytest.mark.parametrize("layout,mode", CASES)
def test_custom_op_gradients_equal_the_autograd_function(layout, mode):
    """The registered backward (through torch.ops.gradkit.sparse_flash_mla_grad) gives the eager Function's bits."""
    q, ori, cmp, sinks, indices, cu_q, cu_ori, cu_cmp, residual = smla_inputs(layout, mode)
    leaves = (q, ori, cmp, sinks)
    options = dict(cmp_sparse_indices=indices, cu_seqlens_q=cu_q, cu_seqlens_ori_kv=cu_ori, cu_seqlens_cmp_kv=cu_cmp,
                   cmp_residual_kv=residual, cmp_ratio=4, ori_win_left=5)
    eager = gradkit.sparse_flash_mla(*leaves, **options)
    d_out = torch.randn(eager.shape, generator=torch.Generator().manual_seed(5)).to(eager.dtype)
    want = torch.autograd.grad(eager, leaves, d_out)
    out, _ = torch.ops.gradkit.sparse_flash_mla(q, ori, cmp, sinks, indices, cu_q, cu_ori, cu_cmp, residual,
                                                *smla_attributes())
    got = torch.autograd.grad(out, leaves, d_out)
    assert torch.equal(out, eager)
    for name, a, b in zip(("dq", "d_ori_kv", "d_cmp_kv", "d_sinks"), got, want):
        assert torch.equal(a, b), name


def indexer_inputs(layout, heads=4, seq=(9, 12), ratio=4, topk=2):
    gen = torch.Generator().manual_seed(6)
    rand = lambda *s: torch.rand(*s, generator=gen) * 2 - 1  # noqa: E731
    rows = [s // ratio for s in seq]
    if layout == "BSND":
        q, k, w = rand(1, seq[-1], heads, 128), rand(1, rows[-1], 1, 128), rand(1, seq[-1], heads)
        lengths, residual = (None, None), [seq[-1] % ratio]
    else:
        cu = torch.tensor([0, seq[0], sum(seq)], dtype=torch.int32)
        cuk = torch.tensor([0, rows[0], sum(rows)], dtype=torch.int32)
        q, k, w = rand(sum(seq), heads, 128), rand(sum(rows), 1, 128), rand(sum(seq), heads)
        lengths, residual = (cu, cuk), [s % ratio for s in seq]
    return q.bfloat16(), k.bfloat16(), w, topk, lengths, torch.tensor(residual, dtype=torch.int32)


@pytest.mark.parametrize("layout", ["BSND", "TND"])
def test_opcheck_lightning_indexer_and_kl_loss(layout):
    q, k, w, topk, lengths, residual = indexer_inputs(layout)
    torch.library.opcheck(torch.ops.gradkit.lightning_indexer, (q, k, w, topk, *lengths, residual, 4, 3))
    indices, _ = torch.ops.gradkit.lightning_indexer(q, k, w, topk, *lengths, residual, 4, 3)
    target = torch.rand(indices.shape, generator=torch.Generator().manual_seed(7)) * (indices >= 0)
    target = target / target.sum(-1, keepdim=True).clamp_min(1e-9)
    leaves = [t.clone().requires_grad_() for t in (q, k, w)]
    torch.library.opcheck(torch.ops.gradkit.lightning_indexer_kl_loss, (*leaves, indices, target, *lengths, residual,
                                                                        4, 3))
    # The custom op's loss and gradients (scaled by the loss's gradient) are the eager Function's bits.
    options = dict(cu_seqlens_q=lengths[0], cu_seqlens_k=lengths[1], cmp_residual_k=residual, cmp_ratio=4)
    eager = gradkit.lightning_indexer_kl_loss(*leaves, indices, target, **options)
    want = torch.autograd.grad(3 * eager, leaves)
    loss = torch.ops.gradkit.lightning_indexer_kl_loss(*leaves, indices, target, *lengths, residual, 4, 3)[0]
    got = torch.autograd.grad(3 * loss, leaves)
    assert torch.equal(loss, eager)
    for a, b in zip(got, want):
        assert torch.equal(a, b)


@needs_l1
@pytest.mark.parametrize("layout,mode", CASES)
def test_opcheck_softmax_l1_norm(layout, mode):
    q, ori, cmp, sinks, indices, *lengths, residual = (t.detach() if isinstance(t, torch.Tensor) else t
                                                        for t in smla_inputs(layout, mode))
    _, lse = torch.ops.gradkit.sparse_flash_mla(q, ori, cmp, sinks, indices, *lengths, residual, *smla_attributes())
    cu_cmp = lengths[2]
    max_seqlen_k = cmp.shape[1] if layout == "BSND" else int((cu_cmp[1:] - cu_cmp[:-1]).max())
    args = (q, cmp, lse, indices, lengths[0], cu_cmp, residual, SCALE, max_seqlen_k, 4, 3)
    torch.library.opcheck(torch.ops.gradkit.sparse_flash_mla_softmax_l1_norm, args)
    eager = gradkit.sparse_flash_mla_softmax_l1_norm(q, cmp, lse, indices, cu_seqlens_q=lengths[0],
                                                     cu_seqlens_cmp_kv=cu_cmp, cmp_residual_kv=residual, cmp_ratio=4)
    assert torch.equal(torch.ops.gradkit.sparse_flash_mla_softmax_l1_norm(*args), eager)


def layer(mode):
    return gradkit.nn.CompressedSparseAttention(1024, 2, mode=mode, topk=2, cmp_ratio=4 if mode == "csa" else 8,
                                                generator=torch.Generator().manual_seed(8))


@pytest.mark.parametrize("mode", ["hca", pytest.param("csa", marks=needs_l1)])
def test_compile_fullgraph_and_export_of_the_sparse_attention_layer(mode):
    """gradkit.nn.CompressedSparseAttention traces whole (fullgraph): eager's output, indexer loss and parameter
    gradients bit for bit, and torch.export keeps the sparse ops in the graph."""
    model = layer(mode)
    x = torch.randn(2, 16, 1024, generator=torch.Generator().manual_seed(9)).requires_grad_()
    weights = torch.linspace(-1, 1, 2 * 16 * 1024).reshape(2, 16, 1024)

    def loss(y, indexer_loss):
        return (y * weights).sum() + (indexer_loss if indexer_loss is not None else 0)

    leaves = [x] + list(model.parameters())
    eager = model(x)
    eager_grads = torch.autograd.grad(loss(*eager), leaves)
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")(x)
    compiled_grads = torch.autograd.grad(loss(*compiled), leaves)
    assert torch.equal(compiled[0], eager[0])
    if mode == "csa":
        assert torch.equal(compiled[1], eager[1])
    for (name, _), a, b in zip([("x", None)] + list(model.named_parameters()), compiled_grads, eager_grads):
        assert torch.equal(a, b), name
    program = torch.export.export(model.eval(), (x.detach(),))
    targets = " ".join(str(node.target) for node in program.graph.nodes)
    expected = ["sparse_flash_mla.", "compressor."] + (["lightning_indexer.", "softmax_l1_norm."] if mode == "csa"
                                                       else [])
    for op in expected:
        assert op in targets, (op, targets)
    assert torch.equal(program.module()(x.detach())[0], model(x.detach())[0])
