#include "acl_error.h"

#include "acl/acl_base.h"

namespace py = pybind11;

namespace gradkit::python {

AclnnFailure::AclnnFailure(std::string api, aclnnStatus status, std::string message)
    : std::runtime_error(api + " returned " + std::to_string(status) + ": " + message),
      api_(std::move(api)),
      status_(status),
      message_(std::move(message)) {}

void throwIfFailed(const std::string& api, aclnnStatus status) {
  if (status == 0) return;
  const char* text = aclGetRecentErrMsg();
  throw AclnnFailure(api, status, text != nullptr ? text : "");
}

void registerAclnnError(py::module_& module) {
  // The class lives as long as the interpreter (the module keeps a reference; this one is never released).
  static PyObject* errorClass = PyErr_NewExceptionWithDoc(
      "gradkit._C.AclnnError",
      "A failing aclnn or gradkit call: `api` names it, `status` is the aclnnStatus, `message` the text of "
      "aclGetRecentErrMsg().",
      PyExc_RuntimeError, nullptr);
  if (errorClass == nullptr) throw py::error_already_set();
  module.add_object("AclnnError", py::handle(errorClass));
  py::register_exception_translator([](std::exception_ptr pending) {
    try {
      if (pending) std::rethrow_exception(pending);
    } catch (const AclnnFailure& failure) {
      py::object error = py::reinterpret_borrow<py::object>(errorClass)(failure.what());
      error.attr("api") = failure.api();
      error.attr("status") = failure.status();
      error.attr("message") = failure.message();
      PyErr_SetObject(errorClass, error.ptr());
    }
  });
}

}  // namespace gradkit::python
