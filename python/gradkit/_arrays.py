"""How the package handles its two kinds of arrays: torch tensors (passed to gradkit._C through DLPack) and numpy
arrays (through the buffer protocol). Outputs are allocated with the library of the first input, so torch in
gives torch out and numpy in gives numpy out. numpy has no bfloat16: wrap a uint16 array of bfloat16 bit
patterns with as_bf16() (an explicit dtype); outputs of that dtype come back as uint16 arrays."""
import os

from . import _C

try:
    import numpy as np
except ImportError:  # torch-only environments
    np = None
try:
    import torch
except ImportError:  # numpy-only environments
    torch = None


class Bf16Array(tuple):
    """A uint16 numpy array read as bfloat16: the (array, ACL_BF16) pair gradkit._C accepts."""

    __slots__ = ()

    @property
    def array(self):
        return self[0]

    @property
    def shape(self):
        return self[0].shape


def as_bf16(array):
    """Marks a numpy uint16 array (bfloat16 bit patterns) as bfloat16 for gradkit's operators."""
    array = np.asarray(array)
    if array.dtype != np.uint16:
        raise TypeError(f"as_bf16 expects a uint16 array of bfloat16 bit patterns, given {array.dtype}")
    return Bf16Array((array, _C.ACL_BF16))


def is_torch(value):
    return torch is not None and isinstance(value, torch.Tensor)


def shape_of(value):
    return tuple(value.shape)


def _unwrapped(tensor):
    """The plain tensor inside torch.func's wrappers (a torch.func.grad level wraps the tensors an autograd.Function's
    backward receives; DLPack cannot read a wrapper's memory)."""
    functorch = getattr(torch._C, "_functorch", None)
    if functorch is None or not hasattr(functorch, "is_functorch_wrapped_tensor"):
        return tensor
    while functorch.is_functorch_wrapped_tensor(tensor):
        tensor = functorch.get_unwrapped(tensor)
    return tensor


_threads = {"torch": None}  # the torch.get_num_threads() gradkit was last set to


def _follow_torch_threads():
    """gradkit's kernels use torch.get_num_threads() threads (torch.set_num_threads applies to them too), unless
    GRADKIT_NUM_THREADS fixes the count."""
    if "GRADKIT_NUM_THREADS" in os.environ:
        return
    threads = torch.get_num_threads()
    if threads != _threads["torch"]:
        _C.set_num_threads(threads)
        _threads["torch"] = threads


def arg(value):
    """What gradkit._C receives for an input: torch tensors detached (DLPack refuses tensors that require grad;
    the memory is the same) and out of torch.func's wrappers, everything else as it is. A torch tensor also makes
    the kernels follow torch's thread count."""
    if value is None:
        return None
    if is_torch(value):
        _follow_torch_threads()
        value = _unwrapped(value)
        return value.detach() if value.requires_grad else value
    return value


def empty_like_dtype(ref, shape):
    """An uninitialised output of `shape` with ref's dtype, in ref's library."""
    if is_torch(ref):
        return torch.empty(shape, dtype=ref.dtype)
    if isinstance(ref, Bf16Array):
        return Bf16Array((np.empty(shape, np.uint16), _C.ACL_BF16))
    return np.empty(shape, np.asarray(ref).dtype)


def empty(ref, shape, kind):
    """An uninitialised output of `shape` in ref's library; kind is "float32" or "uint8"."""
    if is_torch(ref):
        return torch.empty(shape, dtype=getattr(torch, kind))
    return np.empty(shape, getattr(np, kind))


def zeros(ref, shape, kind="float32"):
    if is_torch(ref):
        return torch.zeros(shape, dtype=getattr(torch, kind))
    return np.zeros(shape, getattr(np, kind))


def result(value):
    """What the caller gets back for an output: Bf16Array outputs as their uint16 array."""
    return value.array if isinstance(value, Bf16Array) else value


def torch_seed_tensor():
    """A dropout seed drawn from torch's global generator, as a 1-element INT64 tensor (traceable)."""
    return torch.randint(0, 2**62, (1,), dtype=torch.int64)


def random_seed(ref):
    """A dropout seed from the library's global generator (torch.manual_seed / np.random.seed make it repeat)."""
    if is_torch(ref):
        return int(torch_seed_tensor().item())
    return int(np.random.randint(0, 2**62, dtype=np.int64))
