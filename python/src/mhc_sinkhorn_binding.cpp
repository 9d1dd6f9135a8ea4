// gradkit._C.mhc_sinkhorn / mhc_sinkhorn_backward: aclnnMhcSinkhorn and aclnnMhcSinkhornBackward into
// caller-provided outputs. norm_out and sum_out None: the forward saves no steps (inference).
#include <cstdint>

#include "aclnnop/aclnn_mhc_sinkhorn.h"
#include "aclnnop/aclnn_mhc_sinkhorn_backward.h"
#include "bindings.h"
#include "tensor_arg.h"
#include "two_phase.h"

namespace py = pybind11;

namespace gradkit::python {
namespace {

void mhcSinkhorn(py::handle x, float eps, int64_t numIters, py::handle output, py::handle normOut, py::handle sumOut) {
  const TensorArg xArg = TensorArg::from(x, "x", false);
  const TensorArg outputArg = TensorArg::from(output, "output", true);
  const auto normOutArg = TensorArg::fromOptional(normOut, "norm_out", true);
  const auto sumOutArg = TensorArg::fromOptional(sumOut, "sum_out", true);
  py::gil_scoped_release release;
  runTwoPhase(
      "aclnnMhcSinkhorn",
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnMhcSinkhornGetWorkspaceSize(xArg.get(), eps, numIters, outputArg.get(), handleOf(normOutArg),
                                                handleOf(sumOutArg), size, executor);
      },
      aclnnMhcSinkhorn);
}

void mhcSinkhornBackward(py::handle gradOutput, py::handle normOut, py::handle sumOut, py::handle out) {
  const TensorArg gradOutputArg = TensorArg::from(gradOutput, "grad_output", false);
  const TensorArg normOutArg = TensorArg::from(normOut, "norm_out", false);
  const TensorArg sumOutArg = TensorArg::from(sumOut, "sum_out", false);
  const TensorArg outArg = TensorArg::from(out, "out", true);
  py::gil_scoped_release release;
  runTwoPhase(
      "aclnnMhcSinkhornBackward",
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnMhcSinkhornBackwardGetWorkspaceSize(gradOutputArg.get(), normOutArg.get(), sumOutArg.get(),
                                                        outArg.get(), size, executor);
      },
      aclnnMhcSinkhornBackward);
}

}  // namespace

void bindMhcSinkhorn(py::module_& module) {
  module.def("mhc_sinkhorn", &mhcSinkhorn, py::arg("x"), py::arg("eps"), py::arg("num_iters"), py::arg("output"),
             py::arg("norm_out"), py::arg("sum_out"),
             "aclnnMhcSinkhorn into output, the saved steps into norm_out and sum_out (both None: none saved; "
             "Ascend950 profile only).");
  module.def("mhc_sinkhorn_backward", &mhcSinkhornBackward, py::arg("grad_output"), py::arg("norm_out"),
             py::arg("sum_out"), py::arg("out"),
             "aclnnMhcSinkhornBackward into out, from the forward's norm_out and sum_out.");
}

}  // namespace gradkit::python
