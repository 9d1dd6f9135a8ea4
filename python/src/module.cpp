// gradkit._C: the compiled half of the gradkit Python package (python/gradkit/ is the other half). Functions take
// tensors through DLPack or the buffer protocol (tensor_arg.h), write into outputs the Python side allocated, run
// on the default stream with the GIL released, and raise AclnnError on failure.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "acl/acl_base.h"
#include "acl_error.h"
#include "bindings.h"
#include "gradkit/gradkit.h"

namespace py = pybind11;

PYBIND11_MODULE(_C, module) {
  module.doc() = "gradkit's compiled bindings (use the gradkit package, not this module)";
  gradkit::python::registerAclnnError(module);
  module.def("version", &gradkitVersion, "libgradkit's version, \"major.minor.patch\".");
  module.def(
      "set_soc",
      [](const std::string& name) { gradkit::python::throwIfFailed("gradkitSetSoc", gradkitSetSoc(name.c_str())); },
      py::arg("name"), "gradkitSetSoc: the emulated SoC, before the first operator call.");
  module.def(
      "set_num_threads",
      [](int threads) { gradkit::python::throwIfFailed("gradkitSetNumThreads", gradkitSetNumThreads(threads)); },
      py::arg("threads"), "gradkitSetNumThreads: the kernels' threads (0: the default).");
  module.def("num_threads", &gradkitGetNumThreads, "gradkitGetNumThreads: the threads the kernels use now.");
  module.attr("ACL_FLOAT") = static_cast<int>(ACL_FLOAT);
  module.attr("ACL_FLOAT16") = static_cast<int>(ACL_FLOAT16);
  module.attr("ACL_BF16") = static_cast<int>(ACL_BF16);
  module.attr("ACL_UINT8") = static_cast<int>(ACL_UINT8);
  gradkit::python::bindThresholdBackward(module);
  gradkit::python::bindDropout(module);
  gradkit::python::bindMhc(module);
  gradkit::python::bindMhcPost(module);
  gradkit::python::bindMhcSinkhorn(module);
  gradkit::python::bindMhcPreSinkhorn(module);
  gradkit::python::bindBlockAttentionResiduals(module);
  gradkit::python::bindCompressor(module);
  gradkit::python::bindFlashAttention(module);
  gradkit::python::bindSparseFlashMla(module);
  gradkit::python::bindSparseFlashMlaGrad(module);
  gradkit::python::bindSparseFlashMlaSoftmaxL1Norm(module);
  gradkit::python::bindLightningIndexer(module);
  gradkit::python::bindShapeModels(module);
}
