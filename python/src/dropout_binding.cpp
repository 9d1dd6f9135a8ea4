// gradkit._C dropout functions: gradkit's native_dropout / native_dropout_backward host dispatch (the torch_npu
// equivalent, include/gradkit/native_dropout.h) and the raw aclnnDropoutV3Grad.
#include "acl_error.h"
#include "aclnnop/aclnn_dropout_v3_grad.h"
#include "bindings.h"
#include "gradkit/native_dropout.h"
#include "tensor_arg.h"
#include "two_phase.h"

namespace py = pybind11;

namespace gradkit::python {
namespace {

int32_t nativeDropout(py::handle input, double p, bool train, int64_t seed, int64_t offset, py::handle out,
                      py::handle mask) {
  const TensorArg self = TensorArg::from(input, "input", false);
  const TensorArg output = TensorArg::from(out, "out", true);
  const TensorArg keep = TensorArg::from(mask, "mask", true);
  int32_t path = 0;
  py::gil_scoped_release release;
  throwIfFailed("native_dropout",
                gradkitNativeDropout(self.get(), p, train, seed, offset, output.get(), keep.get(), nullptr, &path));
  synchronizeDefaultStream("native_dropout");
  return path;
}

int32_t nativeDropoutBackward(py::handle grad, py::handle mask, double scale, py::handle out) {
  const TensorArg gradient = TensorArg::from(grad, "grad", false);
  const std::optional<TensorArg> keep = TensorArg::fromOptional(mask, "mask", false);
  const TensorArg output = TensorArg::from(out, "out", true);
  int32_t path = 0;
  py::gil_scoped_release release;
  throwIfFailed("native_dropout_backward",
                gradkitNativeDropoutBackward(gradient.get(), handleOf(keep), scale, output.get(), nullptr, &path));
  synchronizeDefaultStream("native_dropout_backward");
  return path;
}

void dropoutV3Grad(py::handle gradY, py::handle mask, double scale, py::handle gradX) {
  const TensorArg gradient = TensorArg::from(gradY, "grad_y", false);
  const TensorArg keep = TensorArg::from(mask, "mask", false);
  const TensorArg output = TensorArg::from(gradX, "grad_x", true);
  py::gil_scoped_release release;
  runTwoPhase(
      "aclnnDropoutV3Grad",
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnDropoutV3GradGetWorkspaceSize(gradient.get(), keep.get(), scale, output.get(), size, executor);
      },
      aclnnDropoutV3Grad);
}

}  // namespace

void bindDropout(py::module_& module) {
  module.def("native_dropout", &nativeDropout, py::arg("input"), py::arg("p"), py::arg("train"), py::arg("seed"),
             py::arg("offset"), py::arg("out"), py::arg("mask"),
             "gradkit::native_dropout into out (input's shape and dtype) and mask (UINT8, ceil(n/128)*16 bytes, "
             "packed keep bits). Returns the DropoutPath taken (int).");
  module.def("native_dropout_backward", &nativeDropoutBackward, py::arg("grad"), py::arg("mask"), py::arg("scale"),
             py::arg("out"),
             "gradkit::native_dropout_backward into out. mask may be None where the path does not read it. "
             "Returns the DropoutBackwardPath taken (int).");
  module.def("dropout_v3_grad", &dropoutV3Grad, py::arg("grad_y"), py::arg("mask"), py::arg("scale"), py::arg("grad_x"),
             "aclnnDropoutV3Grad(grad_y, packed mask, scale, grad_x).");
  module.def("native_dropout_scale", &gradkit::native_dropout_scale, py::arg("p"), py::arg("train"),
             "The scale autograd hands native_dropout_backward for a native_dropout(p, train) forward.");
}

}  // namespace gradkit::python
