"""Calls libgradkit's C API from Python through ctypes, on torch CPU tensors or numpy arrays (no copies: the
aclTensor describes the tensor's or array's own memory, strides and offset). torch is optional: without it
only the numpy part (NumpyTensor) is available."""
import ctypes
import os

try:
    import torch
except ImportError:  # numpy-only environments (the known-answer tests need no torch)
    torch = None

ACL_FLOAT, ACL_FLOAT16, ACL_INT8, ACL_INT32, ACL_UINT8 = 0, 1, 2, 3, 4
ACL_INT16, ACL_UINT16, ACL_UINT32, ACL_INT64, ACL_UINT64 = 6, 7, 8, 9, 10
ACL_DOUBLE, ACL_BOOL, ACL_BF16 = 11, 12, 27

ACL_DTYPES = {} if torch is None else {
    torch.float32: 0,
    torch.float16: 1,
    torch.int8: 2,
    torch.int32: 3,
    torch.uint8: 4,
    torch.int64: 9,
    torch.float64: 11,
    torch.bool: 12,
    torch.bfloat16: 27,
}
ACL_FORMAT_ND = 2

# numpy dtype name -> aclDataType. numpy has no bfloat16: pass acl_dtype=ACL_BF16 with a uint16 array.
NUMPY_ACL_DTYPES = {
    "float32": ACL_FLOAT,
    "float16": ACL_FLOAT16,
    "int8": ACL_INT8,
    "int32": ACL_INT32,
    "uint8": ACL_UINT8,
    "int16": ACL_INT16,
    "uint16": ACL_UINT16,
    "uint32": ACL_UINT32,
    "int64": ACL_INT64,
    "uint64": ACL_UINT64,
    "float64": ACL_DOUBLE,
    "bool": ACL_BOOL,
}


def load_library():
    """Loads the library named by GRADKIT_LIB (set by ctest), else build/lib/libgradkit.so."""
    path = os.environ.get("GRADKIT_LIB") or os.path.join(
        os.path.dirname(__file__), "..", "..", "build", "lib", "libgradkit.so"
    )
    lib = ctypes.CDLL(os.path.abspath(path))
    i64p = ctypes.POINTER(ctypes.c_int64)
    lib.aclCreateTensor.restype = ctypes.c_void_p
    lib.aclCreateTensor.argtypes = [i64p, ctypes.c_uint64, ctypes.c_int, i64p, ctypes.c_int64, ctypes.c_int,
                                    i64p, ctypes.c_uint64, ctypes.c_void_p]
    lib.aclDestroyTensor.argtypes = [ctypes.c_void_p]
    lib.aclCreateScalar.restype = ctypes.c_void_p
    lib.aclCreateScalar.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.aclDestroyScalar.argtypes = [ctypes.c_void_p]
    lib.aclrtSynchronizeStream.argtypes = [ctypes.c_void_p]
    lib.aclGetRecentErrMsg.restype = ctypes.c_char_p
    return lib


def _int64_array(values):
    values = list(values)
    return (ctypes.c_int64 * max(len(values), 1))(*values)


class Tensor:
    """An aclTensor over a torch CPU tensor's storage (keeps the tensor alive)."""

    def __init__(self, lib, tensor):
        self.lib = lib
        self.tensor = tensor
        storage = tensor.storage()
        dims = _int64_array(tensor.shape)
        strides = _int64_array(tensor.stride())
        storage_dims = _int64_array([storage.size()])
        self.handle = lib.aclCreateTensor(dims, tensor.dim(), ACL_DTYPES[tensor.dtype], strides,
                                          tensor.storage_offset(), ACL_FORMAT_ND, storage_dims, 1,
                                          ctypes.c_void_p(storage.data_ptr()))
        if not self.handle:
            raise RuntimeError(lib.aclGetRecentErrMsg().decode())

    def __del__(self):
        self.lib.aclDestroyTensor(self.handle)


class NumpyTensor:
    """An aclTensor over a C-contiguous numpy array used as 1-D storage (keeps the array alive).

    By default the view is the array itself (its shape, row-major). `shape`, `strides` (in elements) and
    `offset` (in elements) describe any other view of the same storage. `acl_dtype` overrides the dtype
    derived from the array's, e.g. ACL_BF16 for a uint16 array of bfloat16 bit patterns."""

    def __init__(self, lib, array, acl_dtype=None, shape=None, strides=None, offset=0):
        if not array.flags["C_CONTIGUOUS"]:
            raise ValueError("NumpyTensor needs a C-contiguous array as storage; describe views with shape/strides")
        self.lib = lib
        self.array = array
        if acl_dtype is None:
            acl_dtype = NUMPY_ACL_DTYPES[array.dtype.name]
        if shape is None:
            shape = array.shape
            strides = [s // array.itemsize for s in array.strides]
        shape = list(shape)
        dims = _int64_array(shape)
        stride_values = None if strides is None else _int64_array(strides)
        storage_dims = _int64_array([array.size])
        self.handle = lib.aclCreateTensor(dims, len(shape), acl_dtype, stride_values, offset, ACL_FORMAT_ND,
                                          storage_dims, 1, ctypes.c_void_p(array.ctypes.data))
        if not self.handle:
            raise RuntimeError(lib.aclGetRecentErrMsg().decode())

    def __del__(self):
        self.lib.aclDestroyTensor(self.handle)


def run_two_phase(lib, name, *args):
    """Calls aclnn<name>GetWorkspaceSize(*args, &size, &executor), then aclnn<name> on the default stream,
    and waits. Returns the status of the first failing step (0 on success)."""
    size = ctypes.c_uint64(0)
    executor = ctypes.c_void_p(None)
    plan = getattr(lib, f"aclnn{name}GetWorkspaceSize")
    status = plan(*args, ctypes.byref(size), ctypes.byref(executor))
    if status != 0:
        return status
    workspace = (ctypes.c_uint8 * max(size.value, 1))()
    run = getattr(lib, f"aclnn{name}")
    run.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_void_p]
    status = run(ctypes.cast(workspace, ctypes.c_void_p), size.value, executor, None)
    if status != 0:
        return status
    return lib.aclrtSynchronizeStream(None)


# ---------------------------------------------------------------------------------------------------------------
# mHC: aclnnMhcPre[V2] and aclnnMhcPreBackward[V2] on torch CPU tensors.


class AclnnError(RuntimeError):
    """A failing aclnn call: `status` is the aclnnStatus, `message` the text of aclGetRecentErrMsg()."""

    def __init__(self, api, status, message):
        super().__init__(f"{api} returned {status}: {message}")
        self.status = status
        self.message = message


def _handle(tensor):
    return ctypes.c_void_p(None if tensor is None else tensor.handle)


def _call_or_raise(lib, name, *args):
    """run_two_phase, raising AclnnError on failure (the caller keeps the Tensor objects of `args` alive)."""
    status = run_two_phase(lib, name, *args)
    if status != 0:
        message = lib.aclGetRecentErrMsg()
        raise AclnnError(f"aclnn{name}", status, message.decode() if message else "")


def mhc_pre(lib, x, phi, alpha, bias, gamma=None, norm_eps=1e-6, hc_eps=1e-6, op_impl_mode=None, caches=True):
    """aclnnMhcPre (op_impl_mode None) or aclnnMhcPreV2 (op_impl_mode 0 or 1). x [B,S,N,D] or [T,N,D] (BF16 or
    FP16), phi [F, N*D], alpha [3] or [2], bias [F], gamma [N, D] or None (all FP32). Returns a dict with h_in,
    h_post, h_res (None when alpha has 2 elements) and, with caches, inv_rms, h_mix and h_pre. Raises AclnnError."""
    lead = list(x.shape[:-2])
    n, d = x.shape[-2], x.shape[-1]
    rows = phi.shape[0]
    f32 = {"dtype": torch.float32}
    out = {"h_in": torch.zeros(lead + [d], dtype=x.dtype), "h_post": torch.zeros(lead + [n], **f32), "h_res": None}
    if alpha.shape[0] == 3:
        res = rows - 2 * n
        out["h_res"] = torch.zeros(lead + ([n, n] if res == n * n else [res]), **f32)
    if caches:
        out.update(inv_rms=torch.zeros(lead, **f32), h_mix=torch.zeros(lead + [rows], **f32),
                   h_pre=torch.zeros(lead + [n], **f32))
    else:
        out.update(inv_rms=None, h_mix=None, h_pre=None)
    names = ["h_in", "h_post", "h_res", "inv_rms", "h_mix", "h_pre"]
    inputs = [Tensor(lib, t) if t is not None else None for t in (x, phi, alpha, bias, gamma)]
    outputs = [Tensor(lib, out[k]) if out[k] is not None else None for k in names]
    mode = [] if op_impl_mode is None else [ctypes.c_int64(op_impl_mode)]
    args = [_handle(t) for t in inputs] + [ctypes.c_double(norm_eps), ctypes.c_double(hc_eps)] + mode
    args += [_handle(t) for t in outputs]
    _call_or_raise(lib, "MhcPre" if op_impl_mode is None else "MhcPreV2", *args)
    return out


def mhc_pre_backward(lib, x, phi, alpha, grad_h_in, grad_h_post, grad_h_res, inv_rms, h_mix, h_pre, h_post,
                     gamma=None, grad_x_post=None, hc_eps=1e-6, op_impl_mode=None, grad_gamma_buffer=None):
    """aclnnMhcPreBackward (op_impl_mode None) or aclnnMhcPreBackwardV2. The caches (inv_rms, h_mix, h_pre) and
    h_post come from mhc_pre with the same x, phi, alpha, gamma and hc_eps. Returns a dict with grad_x (x's dtype),
    grad_phi, grad_alpha, grad_bias and grad_gamma (a new tensor with gamma, else grad_gamma_buffer: the gradGamma
    argument passed, None by default). Raises AclnnError."""
    f32 = {"dtype": torch.float32}
    out = {"grad_x": torch.zeros(x.shape, dtype=x.dtype), "grad_phi": torch.zeros(phi.shape, **f32),
           "grad_alpha": torch.zeros(3, **f32), "grad_bias": torch.zeros(phi.shape[0], **f32),
           "grad_gamma": grad_gamma_buffer if gamma is None else torch.zeros(gamma.shape, **f32)}
    names = ["grad_x", "grad_phi", "grad_alpha", "grad_bias", "grad_gamma"]
    inputs = [Tensor(lib, t) if t is not None else None
              for t in (x, phi, alpha, grad_h_in, grad_h_post, grad_h_res, inv_rms, h_mix, h_pre, h_post, gamma,
                        grad_x_post)]
    outputs = [Tensor(lib, out[k]) if out[k] is not None else None for k in names]
    mode = [] if op_impl_mode is None else [ctypes.c_int64(op_impl_mode)]
    args = [_handle(t) for t in inputs] + [ctypes.c_float(hc_eps)] + mode + [_handle(t) for t in outputs]
    _call_or_raise(lib, "MhcPreBackward" if op_impl_mode is None else "MhcPreBackwardV2", *args)
    return out


# ---------------------------------------------------------------------------------------------------------------
# Compressor: aclnnCompressor and aclnnCompressorGrad on torch CPU tensors.


def compressor_rows(x, cmp_ratio, cu_seqlens=None):
    """The leading dims of the compressed outputs: BSH x [B, S, H] -> [B, ceil(S/cr)]; TH x [T, H] -> [min(T, T//cr
    + B)] with B = len(cu_seqlens) - 1 (1 without cu_seqlens, a call the operator rejects)."""
    if x.dim() == 3:
        return [x.shape[0], (x.shape[1] + cmp_ratio - 1) // cmp_ratio]
    tokens, batch = x.shape[0], 1 if cu_seqlens is None else cu_seqlens.shape[0] - 1
    return [min(tokens, tokens // cmp_ratio + batch)]


def compressor(lib, x, wkv, wgate, state_cache, ape, block_table, cmp_ratio, coff=1, cu_seqlens=None, seqused=None,
               start_pos=None, cache_mode=1, state_cache_stride_dim0=0, grad_enabled=True):
    """aclnnCompressor. x [B,S,H] or [T,H] with cu_seqlens (INT32 [B+1]), BF16 or FP16; wkv, wgate [coff*D, H] in x's
    dtype; state_cache FP32 [blocks, block_size, 2*coff*D], read before start_pos and written IN PLACE; ape FP32
    [cmp_ratio, coff*D]; block_table INT32 [B, columns] (cache_mode 1) or [B] (cache_mode 2); seqused, start_pos
    INT32 [B] or None. Returns a dict with cmp_kv (x's dtype) and softmax_score, kv (FP32 [.., coff*cmp_ratio, D];
    written only with grad_enabled, else left zero). Raises AclnnError."""
    lead = compressor_rows(x, cmp_ratio, cu_seqlens)
    d = wkv.shape[0] // coff
    out = {"cmp_kv": torch.zeros(lead + [d], dtype=x.dtype),
           "softmax_score": torch.zeros(lead + [coff * cmp_ratio, d]),
           "kv": torch.zeros(lead + [coff * cmp_ratio, d])}
    inputs = [Tensor(lib, t) if t is not None else None
              for t in (x, wkv, wgate, state_cache, ape, block_table, cu_seqlens, seqused, start_pos)]
    outputs = [Tensor(lib, out[k]) for k in ("cmp_kv", "softmax_score", "kv")]
    attrs = [ctypes.c_int64(cmp_ratio), ctypes.c_int64(coff), ctypes.c_int64(cache_mode),
             ctypes.c_int64(state_cache_stride_dim0), ctypes.c_bool(grad_enabled)]
    _call_or_raise(lib, "Compressor", *([_handle(t) for t in inputs] + attrs + [_handle(t) for t in outputs]))
    return out


def compressor_grad(lib, x, wkv, wgate, d_cmp_kv, softmax_score, kv, cmp_ratio, coff=1, cu_seqlens=None,
                    seqused=None, start_pos=None):
    """aclnnCompressorGrad. x, wkv, wgate, cu_seqlens, seqused, start_pos as compressor() had them; d_cmp_kv the
    gradient of cmp_kv (x's dtype); softmax_score, kv the forward's grad_enabled outputs. Returns a dict with d_x,
    d_wkv, d_wgate (x's dtype) and d_ape (FP32 [cmp_ratio, coff*D]). Raises AclnnError."""
    out = {"d_x": torch.zeros(x.shape, dtype=x.dtype), "d_wkv": torch.zeros(wkv.shape, dtype=x.dtype),
           "d_wgate": torch.zeros(wgate.shape, dtype=x.dtype), "d_ape": torch.zeros(cmp_ratio, wkv.shape[0])}
    inputs = [Tensor(lib, t) if t is not None else None
              for t in (x, wkv, wgate, d_cmp_kv, softmax_score, kv, cu_seqlens, seqused, start_pos)]
    outputs = [Tensor(lib, out[k]) for k in ("d_x", "d_wkv", "d_wgate", "d_ape")]
    attrs = [ctypes.c_int64(cmp_ratio), ctypes.c_int64(coff)]
    _call_or_raise(lib, "CompressorGrad", *([_handle(t) for t in inputs] + attrs + [_handle(t) for t in outputs]))
    return out
