"""The seed's flash attention precision framework (spec fag.md 5: upstream's tests/pytest for
FlashAttentionScoreGrad) on gradkit's Python module, structured as the seed is: one CalculationContext per case holds
every input (generated once), the golden (reference.flash_attention in fp64, differentiated by autograd; upstream's is
fp32) and the operator call both read it, and check_result applies the seed's rule (spec 5.11), asserted as
DECISIONS.md asks: an output fails when its largest |a - b| exceeds 0.1 or more than 0.5 % of its elements exceed
max(max(|a|, |b|) * 0.005, fp16(2.5e-5) = 2.4974346e-05).

The golden gradients are those of the attention_in the operator receives (the golden out rounded to the case dtype):
every backward reads attention_in through Drow = rowsum(dy * attention_in), and on TND_06 (ALiBi-concentrated rows,
where dq is a small difference of large terms) that rounding alone puts 0.83 % of dq over the threshold against the
unrounded chain (measured here: upstream's golden would fail an exact backward). The fp32 rounding of the
statistics (below 1e-7 relative) is left out. auto_grad also judges the forward's out.

The cases are the data of cases/flash_attention_seed.json (the same file `gradkit verify --op
flash_attention_score_grad` runs): adding an entry there adds a case here. Both of the seed's modes run: grad_only
(the golden forward's attention_out and statistics are the backward's inputs) and auto_grad (the backend's forward,
then its backward, with the same Philox dropout from the case's seed / offset).

Backends (GRADKIT_FA_BACKEND = gradkit | torch_npu; default torch_npu when `import torch_npu` works, else gradkit):
- gradkit: gradkit.torch_npu.npu_fusion_attention_grad (torch_npu's names) for pse_type 1, gradkit.ops
  .flash_attention_score_grad where torch_npu's v1 signature has no pse_type; auto_grad through
  gradkit.ops.flash_attention_score with the case's seed / offset. gradkit's Python module has no rope arguments:
  MLA_02 passes query / key with their full head dim 192 (= query ++ query_rope, the same scores) and splits dq / dk
  at 128 into dq, dq_rope and dk, dk_rope; the rope entry point itself is checked by the C++ runner.
- torch_npu (an NPU host; not testable here): torch_npu.npu_fusion_attention_grad_v2 as upstream calls it (tensors
  on npu:0, query_rope / key_rope for rope cases, the golden out as attention_in) and, for auto_grad,
  npu_fusion_attention_v2 + autograd; gradkit's golden and checks unchanged. Its dropout comes from the NPU's own
  generator in auto_grad (as upstream), from seed / offset in grad_only.
FP8 cases (FP8E5_03, FP8E4_04; grad_only, as upstream: no FP8 forward) follow spec 5.9: the standard normal
inputs quantised per (batch, head) and 128-row block by reference.fp8_quantize (float32 block scales, RNE casts;
a port of the spec's get_block_quant_scale, independent of gradkit's C++), the golden is reference
.flash_attention_fp8 (the FP8 forward and backward chain in float64, P_d and dS cast to fp8) with attention_in
rounded to out_dtype and float32 statistics, and the operator gets the fp8 codes with d_scale_q / d_scale_k /
d_scale_v / d_scale_dy (d_scale_o = d_scale_q, as upstream) and out_dtype. With torch 1.13 (no float8 dtype) the
codes travel as uint8 tensors with fp8_format; with torch >= 2.1 as torch.float8_* tensors.

Each check line goes to stdout (pytest -s) and to the run log: $GRADKIT_SEED_LOG, else run_log.txt in pytest's
temporary directory (its path is printed).
"""
import json
import math
import os
import time
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch

from gradkit_package import PYTHON_DIR  # noqa: F401  (puts the package on sys.path, or skips this module)

import gradkit  # noqa: E402,F401
from gradkit import ops, reference  # noqa: E402
from gradkit import torch_npu as gk_torch_npu  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CASES = json.load(open(os.path.join(REPO, "cases", "flash_attention_seed.json")))["cases"]
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
FLT_MAX = float(np.finfo(np.float32).max)
THRESHOLD_FLOOR = float(torch.tensor(2.5e-5, dtype=torch.float16).float())  # 2.4974346e-05, as upstream stores it
RELATIVE, DIFF_MAX_LIMIT, RATIO_LIMIT = 0.005, 0.1, 0.005
ROPE_SPLIT = 128
ALIBI_ROWS = 1024


def backend_name():
    wanted = os.environ.get("GRADKIT_FA_BACKEND")
    if wanted:
        return wanted
    try:
        import torch_npu  # noqa: F401
        return "torch_npu"
    except ImportError:
        return "gradkit"


# ------------------------------------------------------------------------------------------------------- context

@dataclass
class CalculationContext:
    """Every input of one case, generated once, and the golden results (the seed's CalculationContext)."""
    case: dict
    layout: str = ""
    n1: int = 0
    n2: int = 0
    q_lens: list = field(default_factory=list)
    kv_lens: list = field(default_factory=list)
    scale: float = 1.0
    q_bnsd: list = field(default_factory=list)   # per batch [1, N, S_b, D] in the case dtype (golden's view)
    k_bnsd: list = field(default_factory=list)
    v_bnsd: list = field(default_factory=list)
    dy_bnsd: list = field(default_factory=list)
    q: torch.Tensor = None                       # the operator's tensors in the layout (full head dim)
    k: torch.Tensor = None
    v: torch.Tensor = None
    dy: torch.Tensor = None
    atten_mask: torch.Tensor = None              # as the operator takes it (None: no mask)
    pse: torch.Tensor = None                     # as the operator takes it (None: no pse)
    golden_mask: list = field(default_factory=list)  # per batch, reference.flash_attention's atten_mask
    golden_pse: list = field(default_factory=list)   # per batch, reference.flash_attention's pse
    keep: list = None                            # per batch [N1, S1_b, S2_b] Philox keep masks
    actual_seq_qlen: list = None                 # TND: cumulative
    actual_seq_kvlen: list = None
    golden: dict = field(default_factory=dict)   # out, softmax_max, softmax_sum (operator layouts), dq, dk, dv, ...
    fp8: str = None                              # FP8 cases: "e5m2" | "e4m3fn" (q, k, v, dy: uint8 codes)
    out_dtype: torch.dtype = None                # FP8 cases: dq, dk, dv, attention_in
    fp8_bnsd: dict = field(default_factory=dict)  # FP8: q, k, v, dy codes [B, N, S, D]
    d_scale: dict = field(default_factory=dict)  # FP8: d_scale_q, d_scale_k, d_scale_v, d_scale_dy [B, N, blocks, 1]


def to_layout(parts, layout):
    """Per-batch [1, N, S_b, D] tensors -> the layout tensor."""
    if layout == "TND":
        return torch.cat([p[0].transpose(0, 1) for p in parts], 0).contiguous()
    bnsd = torch.cat(parts, 0)
    if layout == "BNSD":
        return bnsd.contiguous()
    bsnd = bnsd.transpose(1, 2)
    if layout == "BSND":
        return bsnd.contiguous()
    b, s, n, d = bsnd.shape
    bsh = bsnd.reshape(b, s, n * d)
    return bsh.contiguous() if layout == "BSH" else bsh.transpose(0, 1).contiguous()


def from_layout(x, layout, heads, lens):
    """The layout tensor -> per-batch [1, N, S_b, D]."""
    if layout == "TND":
        ends = np.cumsum(lens).tolist()
        return [x[e - s:e].transpose(0, 1)[None] for s, e in zip(lens, ends)]
    if layout == "BNSD":
        bnsd = x
    elif layout == "BSND":
        bnsd = x.transpose(1, 2)
    else:
        bsh = x if layout == "BSH" else x.transpose(0, 1)
        b, s, h = bsh.shape
        bnsd = bsh.reshape(b, s, heads, h // heads).transpose(1, 2)
    return [bnsd[b:b + 1] for b in range(bnsd.shape[0])]


def alibi_table(n1, rows_total, cols_total, cols, dtype):
    """The seed's ALiBi table (spec 5.6): [Sx, Sy] with slope_n * (c - r) on and below the diagonal, 0 above; the
    operator gets its last 1024 rows and last `cols` columns: [N1, 1024, cols]."""
    slopes = torch.tensor([float(s) for s in _alibi_slopes(n1)], dtype=torch.float64)
    r = torch.arange(rows_total - ALIBI_ROWS, rows_total)[:, None]
    c = torch.arange(cols_total - cols, cols_total)[None, :]
    base = torch.where(c <= r, (c - r).double(), torch.zeros(()).double())
    return (slopes[:, None, None] * base[None]).to(dtype)


def _alibi_slopes(n):
    """Standard ALiBi slopes get_slopes(N) (spec 2.9)."""
    p = 2 ** math.floor(math.log2(n))
    slopes = [(2 ** (-8 / p)) ** k for k in range(1, p + 1)]
    if p < n:
        slopes += [(2 ** (-4 / p)) ** k for k in range(1, 2 * (n - p), 2)]
    return slopes


def make_context(case):
    """Generates the case's inputs (spec 5.4-5.6) once: numpy standard normal from data_seed (default 0; upstream
    seeds numpy once for all cases), cast to the case dtype, then pse, then mask; and the Philox keep masks."""
    ctx = CalculationContext(case=case)
    layout = ctx.layout = case["input_layout"]
    n1, n2 = ctx.n1, ctx.n2 = case["N1"], case["N2"]
    g = n1 // n2
    d, dv = case["D"], case["D_V"]
    if case["dtype"].startswith("fp8"):
        ctx.fp8 = case["dtype"][len("fp8_"):]
        ctx.out_dtype = DTYPES[case.get("out_dtype", "fp16")]
    dtype = torch.float32 if ctx.fp8 else DTYPES[case["dtype"]]
    rng = np.random.RandomState(case.get("data_seed", 0))
    if layout == "TND":
        ctx.q_lens = list(case["actual_seq_qlen"])
        ctx.kv_lens = list(case.get("actual_seq_kvlen", case["actual_seq_qlen"]))
        t1, t2 = sum(ctx.q_lens), sum(ctx.kv_lens)
        arrays = [rng.randn(t1, n1, d), rng.randn(t2, n2, d), rng.randn(t2, n2, dv), rng.randn(t1, n1, dv)]
        tensors = [torch.from_numpy(a).to(dtype) for a in arrays]
        ctx.q_bnsd = from_layout(tensors[0], "TND", n1, ctx.q_lens)
        ctx.k_bnsd = from_layout(tensors[1], "TND", n2, ctx.kv_lens)
        ctx.v_bnsd = from_layout(tensors[2], "TND", n2, ctx.kv_lens)
        ctx.dy_bnsd = from_layout(tensors[3], "TND", n1, ctx.q_lens)
        ctx.actual_seq_qlen = np.cumsum(ctx.q_lens).tolist()
        ctx.actual_seq_kvlen = np.cumsum(ctx.kv_lens).tolist()
    else:
        b, s1, s2 = case["B"], case["S1"], case["S2"]
        ctx.q_lens, ctx.kv_lens = [s1] * b, [s2] * b
        q = rng.randn(b, n2, g, s1, d).reshape(b, n1, s1, d)
        k = rng.randn(b, n2, 1, s2, d).reshape(b, n2, s2, d)
        v = rng.randn(b, n2, 1, s2, dv).reshape(b, n2, s2, dv)
        dy = rng.randn(b, n2, g, s1, dv).reshape(b, n1, s1, dv)
        ctx.q_bnsd, ctx.k_bnsd, ctx.v_bnsd, ctx.dy_bnsd = [
            [torch.from_numpy(a[i:i + 1]).to(dtype) for i in range(b)] for a in (q, k, v, dy)]
    if ctx.fp8:
        _quantize_fp8(ctx)
    ctx.q, ctx.k = to_layout(ctx.q_bnsd, layout), to_layout(ctx.k_bnsd, layout)
    ctx.v, ctx.dy = to_layout(ctx.v_bnsd, layout), to_layout(ctx.dy_bnsd, layout)
    ctx.scale = 1.0 / math.sqrt(d)
    _make_pse(ctx, rng, dtype)
    _make_mask(ctx, rng)
    if case.get("drop_out_possibility", 1) < 1:
        ctx.keep = reference.fa_philox_keep(case["seed"], case["offset"], case["drop_out_possibility"], n1,
                                            ctx.q_lens, ctx.kv_lens)
    return ctx


def _quantize_fp8(ctx):
    """FP8 (spec 5.9): q, k, v, dy quantised per (b, n) and 128-row block; the per-batch views become the codes."""
    if ctx.layout == "TND" or ctx.case.get("rope", 0):
        pytest.skip("FP8 takes padded layouts and no rope")
    names = ("q", "k", "v", "dy")
    for name in names:
        full = torch.cat(getattr(ctx, name + "_bnsd"), 0)
        codes, ctx.d_scale["d_scale_" + name] = reference.fp8_quantize(full, ctx.fp8)
        ctx.fp8_bnsd[name] = codes
        setattr(ctx, name + "_bnsd", [codes[b:b + 1] for b in range(codes.shape[0])])


def _make_pse(ctx, rng, dtype):
    shape = ctx.case.get("pse_shape", "NONE")
    batches = len(ctx.q_lens)
    ctx.golden_pse = [None] * batches
    if shape == "NONE":
        return
    n1 = ctx.n1
    if shape in ("BN", "N"):  # pse_type 2 / 3: slopes 1 / ((b + 1)(n1 + 1)) or 1 / (n1 + 1)
        if shape == "BN":
            ctx.pse = torch.tensor([[1.0 / ((b + 1) * (n + 1)) for n in range(n1)] for b in range(batches)],
                                   dtype=torch.float32)
            ctx.golden_pse = [ctx.pse[b:b + 1] for b in range(batches)]
        else:
            ctx.pse = torch.tensor([1.0 / (n + 1) for n in range(n1)], dtype=torch.float32)
            ctx.golden_pse = [ctx.pse] * batches
        return
    tables = batches if shape in ("BN1S", "BNSS", "BNHS") else 1
    if shape in ("BNHS", "1NHS"):
        s1max, s2max = max(ctx.q_lens), max(ctx.kv_lens)
        tnd = ctx.layout == "TND"
        rows_total = ALIBI_ROWS if tnd else max(s1max, ALIBI_ROWS)
        cols_total = s2max if tnd else max(s2max, ALIBI_ROWS)
        one = alibi_table(n1, rows_total, cols_total, s2max, dtype)
        ctx.pse = one[None].repeat(tables, 1, 1, 1).contiguous()
        for b, (s1, s2) in enumerate(zip(ctx.q_lens, ctx.kv_lens)):
            t = ctx.pse[b if tables > 1 else 0]
            ctx.golden_pse[b] = t[:, ALIBI_ROWS - s1:, s2max - s2:][None]
        return
    rows = 1 if shape == "BN1S" else ctx.case["S1"]
    ctx.pse = torch.from_numpy(rng.randn(tables, n1, rows, ctx.case["S2"])).to(dtype)
    ctx.golden_pse = [ctx.pse[b:b + 1] if tables > 1 else ctx.pse for b in range(batches)]


def _make_mask(ctx, rng):
    case, shape = ctx.case, ctx.case.get("atten_mask_shape", "NONE")
    batches, mode = len(ctx.q_lens), case.get("sparse_mode", 0)
    ctx.golden_mask = [None] * batches
    if shape == "NONE":
        return
    dtype = torch.bool if case["atten_mask_dtype"] == "BOOL" else torch.uint8
    if mode in (2, 3, 4, 7, 8):
        ctx.atten_mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), 1).to(dtype)
        ctx.golden_mask = [ctx.atten_mask] * batches
        return
    s1, s2 = max(ctx.q_lens), max(ctx.kv_lens)
    dims = {"SS": (s1, s2), "11SS": (1, 1, s1, s2), "B1SS": (batches, 1, s1, s2), "BNSS": (batches, ctx.n1, s1, s2)}
    i, j = torch.arange(s1)[:, None], torch.arange(s2)[None, :]
    if mode == 0:
        pre, nxt = case["pre_tockens_input"], case["next_tockens_input"]
        band = (j >= i + nxt + 1) | (j <= i - pre - 1)
        mask = band.expand(dims[shape]).contiguous()
    elif mode == 1:
        mask = torch.zeros(dims[shape], dtype=torch.bool) if ctx.layout == "TND" else torch.from_numpy(
            rng.randint(0, 2, size=dims[shape]).astype(bool))
    else:
        pytest.skip(f"sparse_mode {mode} needs a prefix the seed's cases cannot give")
    ctx.atten_mask = mask.to(dtype)
    ctx.golden_mask = [ctx.atten_mask[b:b + 1] if ctx.atten_mask.dim() == 4 and ctx.atten_mask.shape[0] > 1
                       else ctx.atten_mask for b in range(batches)]


# -------------------------------------------------------------------------------------------------------- golden

def run_golden_fp8(ctx):
    """reference.flash_attention_fp8 (spec 5.9's chain, float64): the forward's out and statistics, then the
    backward of attention_in rounded to out_dtype and of the float32 statistics, as the operator receives them."""
    c, sc = ctx.fp8_bnsd, ctx.d_scale
    args = (c["q"], c["k"], c["v"], c["dy"], sc["d_scale_q"], sc["d_scale_k"], sc["d_scale_v"], sc["d_scale_dy"],
            ctx.fp8)
    forward = reference.flash_attention_fp8(*args, scale=ctx.scale)
    attention_in = forward["out"].to(ctx.out_dtype)
    m, l = forward["softmax_max"].float(), forward["softmax_sum"].float()
    grads = reference.flash_attention_fp8(*args, scale=ctx.scale, attention_in=attention_in, softmax_max=m,
                                          softmax_sum=l)
    batches = range(len(ctx.q_lens))
    ctx.golden["out"] = to_layout([forward["out"][b:b + 1] for b in batches], ctx.layout)
    ctx.golden["softmax_max"] = stats_layout(ctx, [m[b] for b in batches])
    ctx.golden["softmax_sum"] = stats_layout(ctx, [l[b] for b in batches])
    for name in ("dq", "dk", "dv"):
        ctx.golden[name] = to_layout([grads[name][b:b + 1] for b in batches], ctx.layout)


def run_golden(ctx):
    """reference.flash_attention in fp64 per batch (BNSD [1, N, S_b, D]), differentiated by autograd: out, the
    statistics as the operator takes them (fully masked rows -FLT_MAX / +FLT_MAX) and dq, dk, dv (rope: split)."""
    case = ctx.case
    if ctx.fp8:
        return run_golden_fp8(ctx)
    outs, maxes, sums, dqs, dks, dvs = [], [], [], [], [], []
    for b in range(len(ctx.q_lens)):
        q, k, v = (t.double().requires_grad_() for t in (ctx.q_bnsd[b], ctx.k_bnsd[b], ctx.v_bnsd[b]))
        out, m, l = reference.flash_attention(
            q, k, v, ctx.n1, "BNSD", pse=ctx.golden_pse[b], atten_mask=ctx.golden_mask[b], scale=ctx.scale,
            keep=None if ctx.keep is None else [ctx.keep[b]], keep_prob=case.get("drop_out_possibility", 1),
            sparse_mode=case.get("sparse_mode", 0), pre_tokens=case.get("pre_tockens_input", 65536),
            next_tokens=case.get("next_tockens_input", 65536), pse_type=case.get("pse_type", 1),
            compute=torch.float64, statistics=True)
        # The backward of attention_in rounded as the operator receives it: Drow = rowsum(dy * attention_in) moves
        # by delta = rowsum(dy * (round(out) - out)), i.e. dS by -P * delta, which is the gradient of
        # -sum(delta * logsumexp(S)) (logsumexp = m + log l; fully masked rows have delta = 0).
        dy = ctx.dy_bnsd[b].double()
        delta = (dy * (out.detach().to(ctx.q.dtype).double() - out.detach())).sum(-1)[0]
        invalid = torch.isinf(m[0].detach())
        lse = torch.where(invalid, torch.zeros_like(m[0]), m[0]) + torch.log(
            torch.where(invalid, torch.ones_like(l[0]), l[0]))
        ((out * dy).sum() - (delta * lse).sum()).backward()
        outs.append(out.detach())
        maxes.append(torch.where(torch.isinf(m[0]), torch.tensor(-FLT_MAX, dtype=torch.float64), m[0]))
        sums.append(torch.where(torch.isinf(m[0]), torch.tensor(FLT_MAX, dtype=torch.float64), l[0]))
        dqs.append(q.grad)
        dks.append(k.grad)
        dvs.append(v.grad)
    ctx.golden["out"] = to_layout(outs, ctx.layout)
    ctx.golden["softmax_max"], ctx.golden["softmax_sum"] = stats_layout(ctx, maxes), stats_layout(ctx, sums)
    dq, dk = to_layout(dqs, ctx.layout), to_layout(dks, ctx.layout)
    if case.get("rope", 0):
        ctx.golden["dq"], ctx.golden["dq_rope"] = dq[..., :ROPE_SPLIT], dq[..., ROPE_SPLIT:]
        ctx.golden["dk"], ctx.golden["dk_rope"] = dk[..., :ROPE_SPLIT], dk[..., ROPE_SPLIT:]
    else:
        ctx.golden["dq"], ctx.golden["dk"] = dq, dk
    ctx.golden["dv"] = to_layout(dvs, ctx.layout)


def stats_layout(ctx, per_batch):
    """Per-batch [N1, S1_b] statistics -> padded [B, N1, S1, 8] or TND [T1, N1, 8] (data per batch [N1][S1_b][8],
    spec 2.6), float32."""
    if ctx.layout == "TND":
        flat = torch.cat([m.reshape(-1) for m in per_batch])
        return flat.reshape(sum(ctx.q_lens), ctx.n1, 1).expand(-1, -1, 8).float().contiguous()
    return torch.stack(per_batch)[..., None].expand(-1, -1, -1, 8).float().contiguous()


# ------------------------------------------------------------------------------------------------------ operator

def gradkit_call(ctx, mode):
    """The operator through gradkit's Python module: returns {name: tensor in the layout}."""
    case = ctx.case
    common = dict(pse=ctx.pse, atten_mask=ctx.atten_mask, keep_prob=case.get("drop_out_possibility", 1),
                  actual_seq_qlen=ctx.actual_seq_qlen, actual_seq_kvlen=ctx.actual_seq_kvlen,
                  sparse_mode=case.get("sparse_mode", 0))
    pre, nxt = case.get("pre_tockens_input", 65536), case.get("next_tockens_input", 65536)
    seed, offset, pse_type = case.get("seed", 0), case.get("offset", 0), case.get("pse_type", 1)
    if ctx.fp8:
        return gradkit_call_fp8(ctx, common, pre, nxt, seed, offset)
    if mode == "grad_only":
        attention_in = ctx.golden["out"].to(ctx.q.dtype)
        softmax_max, softmax_sum = ctx.golden["softmax_max"], ctx.golden["softmax_sum"]
    else:
        fwd = ops.flash_attention_score(ctx.q, ctx.k, ctx.v, ctx.n1, ctx.layout, scale=ctx.scale, pre_tokens=pre,
                                        next_tokens=nxt, pse_type=pse_type, seed=seed, offset=offset, **common)
        attention_in, softmax_max, softmax_sum = fwd.attention_out, fwd.softmax_max, fwd.softmax_sum
    if pse_type == 1:
        dq, dk, dv, _ = gk_torch_npu.npu_fusion_attention_grad(
            ctx.q, ctx.k, ctx.v, ctx.dy, ctx.n1, ctx.layout, softmax_max=softmax_max, softmax_sum=softmax_sum,
            attention_in=attention_in, scale_value=ctx.scale, pre_tockens=pre, next_tockens=nxt, seed=seed,
            offset=offset, **common)
    else:
        grads = ops.flash_attention_score_grad(ctx.q, ctx.k, ctx.v, ctx.dy, ctx.n1, ctx.layout, softmax_max,
                                               softmax_sum, attention_in, scale=ctx.scale, pre_tokens=pre,
                                               next_tokens=nxt, pse_type=pse_type, seed=seed, offset=offset, **common)
        dq, dk, dv = grads.dq, grads.dk, grads.dv
    result = {"dv": dv}
    if mode == "auto_grad":
        result["out"] = attention_in
    if case.get("rope", 0):  # the full head dim went in: split as the rope outputs come back
        result.update(dq=dq[..., :ROPE_SPLIT], dq_rope=dq[..., ROPE_SPLIT:], dk=dk[..., :ROPE_SPLIT],
                      dk_rope=dk[..., ROPE_SPLIT:])
    else:
        result.update(dq=dq, dk=dk)
    return result


def fp8_inputs(ctx):
    """q, k, v, dy as the operator takes them: torch.float8_* views of the codes when torch has them (>= 2.1), else
    the uint8 codes (then fp8_format says the format)."""
    dtype = getattr(torch, "float8_" + ctx.fp8, None)
    tensors = (ctx.q, ctx.k, ctx.v, ctx.dy)
    if dtype is None:
        return tensors, ctx.fp8
    return tuple(t.view(dtype) for t in tensors), None


def gradkit_call_fp8(ctx, common, pre, nxt, seed, offset):
    """grad_only through gradkit.torch_npu.npu_fusion_attention_grad with torch_npu's FP8 keywords."""
    (q, k, v, dy), fp8_format = fp8_inputs(ctx)
    dq, dk, dv, _ = gk_torch_npu.npu_fusion_attention_grad(
        q, k, v, dy, ctx.n1, ctx.layout, softmax_max=ctx.golden["softmax_max"], softmax_sum=ctx.golden["softmax_sum"],
        attention_in=ctx.golden["out"].to(ctx.out_dtype), scale_value=ctx.scale, pre_tockens=pre, next_tockens=nxt,
        seed=seed, offset=offset, d_scale_o=ctx.d_scale["d_scale_q"], out_dtype=ctx.out_dtype,
        fp8_format=fp8_format, **ctx.d_scale, **common)
    assert dq.dtype == ctx.out_dtype and dk.dtype == ctx.out_dtype and dv.dtype == ctx.out_dtype
    return {"dq": dq, "dk": dk, "dv": dv}


def torch_npu_call(ctx, mode):  # pragma: no cover - needs an NPU
    """The operator through torch_npu on npu:0, as upstream's npu_impl.py::PTAtest calls it."""
    import torch_npu

    case, dev = ctx.case, "npu:0"
    rope = case.get("rope", 0)
    split = (lambda t: (t[..., :ROPE_SPLIT], t[..., ROPE_SPLIT:])) if rope else (lambda t: (t, None))
    q, q_rope = split(ctx.q)
    k, k_rope = split(ctx.k)
    on = (lambda t: None if t is None else t.to(dev))
    kw = dict(pse=on(ctx.pse), padding_mask=None, atten_mask=on(None if ctx.atten_mask is None else
                                                                 ctx.atten_mask.bool()),
              scale_value=ctx.scale, keep_prob=case.get("drop_out_possibility", 1),
              input_layout=ctx.layout, pre_tokens=case.get("pre_tockens_input", 65536),
              next_tokens=case.get("next_tockens_input", 65536), sparse_mode=case.get("sparse_mode", 0),
              pse_type=case.get("pse_type", 1))
    if ctx.actual_seq_qlen is not None:
        kw.update(actual_seq_qlen=tuple(ctx.actual_seq_qlen), actual_seq_kvlen=tuple(ctx.actual_seq_kvlen))
    if rope:
        kw.update(query_rope=on(q_rope), key_rope=on(k_rope))
    if ctx.fp8:  # torch_npu hosts have torch >= 2.1: float8 tensors; out_dtype 0 fp16, 1 bf16
        (q, k, v, dy), _ = fp8_inputs(ctx)
        numels = ctx.n1 * sum(a * b for a, b in zip(ctx.q_lens, ctx.kv_lens))
        scales = {name: on(t) for name, t in ctx.d_scale.items()}
        outs = torch_npu.npu_fusion_attention_grad_v2(
            on(q), on(k), on(v), on(dy), ctx.n1, softmax_max=on(ctx.golden["softmax_max"]),
            softmax_sum=on(ctx.golden["softmax_sum"]), softmax_in=None,
            attention_in=on(ctx.golden["out"].to(ctx.out_dtype)), seed=case.get("seed", 0),
            offset=case.get("offset", 0), numels=numels, inner_precise=0, prefix=None,
            d_scale_o=scales["d_scale_q"], out_dtype=0 if ctx.out_dtype == torch.float16 else 1, **scales, **kw)
        return dict(dq=outs[0].cpu(), dk=outs[1].cpu(), dv=outs[2].cpu())
    if mode == "auto_grad":
        tensors = [on(t).requires_grad_() for t in (q, k, ctx.v)]
        torch.npu.manual_seed(case.get("seed", 0))
        forward_kw = {key: value for key, value in kw.items() if key != "scale_value"}
        out = torch_npu.npu_fusion_attention_v2(*tensors, ctx.n1, scale=ctx.scale, **forward_kw)[0]
        out.backward(on(ctx.dy))
        grads = [t.grad.cpu() for t in tensors]
        result = dict(out=out.detach().cpu(), dq=grads[0], dk=grads[1], dv=grads[2])
    else:
        numels = ctx.n1 * sum(a * b for a, b in zip(ctx.q_lens, ctx.kv_lens))
        outs = torch_npu.npu_fusion_attention_grad_v2(
            on(q), on(k), on(ctx.v), on(ctx.dy), ctx.n1, softmax_max=on(ctx.golden["softmax_max"]),
            softmax_sum=on(ctx.golden["softmax_sum"]), softmax_in=None,
            attention_in=on(ctx.golden["out"].to(ctx.q.dtype)), seed=case.get("seed", 0),
            offset=case.get("offset", 0), numels=numels, inner_precise=0, prefix=None, **kw)
        result = dict(dq=outs[0].cpu(), dk=outs[1].cpu(), dv=outs[2].cpu())
        if rope:
            result.update(dq_rope=outs[3].cpu(), dk_rope=outs[4].cpu())
    return result


# -------------------------------------------------------------------------------------------------------- checks

def check_result(name, ours, golden, log):
    """The seed's checkResult (spec 5.11) with its limits asserted: returns (passed, line)."""
    a, b = ours.float().flatten(), golden.float().flatten()
    if a.shape != b.shape:
        line = f"{name}: FAIL (shape mismatch {tuple(ours.shape)} vs {tuple(golden.shape)})"
        log(line)
        return False, line
    diff = (a - b).abs()
    threshold = torch.maximum(torch.maximum(a.abs(), b.abs()) * RELATIVE, torch.tensor(THRESHOLD_FLOOR))
    over = int((diff > threshold).sum()) + int(torch.isnan(diff).sum())
    ratio = over / a.numel()
    diff_max = float(diff.max()) if a.numel() else 0.0
    passed = diff_max <= DIFF_MAX_LIMIT and ratio <= RATIO_LIMIT
    line = (f"{name}: {'pass' if passed else 'FAIL'} diff_max {diff_max:.8f} diff_sum {float(diff.double().sum()):.6f} "
            f"over {over}/{a.numel()} ({100 * ratio:.4f} %)")
    log(line)
    return passed, line


@pytest.fixture(scope="module")
def run_log(tmp_path_factory):
    path = os.environ.get("GRADKIT_SEED_LOG") or str(tmp_path_factory.mktemp("seed") / "run_log.txt")
    print(f"\nflash attention seed cases ({backend_name()} backend): run log {path}")
    with open(path, "a") as f:
        def log(text):
            line = f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] {text}"
            print(line)
            f.write(line + "\n")
            f.flush()
        yield log


_CONTEXTS = {}


def context_for(case):
    """The case's context, made and golden-checked once for both modes."""
    if case["name"] not in _CONTEXTS:
        ctx = make_context(case)
        run_golden(ctx)
        _CONTEXTS[case["name"]] = ctx
    return _CONTEXTS[case["name"]]


@pytest.mark.parametrize("mode", ["grad_only", "auto_grad"])
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_seed_case(case, mode, run_log):
    if case["dtype"].startswith("fp8") and mode == "auto_grad":
        pytest.skip("FP8 runs grad_only: there is no FP8 forward (upstream's auto_grad does not run FP8 either)")
    if mode not in case.get("modes", ["grad_only", "auto_grad"]):
        pytest.skip(f"the case lists modes {case['modes']}")
    ctx = context_for(case)
    backend = backend_name()
    ours = (torch_npu_call if backend == "torch_npu" else gradkit_call)(ctx, mode)
    names = (["out"] if mode == "auto_grad" else []) + ["dq", "dk", "dv"] + (
        ["dq_rope", "dk_rope"] if case.get("rope", 0) else [])
    failures = []
    for name in names:
        golden = ctx.golden[name]
        # The seed compares fp32 goldens for padded layouts and goldens cast to the case dtype for TND (spec 5.8).
        golden = golden.to(ctx.q.dtype) if ctx.layout == "TND" and not ctx.fp8 else golden.float()
        passed, line = check_result(f"{case['name']} {mode} {name}", ours[name], golden, run_log)
        if not passed:
            failures.append(line)
    run_log(f"{case['name']} {mode}: {'PASS' if not failures else 'FAIL'} ({len(names)} outputs, {backend})")
    assert not failures, "\n".join(failures)


def test_tnd06_dropout_matches_the_worked_values():
    """TND_06's keep mask (seed 2, offset 0, keep 0.9) from reference's own numpy Philox4x32-7: the first stream
    bytes and the keep bits of batch 0, head 0, row 0 are spec fag.md 3.6's worked values (and the case's data)."""
    case = next(c for c in CASES if c["name"] == "TND_06")
    first = reference.fa_philox_bytes(case["seed"], case["offset"], 32)
    assert bytes(first).hex() == "6230cfaf399c53f67a471d9b81a3ce89ee95467549627a88614a76c59e6cf51a"
    lens = case["actual_seq_qlen"]
    keep = reference.fa_philox_keep(case["seed"], case["offset"], case["drop_out_possibility"], case["N1"], lens, lens)
    bits = "".join("1" if x else "0" for x in keep[0][0, 0, :32].tolist())
    assert bits == "11111110111111110111111111111101" == case["expect_first_keep_bits"]
    # Head 1 of batch 0 starts S1_0 rows of 16-padded S2_0 = 128 bytes later (spec 3.4).
    stream = reference.fa_philox_bytes(case["seed"], case["offset"], 114 * 128 + 8)
    threshold = int(np.float32(0.9) * np.float32(255))
    assert keep[0][1, 0, :8].tolist() == [int(x) <= threshold for x in stream[114 * 128:114 * 128 + 8]]
