// Element-wise comparison of our output with the golden one: the bit-exact gate, and the error sizes that
// the verify table reports.
#pragma once

#include <cstdint>

#include "acl/acl_base.h"

namespace gradkit::cli {

/** What comparing two dense buffers of one dtype found. */
struct Comparison {
  int64_t count = 0;
  int64_t mismatches = 0;      // elements whose bits differ (NaN equals NaN only with the same bits)
  int64_t firstMismatch = -1;  // index of the first, -1 when none
  double maxAbsErr = 0.0;      // max |ours - golden|; Inf where exactly one is NaN or the Infs differ
  double maxRelErr = 0.0;      // max |ours - golden| / (|golden| + 1e-7), the MARE definition of the specs
  bool bitExact() const { return mismatches == 0; }
};

/**
 * Compares `n` elements of `ours` and `golden` (dense, dtype `dtype`). Equal bits give error 0; two NaNs
 * with different payloads give error 0 but still count as a mismatch; +0 vs -0 likewise.
 */
Comparison compareElements(aclDataType dtype, const void* ours, const void* golden, int64_t n);

/** The error of one element pair as compareElements measures it: {abs, rel}. */
struct ElementError {
  double abs = 0.0;
  double rel = 0.0;
};
ElementError elementError(double ours, double golden);

}  // namespace gradkit::cli
