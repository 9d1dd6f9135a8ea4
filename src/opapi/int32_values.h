// The values of small INT32 tensors (sequence lengths, block tables, residuals), read on the host in the first phase:
// gradkit's tensors live in host memory, so the checks can judge the values and the plan can keep them.
#pragma once

#include <cstdint>
#include <vector>

#include "opapi/tensor.h"

namespace gradkit {

/**
 * Reads a 1-d INT32 tensor (any stride) into int64 values; empty for a null tensor. The check has already accepted its
 * dtype, rank and memory.
 */
std::vector<int64_t> readInt32Values(const aclTensor* tensor);

/** Reads rows [0, rows) and columns [0, cols) of a 2-d INT32 tensor (any strides), row after row. */
std::vector<int64_t> readInt32Matrix(const aclTensor& tensor, int64_t rows, int64_t cols);

}  // namespace gradkit
