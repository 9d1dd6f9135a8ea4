#!/usr/bin/env python3
"""Speed of the gradkit Python module, as ratios measured in the same run (docs/python.md, "Speed").

Two tables:
  1. forward + backward through each autograd wrapper (gradkit.relu / dropout / mhc_pre / compressor /
     flash_attention) against the pure-torch reference on the same data (torch.relu, torch's dropout,
     gradkit.reference.mhc_pre, gradkit.reference.compressor and gradkit.reference.flash_attention in fp32): time
     ratio; and gradkit.nn.functional.scaled_dot_product_attention against torch's own SDPA (torch >= 2.0) in the
     same dtype.
  2. the wrapper's own overhead: the raw operator through gradkit.ops (outputs given, so both sides do the same
     work) against the same operator called on the C API directly through ctypes (aclCreateTensor for every
     tensor, GetWorkspaceSize, the run, aclrtSynchronizeStream: what any caller must do). Goal: < 5 % from 1M
     elements on.
Timings are medians of interleaved repetitions (A B A B ...), so a neighbour's load hits both sides alike.

Usage: PYTHONPATH=build/python python3 tools/bench_python.py [--repeat 30] [--sizes 1048576 4194304]
"""
import argparse
import ctypes
import glob
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

try:
    import gradkit
except ImportError:  # from the source tree: the module built into build/python
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "python"))
    import gradkit
from gradkit import reference

ACL = {torch.float32: 0, torch.float16: 1, torch.int32: 3, torch.uint8: 4, torch.int64: 9, torch.bfloat16: 27}


def interleaved(a, b, repeat):
    """Median seconds of a() and b(), run alternately after one warm-up call each."""
    a()
    b()
    times_a, times_b = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        a()
        times_a.append(time.perf_counter() - start)
        start = time.perf_counter()
        b()
        times_b.append(time.perf_counter() - start)
    return statistics.median(times_a), statistics.median(times_b)


# ---------------------------------------------------------------------------------------------- direct C API


def load_library():
    """libgradkit as gradkit._C uses it: inside an installed package, else the build tree's lib/."""
    package = os.path.dirname(gradkit.__file__)
    candidates = glob.glob(os.path.join(package, "libgradkit.so*"))
    candidates += glob.glob(os.path.join(package, "..", "..", "lib", "libgradkit.so*"))
    if os.environ.get("GRADKIT_LIB"):
        candidates.insert(0, os.environ["GRADKIT_LIB"])
    lib = ctypes.CDLL(os.path.abspath(candidates[0]))
    i64p = ctypes.POINTER(ctypes.c_int64)
    lib.aclCreateTensor.restype = ctypes.c_void_p
    lib.aclCreateTensor.argtypes = [i64p, ctypes.c_uint64, ctypes.c_int, i64p, ctypes.c_int64, ctypes.c_int, i64p,
                                    ctypes.c_uint64, ctypes.c_void_p]
    lib.aclDestroyTensor.argtypes = [ctypes.c_void_p]
    lib.aclCreateScalar.restype = ctypes.c_void_p
    lib.aclCreateScalar.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.aclDestroyScalar.argtypes = [ctypes.c_void_p]
    lib.aclrtSynchronizeStream.argtypes = [ctypes.c_void_p]
    vp = ctypes.c_void_p
    lib.aclnnThresholdBackwardGetWorkspaceSize.argtypes = [vp] * 6
    lib.aclnnDropoutV3GradGetWorkspaceSize.argtypes = [vp, vp, ctypes.c_double, vp, vp, vp]
    lib.aclnnMhcPreGetWorkspaceSize.argtypes = [vp] * 5 + [ctypes.c_double] * 2 + [vp] * 8
    lib.aclnnMhcPreBackwardGetWorkspaceSize.argtypes = [vp] * 12 + [ctypes.c_float] + [vp] * 7
    i64 = ctypes.c_int64
    lib.aclnnCompressorGetWorkspaceSize.argtypes = [vp] * 9 + [i64] * 4 + [ctypes.c_bool] + [vp] * 5
    lib.aclnnCompressorGradGetWorkspaceSize.argtypes = [vp] * 9 + [i64] * 2 + [vp] * 6
    for name in ("ThresholdBackward", "DropoutV3Grad", "MhcPre", "MhcPreBackward", "Compressor", "CompressorGrad"):
        getattr(lib, f"aclnn{name}").argtypes = [vp, ctypes.c_uint64, vp, vp]
    return lib


def describe(lib, tensor):
    """An aclTensor over a contiguous torch tensor (dims, strides, storage = the tensor itself)."""
    if tensor is None:
        return None
    n = tensor.dim()
    dims = (ctypes.c_int64 * max(n, 1))(*tensor.shape)
    strides = (ctypes.c_int64 * max(n, 1))(*tensor.stride())
    storage = (ctypes.c_int64 * 1)(tensor.numel())
    return lib.aclCreateTensor(dims, n, ACL[tensor.dtype], strides, 0, 2, storage, 1, tensor.data_ptr())


class Direct:
    """Two-phase calls on the C API with a workspace kept between calls (as gradkit._C keeps one per thread)."""

    def __init__(self, lib):
        self.lib = lib
        self.workspace = (ctypes.c_uint8 * 1)()

    def call(self, name, tensors, scalars_before, extra=()):
        """aclnn<name>GetWorkspaceSize(*descriptors of tensors with scalars at their positions, size, executor)."""
        lib = self.lib
        handles = [describe(lib, t) for t in tensors]
        args = []
        for index, handle in enumerate(handles):
            args.extend(scalars_before.get(index, ()))
            args.append(handle)
        args.extend(extra)
        size = ctypes.c_uint64(0)
        executor = ctypes.c_void_p()
        status = getattr(lib, f"aclnn{name}GetWorkspaceSize")(*args, ctypes.byref(size), ctypes.byref(executor))
        assert status == 0, (name, status)
        if size.value > ctypes.sizeof(self.workspace):
            self.workspace = (ctypes.c_uint8 * size.value)()
        assert getattr(lib, f"aclnn{name}")(ctypes.addressof(self.workspace), size.value, executor, None) == 0
        assert lib.aclrtSynchronizeStream(None) == 0
        for handle in handles:
            if handle:
                lib.aclDestroyTensor(handle)


# ---------------------------------------------------------------------------------------------- benchmarks


def forward_backward(function, inputs, grads):
    outputs = function(*inputs)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    torch.autograd.backward(outputs, grads)


def mhc_data(tokens, n=4, d=512):
    generator = torch.Generator().manual_seed(0)
    rows = n * n + 2 * n
    x = torch.randn(tokens, n, d, generator=generator).bfloat16()
    phi = torch.randn(rows, n * d, generator=generator) * 0.02
    alpha = torch.tensor([1.0, 0.5, 0.3])
    bias = torch.randn(rows, generator=generator) * 0.1
    gamma = torch.rand(n, d, generator=generator) + 0.5
    return x, phi, alpha, bias, gamma


# The compressor rows: C4A (D = 512, coff = 2, cmp_ratio = 4) and C128A (D = 512, coff = 1, cmp_ratio = 128), BSH
# B = 1, S = 512, H = 2048 (x: 1M elements), bf16, start_pos 0 without a state cache (the stateless default). Debian's
# torch 1.13 multiplies with a generic BLAS (about 1.3 GFLOP/s here), so its reference takes seconds per step.
COMPRESSOR_CASES = (("C4A", 2, 4), ("C128A", 1, 128))


def compressor_data(coff, cr, tokens=512, hidden=2048, d=512):
    generator = torch.Generator().manual_seed(0)
    bound = (3.0 / hidden) ** 0.5
    x = (torch.rand(1, tokens, hidden, generator=generator) * 2 - 1).bfloat16()
    wkv = ((torch.rand(coff * d, hidden, generator=generator) * 2 - 1) * bound).bfloat16()
    wgate = ((torch.rand(coff * d, hidden, generator=generator) * 2 - 1) * bound).bfloat16()
    ape = torch.rand(cr, coff * d, generator=generator) - 0.5
    return x, wkv, wgate, ape


def compressor_rows(repeat):
    for name, coff, cr in COMPRESSOR_CASES:
        params = [t.requires_grad_() for t in compressor_data(coff, cr)]
        with torch.no_grad():
            shape = gradkit.compressor(*params, cr, coff=coff).shape
        grads = [torch.randn(shape).bfloat16()]
        a, b = interleaved(lambda: forward_backward(lambda *t: gradkit.compressor(*t, cr, coff=coff), params, grads),
                           lambda: forward_backward(lambda *t: reference.compressor(*t, cr, coff=coff), params, grads),
                           max(repeat // 6, 3))
        print(f"{'compressor':10} {name + ' x':9} {params[0].numel():9d} {a * 1e3:11.3f} {b * 1e3:9.3f} {a / b:6.2f}")


def flash_attention_rows(repeat):
    """Causal self-attention, BSH fp32, B = 1, N = 4, D = 64, S = 1024 and 2048 (q: 256K / 512K elements)."""
    for seq in (1024, 2048):
        generator = torch.Generator().manual_seed(0)
        params = [torch.randn(1, seq, 4 * 64, generator=generator).requires_grad_() for _ in range(3)]
        grads = [torch.randn(1, seq, 4 * 64, generator=generator)]
        mask = gradkit.flash_attention_causal_mask()
        causal = torch.ones(seq, seq, dtype=torch.bool).triu(1)
        scale = 1.0 / 8.0
        ours = lambda q, k, v: gradkit.flash_attention(q, k, v, 4, "BSH", atten_mask=mask, sparse_mode=3)
        theirs = lambda q, k, v: reference.flash_attention(q, k, v, 4, "BSH", atten_mask=causal, scale=scale,
                                                           compute=torch.float32)
        a, b = interleaved(lambda: forward_backward(ours, params, grads),
                           lambda: forward_backward(theirs, params, grads), max(repeat // 6, 3))
        print(f"{'flash_attn':10} {'fp32 q':9} {params[0].numel():9d} {a * 1e3:11.3f} {b * 1e3:9.3f} {a / b:6.2f}")


def sdpa_rows(repeat):
    """The SDPA drop-in against torch's SDPA, causal, [B, H, S, D] = [1, 8, S, 64], fp32 and bf16, fwd + bwd."""
    if not hasattr(F, "scaled_dot_product_attention"):
        print(f"{'sdpa':10} skipped: torch {torch.__version__} has no scaled_dot_product_attention")
        return
    sdpa = gradkit.nn.functional.scaled_dot_product_attention
    for seq in (1024, 2048):
        for dtype in (torch.float32, torch.bfloat16):
            generator = torch.Generator().manual_seed(0)
            params = [torch.randn(1, 8, seq, 64, generator=generator).to(dtype).requires_grad_() for _ in range(3)]
            grads = [torch.randn(1, 8, seq, 64, generator=generator).to(dtype)]
            a, b = interleaved(lambda: forward_backward(lambda *t: sdpa(*t, is_causal=True), params, grads),
                               lambda: forward_backward(lambda *t: F.scaled_dot_product_attention(*t, is_causal=True),
                                                        params, grads), max(repeat // 6, 3))
            print(f"{'sdpa':10} {str(dtype)[6:] + ' q':9} {params[0].numel():9d} {a * 1e3:11.3f} {b * 1e3:9.3f} "
                  f"{a / b:6.2f}")


def wrapper_rows(sizes, repeat):
    print("1. forward + backward, autograd wrapper vs pure-torch reference (same data)")
    print(f"{'op':10} {'dtype':9} {'elements':>9} {'gradkit ms':>11} {'torch ms':>9} {'ratio':>6}")
    for size in sizes:
        for dtype in (torch.float32, torch.bfloat16):
            x = torch.randn(size).to(dtype).requires_grad_()
            g = torch.randn(size).to(dtype)
            for name, ours, theirs in (
                    ("relu", lambda t: gradkit.relu(t), torch.relu),
                    ("dropout", lambda t: gradkit.dropout(t, 0.1, seed=1), lambda t: F.dropout(t, 0.1))):
                a, b = interleaved(lambda: forward_backward(ours, (x,), (g,)),
                                   lambda: forward_backward(theirs, (x,), (g,)), repeat)
                print(f"{name:10} {str(dtype)[6:]:9} {size:9d} {a * 1e3:11.3f} {b * 1e3:9.3f} {a / b:6.2f}")
    for tokens in (512, 1024):
        params = [t.requires_grad_() for t in mhc_data(tokens)]
        with torch.no_grad():
            shapes = [o.shape for o in gradkit.mhc_pre(*params)]
        grads = [torch.randn(shapes[0]).bfloat16(), torch.randn(shapes[1]), torch.randn(shapes[2])]
        a, b = interleaved(lambda: forward_backward(gradkit.mhc_pre, params, grads),
                           lambda: forward_backward(reference.mhc_pre, params, grads), max(repeat // 3, 5))
        print(f"{'mhc_pre':10} {'bf16 x':9} {params[0].numel():9d} {a * 1e3:11.3f} {b * 1e3:9.3f} {a / b:6.2f}")
    compressor_rows(repeat)
    flash_attention_rows(repeat)
    sdpa_rows(repeat)


def overhead_rows(sizes, repeat):
    lib = load_library()
    direct = Direct(lib)
    print()
    print("2. wrapper overhead: gradkit.ops (outputs given) vs the C API through ctypes (goal < 5 % from 1M on)")
    print(f"{'op':24} {'elements':>9} {'gradkit.ops ms':>15} {'C API ms':>9} {'overhead':>9}")
    zero = ctypes.c_double(0.0)
    for size in sizes:
        grad, self, out = torch.randn(size), torch.randn(size), torch.empty(size)

        def c_threshold():
            scalar = lib.aclCreateScalar(ctypes.byref(zero), 11)
            direct.call("ThresholdBackward", [grad, self], {}, extra=[ctypes.c_void_p(scalar), out_handle(out)])
            lib.aclDestroyScalar(scalar)

        handles = []

        def out_handle(tensor):  # output descriptors made per call too (destroyed after the call)
            handle = describe(lib, tensor)
            handles.append(handle)
            return ctypes.c_void_p(handle)

        def c_threshold_clean():
            c_threshold()
            while handles:
                lib.aclDestroyTensor(handles.pop())

        a, b = interleaved(lambda: gradkit.ops.threshold_backward(grad, self, 0.0, out=out), c_threshold_clean, repeat)
        print(f"{'threshold_backward fp32':24} {size:9d} {a * 1e3:15.3f} {b * 1e3:9.3f} {100 * (a / b - 1):8.1f}%")

        _, mask = gradkit.ops.native_dropout(grad, 0.1, seed=1)

        def c_v3grad():
            direct.call("DropoutV3Grad", [grad, mask], {}, extra=[ctypes.c_double(1 / 0.9), out_handle(out)])
            while handles:
                lib.aclDestroyTensor(handles.pop())

        a, b = interleaved(lambda: gradkit.ops.dropout_v3_grad(grad, mask, 1 / 0.9, out=out), c_v3grad, repeat)
        print(f"{'dropout_v3_grad fp32':24} {size:9d} {a * 1e3:15.3f} {b * 1e3:9.3f} {100 * (a / b - 1):8.1f}%")

    x, phi, alpha, bias, gamma = mhc_data(512)
    res = gradkit.ops.mhc_pre(x, phi, alpha, bias, gamma)
    outputs = list(res)

    def c_mhc():
        tensors = [x, phi, alpha, bias, gamma]
        handles_out = [describe(lib, t) for t in outputs]
        direct.call("MhcPre", tensors, {}, extra=[ctypes.c_double(1e-6), ctypes.c_double(1e-6)] +
                    [ctypes.c_void_p(h) for h in handles_out])
        for handle in handles_out:
            lib.aclDestroyTensor(handle)

    def ours_mhc():
        gradkit._C.mhc_pre(x, phi, alpha, bias, gamma, 1e-6, 1e-6, None, *outputs)

    a, b = interleaved(ours_mhc, c_mhc, repeat)
    print(f"{'mhc_pre (T=512 D=512)':24} {x.numel():9d} {a * 1e3:15.3f} {b * 1e3:9.3f} {100 * (a / b - 1):8.1f}%")
    compressor_overhead_rows(lib, direct, repeat)
    print("(mhc_pre and compressor rows: gradkit._C with the outputs given, i.e. the binding without the Python "
          "allocation)")


def compressor_overhead_rows(lib, direct, repeat):
    """aclnnCompressor (gradEnabled) and aclnnCompressorGrad, C4A, through gradkit._C and through ctypes."""
    name, coff, cr = COMPRESSOR_CASES[0]
    x, wkv, wgate, ape = compressor_data(coff, cr)
    cache, table = gradkit.ops.compressor_stateless_cache(x, wkv, cr, coff)
    forward = gradkit.ops.compressor(x, wkv, wgate, ape, cr, coff=coff, grad_enabled=True)
    outputs = list(forward)
    d_cmp_kv = torch.randn(forward.cmp_kv.shape).bfloat16()
    grads = list(gradkit.ops.compressor_grad(x, wkv, wgate, d_cmp_kv, forward.softmax_score, forward.kv, cr,
                                             coff=coff))
    attrs = [ctypes.c_int64(cr), ctypes.c_int64(coff), ctypes.c_int64(1), ctypes.c_int64(0), ctypes.c_bool(True)]

    def c_call(op, tensors, extra_attrs, given):
        handles = [describe(lib, t) for t in given]
        direct.call(op, tensors, {}, extra=extra_attrs + [ctypes.c_void_p(h) for h in handles])
        for handle in handles:
            lib.aclDestroyTensor(handle)

    rows = (
        (f"compressor ({name} T=512)",
         lambda: gradkit._C.compressor(x, wkv, wgate, cache, ape, table, None, None, None, cr, coff, 1, 0, True,
                                       *outputs),
         lambda: c_call("Compressor", [x, wkv, wgate, cache, ape, table, None, None, None], attrs, outputs)),
        (f"compressor_grad ({name})",
         lambda: gradkit._C.compressor_grad(x, wkv, wgate, d_cmp_kv, forward.softmax_score, forward.kv, None, None,
                                            None, cr, coff, *grads),
         lambda: c_call("CompressorGrad", [x, wkv, wgate, d_cmp_kv, forward.softmax_score, forward.kv, None, None,
                                           None], attrs[:2], grads)))
    for label, ours, theirs in rows:
        a, b = interleaved(ours, theirs, max(repeat // 3, 5))
        print(f"{label:24} {x.numel():9d} {a * 1e3:15.3f} {b * 1e3:9.3f} {100 * (a / b - 1):8.1f}%")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1 << 20, 1 << 22])
    args = parser.parse_args()
    print(f"gradkit {gradkit.__version__}, torch {torch.__version__}, {torch.get_num_threads()} torch threads, "
          f"GRADKIT_NUM_THREADS={os.environ.get('GRADKIT_NUM_THREADS', 'default')}, load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (a loaded machine delays the stream's worker thread: "
          "compare ratios, not times)")
    wrapper_rows(args.sizes, args.repeat)
    overhead_rows(args.sizes, args.repeat)


if __name__ == "__main__":
    main()
