"""Compressor against PyTorch (Debian's torch 1.13). The forward of spec compressor.md 4.1, written below in torch as
a literal loop over batches, blocks and block rows and run in fp64 with autograd, is the reference for
aclnnCompressor (cmp_kv, the gradEnabled outputs softmax_score and kv, and the state cache it writes) and for
aclnnCompressorGrad (the gradients of x, wkv, wgate and ape, from loss = sum(cmp_kv * d_cmp_kv) over the valid
rows). Our backward is fed with our own forward's softmax_score and kv, as in a training step. The state-cache history
(positions before start_pos) is read by the reference from the same cache values, as constants: no gradient flows
into the cache (spec 3.1, 9 #15).

Precision gates:
- cmp_kv (16-bit) is computed in fp32 and rounded once. Each element must lie within one ulp of the 16-bit type of
  the fp64 value (half an ulp of rounding, the rest for fp32 noise near a rounding boundary), plus 1e-6 of the
  tensor's largest value for elements that cancel to near zero; and at least 99% of the elements must equal the fp64
  value rounded to the type, which a second rounding or a 16-bit intermediate would break.
- fp32 outputs of the forward (softmax_score, kv, the state-cache rows the call writes): normwise relative error
  ||ours - ref|| / ||ref|| <= 1e-5. Each value is an fp32 dot product of H = 1024 exact products (16-bit inputs
  widened exactly), then for the weights a softmax over at most 2*cr rows: a handful of roundings of 2^-24 = 6e-8
  relative on values of order one, so errors of order 1e-7 (measured: 6e-8 to 3e-7). 1e-5 keeps a margin of 30 or
  more, yet a wrong term (an APE row off by one position, a history row from the wrong cache slot, a missing max
  subtraction) is of order one. The state-cache bytes the call must not write are compared exactly.
- dX, dWkv, dWgate (16-bit): normwise relative error <= the experimental threshold T of spec dropout_threshold.md
  3.2 for the dtype (2^-7 bf16, 2^-10 fp16; DECISIONS.md "Precision gates"). Spec 5.7 / 9 #9: the matmul operands
  dK and dZ may be rounded to the 16-bit type before the GEMMs, as upstream does, each then carrying up to half an
  ulp besides the final rounding; random, these give a normwise error of about 0.3 ulp of the type (about 2.3e-3
  bf16, 3e-4 fp16), a margin of 3 under T. (Measured now: 1.7e-3 bf16, 2.1e-4 fp16, the final rounding alone.) A
  wrong routing (a token's gradient sent to the neighbouring block, the prev half dropped) or a missing softmax
  centring is of order one.
- dApe (fp32): normwise relative error <= 1e-5, as the fp32 forward outputs: it is the fp32 sum of dZ over the
  tokens of each position class, dZ computed in fp32 from our fp32 softmax_score and kv (whose own errors are of
  order 1e-7) with the compensated K - w of spec 5.7 (measured: 1.3e-7 bf16, 3e-7 fp16).
"""
import importlib.util
import math
import os
import sys

import pytest
import torch

from gradkit_ctypes import AclnnError, compressor, compressor_grad, load_library
from seeds import stable_seed

LIB = load_library()
FP32_RTOL = 1e-5
GRAD_RTOL = {torch.bfloat16: 2.0**-7, torch.float16: 2.0**-10}
HIDDEN = 1024  # the smallest H both operators accept (a multiple of 512 in [1024, 10240])


def load_peer():
    """tools/peers/compressor.py, the vectorised torch forward that `gradkit bench` times."""
    peers = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "peers")
    if peers not in sys.path:  # the peer imports its sibling peer_timing, as it does when run as a script
        sys.path.append(peers)
    spec = importlib.util.spec_from_file_location("compressor_peer", os.path.join(peers, "compressor.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Layout:
    """Sizes and per-batch values of one problem (spec 2), with the row rules of spec 3.3."""

    def __init__(self, th, batch, seq, tokens, cu_seqlens, seqused, start_pos, cr, coff):
        self.th, self.batch, self.seq, self.tokens = th, batch, seq, tokens
        self.cu, self.seqused, self.start_pos, self.cr, self.coff = cu_seqlens, seqused, start_pos, cr, coff

    def first(self, b):
        return self.cu[b] if self.th else b * self.seq

    def length(self, b):
        return self.cu[b + 1] - self.cu[b] if self.th else self.seq

    def used(self, b):
        return self.length(b) if self.seqused is None else self.seqused[b]

    def start(self, b):
        return 0 if self.start_pos is None else self.start_pos[b]

    def blocks(self, b):
        return max(0, (self.start(b) + self.used(b)) // self.cr - self.start(b) // self.cr)

    def rows(self):
        if self.th:
            return min(self.tokens, self.tokens // self.cr + self.batch)
        return self.batch * math.ceil(self.seq / self.cr)

    def row(self, b, j):
        if not self.th:
            return b * math.ceil(self.seq / self.cr) + j
        return sum(self.blocks(k) for k in range(b)) + j


def reference_forward(x, wkv, wgate, ape, lay, history):
    """Spec 4.1, literally, on fp64 tensors: x [T, H] (flat view), wkv / wgate [coff*D, H], ape [cr, coff*D];
    history(b, p) -> (kv_state, score_state) rows [coff*D] (constants). Returns cmp_kv [R, D] (padding rows 0),
    softmax_score and kv [R, N, D] (interleaved rows, padding rows 0), and the valid-row mask [R]."""
    cr, coff = lay.cr, lay.coff
    d = wkv.shape[0] // coff
    kv_proj = x @ wkv.T  # 1. the projections
    gate = x @ wgate.T
    ape_rows = torch.zeros(lay.tokens, dtype=torch.int64)  # 2. the APE of every used token's position
    used = torch.zeros(lay.tokens, 1, dtype=x.dtype)
    for b in range(lay.batch):
        for i in range(lay.used(b)):
            ape_rows[lay.first(b) + i] = (lay.start(b) + i) % cr
            used[lay.first(b) + i] = 1
    gate = gate + ape[ape_rows] * used
    n = coff * cr
    zero_row, zero_block = x.new_zeros(d), x.new_zeros(n, d)
    cmp_rows, score_rows, kv_rows = [zero_row] * lay.rows(), [zero_block] * lay.rows(), [zero_block] * lay.rows()
    valid = torch.zeros(lay.rows(), dtype=torch.bool)
    for b in range(lay.batch):  # 3. every compressed block: gather, softmax over its rows, weighted sum
        sp = lay.start(b)
        for j in range(lay.blocks(b)):
            q = sp // cr + j
            k_rows, z_rows = [], []
            for h in range(coff):  # coff 2: h = 0 the previous block (channels [0, D)), h = 1 the block itself
                channels = slice(h * d, (h + 1) * d)
                for r in range(cr):
                    p = (q - (coff - 1) + h) * cr + r
                    if p < 0:
                        k_rows.append(zero_row)
                        z_rows.append(x.new_full((d,), float("-inf")))
                    elif p < sp:
                        kv_state, score_state = history(b, p)
                        k_rows.append(kv_state[channels])
                        z_rows.append(score_state[channels])
                    else:
                        t = lay.first(b) + p - sp
                        k_rows.append(kv_proj[t, channels])
                        z_rows.append(gate[t, channels])
            k_block, z_block = torch.stack(k_rows), torch.stack(z_rows)
            s = torch.softmax(z_block, dim=0)
            row = lay.row(b, j)
            cmp_rows[row] = (s * k_block).sum(0)
            interleave = lambda t: t.view(coff, cr, d).transpose(0, 1).reshape(n, d)  # noqa: E731
            score_rows[row], kv_rows[row] = interleave(s), interleave(k_block)
            valid[row] = True
    return torch.stack(cmp_rows), torch.stack(score_rows), torch.stack(kv_rows), valid


def make_problem(dtype, layout, coff, cr, d=128, seed=0, cache_mode=1, history=True):
    """Random inputs: x in [-1, 1], weights of variance 1/H (projections of order one), ape in [-0.5, 0.5], a state
    cache in [-1, 1) addressed through a shuffled block table (block 0 never used), d_cmp_kv in [-1, 1]."""
    generator = torch.Generator().manual_seed(seed)

    def uniform(shape, bound):
        return (torch.rand(shape, generator=generator, dtype=torch.float64) * 2 - 1) * bound

    if layout == "BSH-short":  # large cr: one block from this call's tokens, one mostly from the history, one more
        batch, seq = 2, cr + 9
        lay = Layout(False, batch, seq, batch * seq, None, [seq, seq - 3], [0, cr - 5] if history else None, cr, coff)
    elif layout == "BSH":
        batch, seq = 2, 4 * cr + 1
        lay = Layout(False, batch, seq, batch * seq, None, [seq, seq - cr - 2], [0, 2 * cr + 1] if history else None,
                     cr, coff)
    else:  # an empty batch, seqused short of a length, and two rows at the end that no batch owns
        cu = [0, 3 * cr, 3 * cr, 7 * cr + 2]
        lay = Layout(True, 3, 0, cu[-1] + 2, cu, [3 * cr, 0, 4 * cr - 1], [cr + 1, 0, 5] if history else None, cr,
                     coff)
    channels = coff * d
    bound = math.sqrt(3.0 / HIDDEN)
    p = {"lay": lay, "cache_mode": cache_mode,
         "x": uniform([lay.tokens, HIDDEN] if lay.th else [lay.batch, lay.seq, HIDDEN], 1).to(dtype),
         "wkv": uniform([channels, HIDDEN], bound).to(dtype), "wgate": uniform([channels, HIDDEN], bound).to(dtype),
         "ape": uniform([cr, channels], 0.5).float()}
    longest = max(lay.start(b) + lay.length(b) for b in range(lay.batch))
    if cache_mode == 1:
        block_size = 8
        columns = math.ceil(longest / block_size)
        table = (torch.randperm(lay.batch * columns, generator=generator) + 1).view(lay.batch, columns)
    else:  # one ring buffer per batch, the smallest it may be
        block_size = coff * cr + max(lay.length(b) for b in range(lay.batch)) - 1
        table = torch.randperm(lay.batch, generator=generator) + 1
    p["block_size"] = block_size
    p["block_table"] = table.to(torch.int32)
    p["state_cache"] = uniform([int(table.max()) + 1, block_size, 2 * channels], 1).float()
    rows = [lay.batch, math.ceil(lay.seq / cr)] if not lay.th else [lay.rows()]
    p["d_cmp_kv"] = uniform(rows + [d], 1).to(dtype)
    return p


def cache_row(p, b, position):
    """(block, slot) of batch b's absolute position in the state cache (spec 3.7)."""
    block = p["block_table"][b] if p["cache_mode"] == 2 else p["block_table"][b][position // p["block_size"]]
    return int(block), position % p["block_size"]


def int32(values):
    return None if values is None else torch.tensor(values, dtype=torch.int32)


def run_ours(p):
    """Our forward (grad enabled) on a copy of the state cache, then our backward on its softmax_score and kv."""
    lay = p["lay"]
    cache = p["state_cache"].clone()
    optional = {"cu_seqlens": int32(lay.cu), "seqused": int32(lay.seqused), "start_pos": int32(lay.start_pos)}
    forward = compressor(LIB, p["x"], p["wkv"], p["wgate"], cache, p["ape"], p["block_table"], lay.cr, lay.coff,
                         cache_mode=p["cache_mode"], **optional)
    grads = compressor_grad(LIB, p["x"], p["wkv"], p["wgate"], p["d_cmp_kv"], forward["softmax_score"],
                            forward["kv"], lay.cr, lay.coff, **optional)
    return forward, cache, grads


def run_reference(p):
    """The fp64 reference forward, its autograd gradients, and the state cache the forward must leave."""
    lay = p["lay"]
    leaves = {k: p[k].double().requires_grad_() for k in ("x", "wkv", "wgate", "ape")}
    cache = p["state_cache"].double()
    channels = p["wkv"].shape[0]

    def history(b, position):
        block, slot = cache_row(p, b, position)
        return cache[block, slot, :channels], cache[block, slot, channels:]

    x = leaves["x"].reshape(lay.tokens, HIDDEN)
    cmp_kv, score, kv, valid = reference_forward(x, leaves["wkv"], leaves["wgate"], leaves["ape"], lay, history)
    d_cmp_kv = p["d_cmp_kv"].double().reshape(cmp_kv.shape)
    (cmp_kv * d_cmp_kv * valid[:, None]).sum().backward()
    grads = {"d_x": leaves["x"].grad, "d_wkv": leaves["wkv"].grad, "d_wgate": leaves["wgate"].grad,
             "d_ape": leaves["ape"].grad}
    # The cache after the call: this call's kv rows and APE-added score rows where the forward writes (spec 3.7).
    expected_cache, written = cache.clone(), torch.zeros(cache.shape[:2], dtype=torch.bool)
    with torch.no_grad():
        kv_proj = x @ leaves["wkv"].T
        gate = x @ leaves["wgate"].T
        for b in range(lay.batch):
            sp, u = lay.start(b), lay.used(b)
            limit = (sp + u) // lay.cr * lay.cr
            for i in range(u):
                position = sp + i
                if p["cache_mode"] == 2 and position < limit - (lay.coff - 1) * lay.cr:
                    continue
                block, slot = cache_row(p, b, position)
                t = lay.first(b) + i
                expected_cache[block, slot] = torch.cat([kv_proj[t], gate[t] + leaves["ape"][position % lay.cr]])
                written[block, slot] = True
    forward = {"cmp_kv": cmp_kv.detach(), "softmax_score": score.detach(), "kv": kv.detach(), "valid": valid}
    return forward, expected_cache, written, {k: v.detach() for k, v in grads.items()}


def normwise_error(got, expected):
    return ((got.double() - expected).norm() / expected.norm()).item()


def assert_normwise(name, got, expected, gate):
    error = normwise_error(got, expected)
    assert error <= gate, f"{name}: normwise relative error {error:.3g} > {gate:.3g}"


def ulp(values, dtype):
    """The spacing of `dtype` (bfloat16 or float16) at |values| (fp64)."""
    mantissa_bits, min_exponent = (7, -126) if dtype == torch.bfloat16 else (10, -14)
    _, exponent = torch.frexp(values.abs())  # |v| = m * 2^exponent, 0.5 <= m < 1
    return torch.pow(2.0, (torch.clamp(exponent - 1, min=min_exponent) - mantissa_bits).double())


def assert_rounded_once(name, got, expected):
    dtype = got.dtype
    error = (got.double() - expected).abs()
    tolerance = ulp(expected, dtype) + 1e-6 * expected.abs().max()
    worst = (error / tolerance).max().item()
    assert worst <= 1, f"{name}: an element is {worst:.3g} tolerances (1 ulp) away from the fp64 value"
    same = (got == expected.float().to(dtype)).double().mean().item()
    assert same >= 0.99, f"{name}: only {same:.2%} of the elements equal the fp64 value rounded to {dtype}"


def check_training_step(p):
    ours_forward, ours_cache, ours_grads = run_ours(p)
    ref_forward, ref_cache, written, ref_grads = run_reference(p)
    d = p["wkv"].shape[0] // p["lay"].coff
    valid = ref_forward["valid"]
    assert valid.any(), "the problem has no compressed row"
    cmp_kv = ours_forward["cmp_kv"].reshape(-1, d)
    assert_rounded_once("cmp_kv", cmp_kv[valid], ref_forward["cmp_kv"][valid])
    assert torch.equal(cmp_kv[~valid], torch.zeros_like(cmp_kv[~valid])), "cmp_kv padding rows are not 0"
    for key in ("softmax_score", "kv"):
        got = ours_forward[key].reshape(ref_forward[key].shape)
        assert_normwise(key, got[valid], ref_forward[key][valid], FP32_RTOL)
        assert torch.equal(got[~valid], torch.zeros_like(got[~valid])), f"{key} padding rows are not 0"
    assert_normwise("state cache (written rows)", ours_cache[written], ref_cache[written], FP32_RTOL)
    assert torch.equal(ours_cache[~written], p["state_cache"][~written]), "the forward wrote outside its rows"
    for key in ("d_x", "d_wkv", "d_wgate"):
        assert ours_grads[key].dtype == p["x"].dtype
        assert_normwise(key, ours_grads[key], ref_grads[key], GRAD_RTOL[p["x"].dtype])
    assert_normwise("d_ape", ours_grads["d_ape"], ref_grads["d_ape"], FP32_RTOL)
    return ours_grads, ref_grads


@pytest.mark.parametrize("coff, cr", [(1, 4), (2, 3)], ids=["coff1_cr4", "coff2_cr3"])
@pytest.mark.parametrize("layout", ["BSH", "TH"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_training_step_matches_torch_fp64(dtype, layout, coff, cr):
    p = make_problem(dtype, layout, coff, cr, seed=stable_seed(dtype, layout, coff))
    ours, _ = check_training_step(p)
    # Rows that no block routes to (beyond seqused, the uncompressed tail, TH rows no batch owns) get dX = 0.
    lay = p["lay"]
    routed = torch.zeros(lay.tokens, dtype=torch.bool)
    for b in range(lay.batch):
        last = (lay.start(b) + lay.used(b)) // cr * cr - lay.start(b)  # tokens before `last` are compressed
        routed[lay.first(b):lay.first(b) + max(0, last)] = True
    d_x = ours["d_x"].reshape(lay.tokens, HIDDEN)
    assert torch.equal(d_x[~routed], torch.zeros_like(d_x[~routed]))


@pytest.mark.parametrize("layout", ["BSH", "TH"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_without_history(dtype, layout):
    check_training_step(make_problem(dtype, layout, 2, 4, seed=7, history=False))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_ring_buffer_cache(dtype):
    check_training_step(make_problem(dtype, "TH", 2, 5, seed=3, cache_mode=2))


@pytest.mark.parametrize("name, coff, cr", [("C4A", 2, 4), ("C128A", 1, 128)])
def test_named_configurations_with_head_dim_512(name, coff, cr):
    check_training_step(make_problem(torch.bfloat16, "TH" if name == "C4A" else "BSH-short", coff, cr, d=512, seed=11))


@pytest.mark.parametrize("coff, cr", [(1, 4), (2, 3), (2, 5)])
@pytest.mark.parametrize("layout", ["BSH", "TH"])
def test_bench_peer_computes_the_reference_forward(layout, coff, cr):
    # The vectorised forward that `gradkit bench` times is the same function as the literal reference.
    peer = load_peer()
    p = make_problem(torch.bfloat16, layout, coff, cr, seed=5)
    lay = p["lay"]
    x = p["x"].double().reshape(lay.tokens, HIDDEN)
    channels = p["wkv"].shape[0]
    cache = p["state_cache"].double()

    def history(b, position):
        block, slot = cache_row(p, b, position)
        return cache[block, slot, :channels], cache[block, slot, channels:]

    expected, score, kv, valid = reference_forward(x, p["wkv"].double(), p["wgate"].double(), p["ape"].double(), lay,
                                                   history)
    plan = peer.plan(lay.th, lay.batch, lay.seq, lay.tokens, lay.cu, lay.seqused, lay.start_pos, cr, coff)
    hist_kv, hist_score = peer.history_from_cache(plan, cache, p["block_table"].numpy(), p["cache_mode"])
    got, got_score, got_kv = peer.forward(x, p["wkv"], p["wgate"], p["ape"], plan, hist_kv, hist_score,
                                          dtype=torch.float64)
    assert torch.allclose(got, expected, rtol=1e-12, atol=1e-12)
    assert torch.allclose(got_score, score[valid], rtol=1e-12, atol=1e-12)
    assert torch.allclose(got_kv, kv[valid], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case, argument", [
    ("cmp_ratio", "cmpRatio"),
    ("head_dim", "wkv"),
    ("empty_x", "x"),
    ("seqused", "sequsedOptional"),
])
def test_grad_errors_raise_with_status_and_message(case, argument):
    p = make_problem(torch.bfloat16, "BSH", 1, 4, seed=1)
    lay = p["lay"]
    x, wkv, wgate, cr = p["x"], p["wkv"], p["wgate"], lay.cr
    seqused = int32(lay.seqused)
    rows = [lay.batch, math.ceil(lay.seq / cr)]
    if case == "cmp_ratio":
        cr = 1
    elif case == "head_dim":  # D = 256
        wkv = torch.zeros(256, HIDDEN, dtype=torch.bfloat16)
        wgate = wkv.clone()
    elif case == "empty_x":
        x = torch.zeros(lay.batch, 0, HIDDEN, dtype=torch.bfloat16)
        rows = [lay.batch, 0]
    else:
        seqused = int32([lay.seq + 1, 0])
    d = wkv.shape[0]
    with pytest.raises(AclnnError) as raised:
        compressor_grad(LIB, x, wkv, wgate, torch.zeros(rows + [d], dtype=torch.bfloat16),
                        torch.zeros(rows + [cr, d]), torch.zeros(rows + [cr, d]), cr, 1, seqused=seqused)
    assert raised.value.status == 161002
    assert f"argument '{argument}'" in raised.value.message, raised.value.message
    assert raised.value.message.startswith("aclnnCompressorGrad"), raised.value.message


def test_forward_error_raises_with_status_and_message():
    p = make_problem(torch.bfloat16, "TH", 1, 4, seed=2)
    lay = p["lay"]
    with pytest.raises(AclnnError) as raised:  # TH without cu_seqlens: a required pointer is null
        compressor(LIB, p["x"], p["wkv"], p["wgate"], p["state_cache"].clone(), p["ape"], p["block_table"], lay.cr,
                   lay.coff)
    assert raised.value.status == 161001
    assert "argument 'cuSeqlensOptional'" in raised.value.message, raised.value.message
