// gradkit._C.AclnnError: the Python exception a failing aclnn / gradkit call raises. It carries the call's name
// (`api`), its status (`status`) and the text of aclGetRecentErrMsg() (`message`).
#pragma once

#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "aclnn/aclnn_base.h"

namespace gradkit::python {

/** The C++ side of AclnnError: thrown by the bindings, translated into the Python class at the boundary. */
class AclnnFailure : public std::runtime_error {
 public:
  AclnnFailure(std::string api, aclnnStatus status, std::string message);
  const std::string& api() const { return api_; }
  aclnnStatus status() const { return status_; }
  const std::string& message() const { return message_; }

 private:
  std::string api_;
  aclnnStatus status_;
  std::string message_;
};

/** Throws AclnnFailure(api, status, aclGetRecentErrMsg()) unless status is 0. */
void throwIfFailed(const std::string& api, aclnnStatus status);

/** Creates gradkit._C.AclnnError (a RuntimeError) in `module` and translates AclnnFailure into it. */
void registerAclnnError(pybind11::module_& module);

}  // namespace gradkit::python
