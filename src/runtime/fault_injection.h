// Test-only fault injection: makes one allocation at a chosen place fail, on the calling thread only, so that tests
// can check what every entry point does when memory runs out (docs/reliability.md, "Resource failures").
//
// Each place that allocates on behalf of a caller asks allocationFailureInjected() first and, when told to, behaves
// exactly as if the system had refused the memory (a null block, a std::bad_alloc). Nothing is armed unless a test
// arms it, and an armed fault affects only the thread that armed it: stream workers and other callers never see it.
#pragma once

namespace gradkit::rt {

/** The places whose allocations a test can make fail. */
enum class FaultSite {
  TrackedMemory,     // allocateTracked: aclrtMalloc, aclrtMallocHost (and everything that allocates through them)
  Planning,          // the host memory an operator's plan needs (the first phase, opapi/op_definition.h)
  ExecutorCreation,  // the executor object and its table entry (newExecutor)
};

/** Arms `site` on this thread: the next `skip` allocations there succeed, the one after fails (once). */
void injectAllocationFailure(FaultSite site, unsigned skip = 0);

/** Disarms every site on this thread. */
void clearAllocationFailures();

/** Asked by `site` before it allocates: true when this allocation must fail (that consumes the armed fault). */
bool allocationFailureInjected(FaultSite site);

}  // namespace gradkit::rt
