// The runtime set-up every command needs: aclInit, device 0, one stream; undone in reverse order.
#pragma once

#include "acl/acl.h"

namespace gradkit::cli {

class AclSession {
 public:
  /** aclInit(nullptr), aclrtSetDevice(0), aclrtCreateStream; throws HarnessError with the runtime's message. */
  AclSession();
  /** Destroys the stream, resets the device, finalises. */
  ~AclSession();
  AclSession(const AclSession&) = delete;
  AclSession& operator=(const AclSession&) = delete;

  aclrtStream stream() const { return stream_; }

 private:
  aclrtStream stream_ = nullptr;
  bool initialised_ = false;
  bool deviceSet_ = false;
};

}  // namespace gradkit::cli
