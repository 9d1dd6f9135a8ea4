#include "two_phase.h"

#include <cstdlib>
#include <memory>

#include "acl/acl_rt.h"
#include "acl_error.h"

namespace gradkit::python {
namespace {

struct FreeDeleter {
  void operator()(void* memory) const { std::free(memory); }
};

}  // namespace

void* threadWorkspace(uint64_t bytes) {
  thread_local std::unique_ptr<void, FreeDeleter> buffer;
  thread_local uint64_t capacity = 0;
  if (bytes > capacity) {
    constexpr uint64_t kAlignment = 64;
    const uint64_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    buffer.reset();  // give the old block back before taking a larger one
    capacity = 0;
    buffer.reset(std::aligned_alloc(kAlignment, rounded));
    if (!buffer) throw std::bad_alloc();
    capacity = rounded;
  }
  return buffer.get();
}

void synchronizeDefaultStream(const std::string& api) {
  throwIfFailed(api + " (aclrtSynchronizeStream)", aclrtSynchronizeStream(nullptr));
}

}  // namespace gradkit::python
