#include "runtime/fault_injection.h"

#include <array>
#include <cstddef>

namespace gradkit::rt {
namespace {

constexpr size_t kSites = 3;
constexpr long kDisarmed = -1;

// Per thread and site: how many allocations still succeed before the injected failure; kDisarmed when none is armed.
thread_local std::array<long, kSites> countdown = {kDisarmed, kDisarmed, kDisarmed};

}  // namespace

void injectAllocationFailure(FaultSite site, unsigned skip) { countdown[static_cast<size_t>(site)] = skip; }

void clearAllocationFailures() { countdown.fill(kDisarmed); }

bool allocationFailureInjected(FaultSite site) {
  long& left = countdown[static_cast<size_t>(site)];
  if (left == kDisarmed) return false;
  if (left-- > 0) return false;
  return true;  // left is kDisarmed again: the fault fires once
}

}  // namespace gradkit::rt
