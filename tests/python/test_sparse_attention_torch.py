"""DeepSeek-V4 sparse attention from Python against PyTorch (Debian's torch 1.13): gradkit.reference's formulas
(_reference_sparse.py: gather + attention with the sink column, the softmax L1 norm, the indexer's scores and top-k,
the KL loss), evaluated in fp64 and differentiated by autograd, are the reference for gradkit.sparse_flash_mla (out,
lse; dq, d_ori_kv, d_cmp_kv, d_sinks), gradkit.lightning_indexer, gradkit.lightning_indexer_kl_loss (loss; dq, dk,
dw), gradkit.sparse_flash_mla_softmax_l1_norm and gradkit.nn.CompressedSparseAttention. Layouts BSND and TND (two
batches of unequal lengths, a residual per batch), CSA (listed compressed rows, with -1 and out-of-range entries) and
HCA (dense), float16 and bfloat16. Tests of operators that have not landed in this build (aclnnSparseFlashMlaGrad,
aclnnSparseFlashMlaSoftmaxL1Norm) are skipped.

Precision gates (normwise ||ours - ref|| / ||ref||; the inputs are rounded to the dtype before the reference sees
them):
- out: one rounding to the 16-bit type after fp32 (or, on the native bf16 tile path, bf16-rounded P) arithmetic:
  2^-8 (measured 1.9e-3 bf16; fp16 2.4e-4). lse, the L1 norm, the indexer's values and dw (fp32 outputs): 1e-5 (fp32
  sums of D = 512 / 128 exact products: measured <= 1e-7).
- dq, d_ori_kv, d_cmp_kv, the indexer's dq and dk: the experimental threshold of spec dropout_threshold.md 3.2 for the
  dtype (2^-7 bf16, 2^-10 fp16; DECISIONS.md "Precision gates"): the final rounding, plus dS rounded to the dtype
  before its products (as upstream) and the bf16 out in Drow (measured 2.2e-3 to 2.4e-3 bf16). d_sinks: 2^-7 (a sum
  of products with Drow, which carries the rounded out). A wrong mask, slot, scale or scatter row is of order one.
- the indexer's selection: a valid top-k (each row's values sorted descending, every selected score >= every
  visible unselected one up to fp32 noise) and equal to the fp64 selection where no two scores are within 1e-4.
"""
import math

import pytest
import torch

from gradkit_package import PYTHON_DIR  # noqa: F401  (puts the package on sys.path, or skips this module)

import gradkit  # noqa: E402
from gradkit import ops, reference  # noqa: E402

OUT_GATE = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-8}
GRAD_GATE = {torch.bfloat16: 2.0**-7, torch.float16: 2.0**-10}
FP32_GATE = 1e-5
HAS_GRAD = hasattr(gradkit._C, "sparse_flash_mla_grad")
HAS_L1 = hasattr(gradkit._C, "sparse_flash_mla_softmax_l1_norm")
needs_grad = pytest.mark.skipif(not HAS_GRAD, reason="aclnnSparseFlashMlaGrad is not in this build yet")
needs_l1 = pytest.mark.skipif(not HAS_L1, reason="aclnnSparseFlashMlaSoftmaxL1Norm is not in this build yet")


def normwise(ours, ref):
    ref = ref.double()
    return float((ours.double() - ref).norm() / ref.norm().clamp_min(1e-300))


class Problem:
    """One sparse attention call: q [.., N1, 512], ori and cmp KV, sinks, indices and lengths, in BSND or TND."""

    def __init__(self, layout, dtype, *, mode="csa", heads=2, seq=(12, 16), ratio=4, topk=3, window=5, seed=0):
        gen = torch.Generator().manual_seed(seed)
        self.layout, self.dtype, self.ratio = layout, dtype, ratio
        batch = len(seq)
        cmp_rows = [s // ratio for s in seq]
        residual = [s % ratio for s in seq]

        def rand(*shape):
            return (torch.rand(*shape, generator=gen, dtype=torch.float64) * 2 - 1).to(dtype)

        if layout == "BSND":
            s, c = max(seq), max(cmp_rows)
            seq, cmp_rows, residual = [s] * batch, [c] * batch, [s % ratio] * batch
            self.q, self.ori = rand(batch, s, heads, 512), rand(batch, s, 1, 512)
            self.cmp = rand(batch, c, 1, 512)
            index_shape = (batch, s, 1, topk)
            self.lengths = {}
        else:
            cu = [0]
            cuc = [0]
            for s, c in zip(seq, cmp_rows):
                cu.append(cu[-1] + s)
                cuc.append(cuc[-1] + c)
            self.q, self.ori, self.cmp = rand(cu[-1], heads, 512), rand(cu[-1], 1, 512), rand(cuc[-1], 1, 512)
            index_shape = (cu[-1], 1, topk)
            as_int = lambda v: torch.tensor(v, dtype=torch.int32)  # noqa: E731
            self.lengths = dict(cu_seqlens_q=as_int(cu), cu_seqlens_ori_kv=as_int(cu), cu_seqlens_cmp_kv=as_int(cuc))
        self.q, self.ori, self.cmp = self.q * 4, self.ori, self.cmp  # scores of order one
        self.sinks = torch.rand(heads, generator=gen, dtype=torch.float32) * 2 - 1
        self.indices = None
        if mode == "csa":
            self.indices = torch.randint(-1, max(cmp_rows) + 1, index_shape, generator=gen, dtype=torch.int32)
        self.options = dict(cmp_ratio=ratio, cmp_residual_kv=torch.tensor(residual, dtype=torch.int32),
                            ori_win_left=window, **self.lengths)

    def reference(self, grad=False):
        leaves = [t.double().requires_grad_(grad) for t in (self.q, self.ori, self.cmp)]
        sinks = self.sinks.double().requires_grad_(grad)
        out, lse = reference.sparse_flash_mla(*leaves, sinks, cmp_sparse_indices=self.indices, **self.options)
        return out, lse, leaves + [sinks]


CASES = [(layout, dtype, mode) for layout in ("BSND", "TND") for dtype in (torch.bfloat16, torch.float16)
         for mode in ("csa", "hca")]


@pytest.mark.parametrize("layout,dtype,mode", CASES)
def test_sparse_flash_mla_forward_matches_fp64(layout, dtype, mode):
    p = Problem(layout, dtype, mode=mode)
    out, lse = gradkit.sparse_flash_mla(p.q, p.ori, p.cmp, p.sinks, cmp_sparse_indices=p.indices, return_lse=True,
                                        **p.options)
    ref_out, ref_lse, _ = p.reference()
    assert out.dtype == dtype and out.shape == p.q.shape
    assert normwise(out, ref_out) <= OUT_GATE[dtype]
    assert normwise(lse, ref_lse) <= FP32_GATE
    expected_lse = (p.q.shape[0], 1, p.q.shape[1], p.q.shape[2]) if layout == "BSND" else (1,) + p.q.shape[:2]
    assert tuple(lse.shape) == expected_lse


def test_sparse_flash_mla_without_sinks_is_plain_attention():
    """sinks None is -inf: out is softmax attention over the window (the ori part only, no cmp_kv)."""
    p = Problem("BSND", torch.bfloat16, mode="hca")
    out = gradkit.sparse_flash_mla(p.q, p.ori, None, None, ori_win_left=-1, ori_win_right=-1, ori_mask_mode=3)
    q, k = p.q.double(), p.ori.double()[:, :, 0]
    scores = torch.einsum("bind,bjd->bnij", q, k) / math.sqrt(512)
    causal = torch.ones(q.shape[1], q.shape[1], dtype=torch.bool).tril()
    expected = torch.einsum("bnij,bjd->bind", torch.softmax(scores.masked_fill(~causal, float("-inf")), -1), k)
    assert normwise(out, expected) <= OUT_GATE[torch.bfloat16]


@needs_grad
@pytest.mark.parametrize("layout,dtype,mode", CASES)
def test_sparse_flash_mla_backward_matches_fp64_autograd(layout, dtype, mode):
    p = Problem(layout, dtype, mode=mode)
    leaves = [t.clone().requires_grad_() for t in (p.q, p.ori, p.cmp, p.sinks)]
    out = gradkit.sparse_flash_mla(*leaves, cmp_sparse_indices=p.indices, **p.options)
    d_out = (torch.rand(out.shape, generator=torch.Generator().manual_seed(9)) * 2 - 1).to(dtype)
    out.backward(d_out)
    ref_out, _, ref_leaves = p.reference(grad=True)
    ref_out.backward(d_out.double())
    for name, ours, ref in zip(("dq", "d_ori_kv", "d_cmp_kv"), leaves, ref_leaves):
        assert ours.grad.dtype == dtype, name
        assert normwise(ours.grad, ref.grad) <= GRAD_GATE[dtype], name
    assert normwise(leaves[3].grad, ref_leaves[3].grad) <= 2.0**-7


@needs_l1
@pytest.mark.parametrize("layout", ["BSND", "TND"])
def test_softmax_l1_norm_matches_fp64(layout):
    p = Problem(layout, torch.bfloat16, mode="csa")
    _, lse = gradkit.sparse_flash_mla(p.q, p.ori, p.cmp, p.sinks, cmp_sparse_indices=p.indices, return_lse=True,
                                      **p.options)
    lengths = dict(cu_seqlens_q=p.lengths.get("cu_seqlens_q"), cu_seqlens_cmp_kv=p.lengths.get("cu_seqlens_cmp_kv"))
    norm = gradkit.sparse_flash_mla_softmax_l1_norm(p.q, p.cmp, lse, p.indices, cmp_ratio=p.ratio,
                                                    cmp_residual_kv=p.options["cmp_residual_kv"], **lengths)
    expected = reference.sparse_flash_mla_softmax_l1_norm(p.q, p.cmp, p.sinks, p.indices, ori_kv=p.ori, **p.options)
    assert norm.shape == p.indices.shape and norm.dtype == torch.float32
    assert normwise(norm, expected) <= FP32_GATE


def indexer_problem(layout, dtype, seed=1, heads=4, seq=(13, 16), ratio=4, topk=3):
    gen = torch.Generator().manual_seed(seed)
    rand = lambda *s: (torch.rand(*s, generator=gen, dtype=torch.float64) * 2 - 1)  # noqa: E731
    rows = [s // ratio for s in seq]
    if layout == "BSND":
        s, c = max(seq), max(rows)
        q, k, w = rand(len(seq), s, heads, 128), rand(len(seq), c, 1, 128), rand(len(seq), s, heads)
        lengths, residual = {}, [s % ratio] * len(seq)
    else:
        cu, cuk = [0], [0]
        for s, c in zip(seq, rows):
            cu.append(cu[-1] + s)
            cuk.append(cuk[-1] + c)
        q, k, w = rand(cu[-1], heads, 128), rand(cuk[-1], 1, 128), rand(cu[-1], heads)
        lengths = dict(cu_seqlens_q=torch.tensor(cu, dtype=torch.int32), cu_seqlens_k=torch.tensor(cuk, dtype=torch.int32))
        residual = [s % ratio for s in seq]
    options = dict(cmp_ratio=ratio, cmp_residual_k=torch.tensor(residual, dtype=torch.int32), **lengths)
    return q.to(dtype), k.to(dtype), w.float(), topk, options


@pytest.mark.parametrize("layout", ["BSND", "TND"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_lightning_indexer_selects_the_fp64_top_k(layout, dtype):
    q, k, w, topk, options = indexer_problem(layout, dtype)
    indices, values = gradkit.lightning_indexer(q, k, w, topk, return_values=True, **options)
    ref_indices, ref_values = reference.lightning_indexer(q, k, w, topk, **options)
    assert indices.dtype == torch.int32 and tuple(indices.shape) == tuple(ref_indices.shape)
    used = indices >= 0
    assert torch.equal(used, ref_indices >= 0)  # as many selected as each row sees
    assert normwise(values[used], ref_values[used]) <= FP32_GATE
    # a valid top-k: sorted descending, every selected score >= every other visible one (fp32 noise aside)
    assert (values[..., 1:][used[..., 1:]] <= values[..., :-1][used[..., 1:]] + 1e-5).all()
    flat_ref = ref_values.reshape(-1, topk)
    gaps = (flat_ref[:, :-1] - flat_ref[:, 1:]).nan_to_num(nan=1.0)
    clear = (gaps.abs() > 1e-4).all(-1) | (flat_ref.isinf().sum(-1) > 0)
    assert torch.equal(indices.reshape(-1, topk)[clear], ref_indices.reshape(-1, topk)[clear])


@pytest.mark.parametrize("layout", ["BSND", "TND"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_indexer_kl_loss_and_gradients_match_fp64_autograd(layout, dtype):
    q, k, w, topk, options = indexer_problem(layout, dtype)
    indices = gradkit.lightning_indexer(q, k, w, topk, **options)
    indices[..., -1] = torch.where(indices[..., -1] >= 0, indices[..., 0], indices[..., -1])  # a duplicate slot
    gen = torch.Generator().manual_seed(4)
    target = torch.rand(indices.shape, generator=gen) * (indices >= 0)
    target = target / target.sum(-1, keepdim=True).clamp_min(1e-9)
    leaves = [t.clone().requires_grad_() for t in (q, k, w)]
    loss = gradkit.lightning_indexer_kl_loss(*leaves, indices, target, **options)
    (3 * loss).backward()
    ref_leaves = [t.double().requires_grad_() for t in (q, k, w)]
    ref_loss = reference.lightning_indexer_kl_loss(*ref_leaves, indices, target, **options)
    (3 * ref_loss).backward()
    assert loss.dtype == torch.float32 and loss.dim() == 0
    assert abs(loss.item() - ref_loss.item()) <= 1e-5 * abs(ref_loss.item())
    for name, ours, ref in zip(("dq", "dk"), leaves, ref_leaves):
        assert ours.grad.dtype == dtype
        assert normwise(ours.grad, ref.grad) <= GRAD_GATE[dtype], name
    assert normwise(leaves[2].grad, ref_leaves[2].grad) <= FP32_GATE


def test_metadata_operators_write_their_images():
    """The metadata operators run through gradkit.ops and write upstream's words (docs/sparse_attention.md)."""
    residual = torch.zeros(1, dtype=torch.int32)
    forward = ops.sparse_flash_mla_metadata(2, batch_size=1, max_seqlen_q=16, max_seqlen_ori_kv=16,
                                            max_seqlen_cmp_kv=4, cmp_topk=4, cmp_ratio=4, cmp_residual_kv=residual)
    assert forward.shape == (1024,) and forward.dtype == torch.int32 and forward[0] == 1  # core 0 enabled
    grad = ops.sparse_flash_mla_grad_metadata(2, batch_size=1, max_seqlen_q=16, max_seqlen_ori_kv=16,
                                              max_seqlen_cmp_kv=4, cmp_topk=4, cmp_ratio=4, cmp_residual_kv=residual)
    assert grad[0] == 16  # T, the query rows
    kl = ops.sparse_lightning_indexer_kl_loss_grad_metadata(2, 4, batch_size=1, max_seqlen_q=16, max_seqlen_k=4,
                                                            cmp_ratio=4, cmp_residual_k=residual)
    assert kl.shape == (64,) and kl[0] == 16
    li = ops.lightning_indexer_v2_metadata(2, 4, batch_size=1, max_seqlen_q=16, max_seqlen_k=4, cmp_ratio=4,
                                           cmp_residual_k=residual)
    assert li.shape == (1024,) and li[0] == 1
    l1 = ops.sparse_flash_mla_softmax_l1_norm_metadata(2, 4, batch_size=1, max_seqlen_q=16, max_seqlen_k=4,
                                                       cmp_ratio=4, cmp_residual_k=residual)
    assert l1[0] == 16


def test_errors_name_the_operator_and_argument():
    p = Problem("BSND", torch.bfloat16, mode="hca")
    with pytest.raises(gradkit.AclnnError) as error:
        gradkit.sparse_flash_mla(p.q[..., :256], p.ori[..., :256], None, p.sinks)
    assert "aclnnSparseFlashMla" in str(error.value) and error.value.status == 161002


# The layer against itself in fp64 torch (y; every parameter's gradient), normwise. q, kv, the compressed rows and
# out cross bf16 interfaces between fp32 products. Measured over seeds 3-7 (module_pair(seed), x seed + 2): HCA y at
# most 1.8e-3, a gradient at most 3.5e-3 (wq; cmp_wgate 3.5e-3, sinks 3e-7); CSA y 1.8e-3, a gradient 4.5e-3
# (index_wgate; index_ww 9e-6, sinks 6e-7), the indexer loss 1.7e-7 (relative). Gates with a margin of about 2.
MODULE_GATES = {"hca": (2.0**-8, 2.0**-7), "csa": (2.0**-8, 1e-2)}
MODULE_LOSS_GATE = 1e-6


def module_pair(mode, seed=3):
    gradkit_layer = gradkit.nn.CompressedSparseAttention(1024, 2, mode=mode, topk=2, cmp_ratio=4 if mode == "csa"
                                                         else 8, generator=torch.Generator().manual_seed(seed))
    reference_layer = gradkit.nn.CompressedSparseAttention(1024, 2, mode=mode, topk=2, cmp_ratio=4 if mode == "csa"
                                                           else 8, reference=torch.float64,
                                                           generator=torch.Generator().manual_seed(seed))
    return gradkit_layer, reference_layer


def test_hca_module_forward_matches_the_reference_module():
    layer, ref_layer = module_pair("hca")
    x = torch.randn(2, 16, 1024, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        y, loss = layer(x)
        ref_y, ref_loss = ref_layer(x)
    assert loss is None and ref_loss is None
    assert normwise(y, ref_y) <= MODULE_GATES["hca"][0]  # bf16 interfaces (q, kv, cmp_kv, out) between fp32 products


@needs_grad
@pytest.mark.parametrize("mode", [pytest.param("csa", marks=needs_l1), "hca"])
def test_module_forward_and_backward_match_the_reference_module(mode):
    """The layer's output, indexer loss and every parameter's gradient against the same layer in fp64 torch."""
    layer, ref_layer = module_pair(mode)
    x = torch.randn(2, 16, 1024, generator=torch.Generator().manual_seed(5))
    results = []
    for module in (layer, ref_layer):
        y, loss = module(x)
        total = (y * torch.linspace(-1, 1, y.numel()).reshape(y.shape)).sum()
        if loss is not None:
            total = total + loss
        total.backward()
        results.append((y, loss))
    out_gate, grad_gate = MODULE_GATES[mode]
    assert normwise(results[0][0], results[1][0]) <= out_gate
    if mode == "csa":
        assert abs(results[0][1].item() - results[1][1].item()) <= MODULE_LOSS_GATE * abs(results[1][1].item())
    for (name, p), (_, ref_p) in zip(layer.named_parameters(), ref_layer.named_parameters()):
        assert p.grad is not None, name
        assert normwise(p.grad, ref_p.grad) <= grad_gate, name  # bf16 interfaces on both sides of each product


@needs_grad
@pytest.mark.parametrize("layout,mode", [("TND", "csa"), ("BSND", "hca")])
def test_bits_do_not_depend_on_the_thread_count(layout, mode):
    """sparse_flash_mla's forward (out, lse) and backward (dq, d_ori_kv, d_cmp_kv, d_sinks), the indexer and its KL
    loss gradients: identical bits with 1, 2 and 3 kernel threads (torch.set_num_threads sets gradkit's count)."""
    import os

    if "GRADKIT_NUM_THREADS" in os.environ:
        pytest.skip("GRADKIT_NUM_THREADS fixes the count")
    p = Problem(layout, torch.bfloat16, mode=mode, heads=4, seq=(37, 64), topk=6, window=20)
    q, k, w, topk, index_options = indexer_problem(layout, torch.bfloat16, seq=(37, 64), topk=6)
    d_out = (torch.rand(p.q.shape, generator=torch.Generator().manual_seed(9)) * 2 - 1).to(torch.bfloat16)
    before, results = torch.get_num_threads(), []
    try:
        for threads in (1, 2, 3):
            torch.set_num_threads(threads)
            leaves = [t.clone().requires_grad_() for t in (p.q, p.ori, p.cmp, p.sinks)]
            out, lse = gradkit.sparse_flash_mla(*leaves, cmp_sparse_indices=p.indices, return_lse=True, **p.options)
            out.backward(d_out)
            assert gradkit._C.num_threads() == threads
            index_leaves = [t.clone().requires_grad_() for t in (q, k, w)]
            indices = gradkit.lightning_indexer(q, k, w, topk, **index_options)
            target = (indices >= 0).float() / (indices >= 0).sum(-1, keepdim=True).clamp_min(1)
            gradkit.lightning_indexer_kl_loss(*index_leaves, indices, target, **index_options).backward()
            results.append([out, lse] + [t.grad for t in leaves] + [indices] + [t.grad for t in index_leaves])
    finally:
        torch.set_num_threads(before)
    names = ("out", "lse", "dq", "d_ori_kv", "d_cmp_kv", "d_sinks", "indices", "index dq", "index dk", "index dw")
    for other in results[1:]:
        for name, a, b in zip(names, results[0], other):
            assert torch.equal(a, b), name
