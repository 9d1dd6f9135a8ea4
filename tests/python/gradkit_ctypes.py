"""Calls libgradkit's C API from Python through ctypes, on torch CPU tensors (no copies: the aclTensor
describes the torch tensor's own storage, strides and offset)."""
import ctypes
import os

import torch

ACL_DTYPES = {
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
