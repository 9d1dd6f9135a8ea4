// gradkit._C.mhc_post / mhc_post_backward: aclnnMhcPost and aclnnMhcPostBackward into caller-provided outputs.
#include "aclnnop/aclnn_mhc_post.h"
#include "aclnnop/aclnn_mhc_post_backward.h"
#include "bindings.h"
#include "tensor_arg.h"
#include "two_phase.h"

namespace py = pybind11;

namespace gradkit::python {
namespace {

void mhcPost(py::handle x, py::handle hRes, py::handle hOut, py::handle hPost, py::handle out) {
  const TensorArg xArg = TensorArg::from(x, "x", false);
  const auto hResArg = TensorArg::fromOptional(hRes, "h_res", false);
  const TensorArg hOutArg = TensorArg::from(hOut, "h_out", false);
  const TensorArg hPostArg = TensorArg::from(hPost, "h_post", false);
  const TensorArg outArg = TensorArg::from(out, "out", true);
  py::gil_scoped_release release;
  runTwoPhase(
      "aclnnMhcPost",
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnMhcPostGetWorkspaceSize(xArg.get(), handleOf(hResArg), hOutArg.get(), hPostArg.get(), outArg.get(),
                                            size, executor);
      },
      aclnnMhcPost);
}

void mhcPostBackward(py::handle gradOutput, py::handle x, py::handle hRes, py::handle hOut, py::handle hPost,
                     py::handle gradX, py::handle gradHRes, py::handle gradHOut, py::handle gradHPost) {
  const TensorArg gradOutputArg = TensorArg::from(gradOutput, "grad_output", false);
  const TensorArg xArg = TensorArg::from(x, "x", false);
  const auto hResArg = TensorArg::fromOptional(hRes, "h_res", false);
  const TensorArg hOutArg = TensorArg::from(hOut, "h_out", false);
  const TensorArg hPostArg = TensorArg::from(hPost, "h_post", false);
  const TensorArg gradXArg = TensorArg::from(gradX, "grad_x", true);
  const TensorArg gradHResArg = TensorArg::from(gradHRes, "grad_h_res", true);
  const TensorArg gradHOutArg = TensorArg::from(gradHOut, "grad_h_out", true);
  const TensorArg gradHPostArg = TensorArg::from(gradHPost, "grad_h_post", true);
  py::gil_scoped_release release;
  runTwoPhase(
      "aclnnMhcPostBackward",
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnMhcPostBackwardGetWorkspaceSize(gradOutputArg.get(), xArg.get(), handleOf(hResArg), hOutArg.get(),
                                                    hPostArg.get(), gradXArg.get(), gradHResArg.get(),
                                                    gradHOutArg.get(), gradHPostArg.get(), size, executor);
      },
      aclnnMhcPostBackward);
}

}  // namespace

void bindMhcPost(py::module_& module) {
  module.def("mhc_post", &mhcPost, py::arg("x"), py::arg("h_res"), py::arg("h_out"), py::arg("h_post"), py::arg("out"),
             "aclnnMhcPost into out (h_res None: a plain residual, Ascend950 profile only).");
  module.def("mhc_post_backward", &mhcPostBackward, py::arg("grad_output"), py::arg("x"), py::arg("h_res"),
             py::arg("h_out"), py::arg("h_post"), py::arg("grad_x"), py::arg("grad_h_res"), py::arg("grad_h_out"),
             py::arg("grad_h_post"), "aclnnMhcPostBackward into the given gradients.");
}

}  // namespace gradkit::python
