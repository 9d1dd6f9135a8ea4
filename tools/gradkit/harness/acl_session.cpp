#include "harness/acl_session.h"

#include <string>

#include "harness/error.h"
#include "harness/host_tensor.h"

namespace gradkit::cli {

AclSession::AclSession() {
  aclError status = aclInit(nullptr);
  if (status != ACL_SUCCESS)
    throw HarnessError("aclInit failed (" + std::to_string(status) + "): " + recentErrorText());
  initialised_ = true;
  status = aclrtSetDevice(0);
  if (status != ACL_SUCCESS) {
    aclFinalize();
    throw HarnessError("aclrtSetDevice(0) failed (" + std::to_string(status) + "): " + recentErrorText());
  }
  deviceSet_ = true;
  status = aclrtCreateStream(&stream_);
  if (status != ACL_SUCCESS) {
    aclrtResetDevice(0);
    aclFinalize();
    throw HarnessError("aclrtCreateStream failed (" + std::to_string(status) + "): " + recentErrorText());
  }
}

AclSession::~AclSession() {
  if (stream_ != nullptr) aclrtDestroyStream(stream_);
  if (deviceSet_) aclrtResetDevice(0);
  if (initialised_) aclFinalize();
}

}  // namespace gradkit::cli
