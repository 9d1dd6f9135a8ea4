// What a case file says about one tensor: dtype, view (shape, strides, storage offset) and values.
//
// JSON (every key optional; the case gives the defaults for dtype, shape and seed):
//   "dtype":   "fp32" | "fp16" | "bf16" | "int8" | ...
//   "shape":   [2, 3]            ([] is 0-d)
//   "layout":  "contiguous" (default) | "transposed" (storage holds the dims in reverse order)
//   "permute": [1, 0, 2]         (storage holds the dims in this order; "transposed" is the reversal)
//   "strides": [8, 2]            (explicit strides in elements; wins over layout/permute)
//   "offset":  5                 (storage offset in elements)
//   "range":   [lo, hi]          (uniform; integers: every value in [lo, hi] equally likely)
//   "value":   1.5               (every element)
//   "special": {"values": ["nan", "-nan", "inf", "-inf", "-0", 0, 3.5], "fraction": 0.1}
//   "seed":    42
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "acl/acl_base.h"

namespace gradkit::cli {

/** How the elements of a tensor's storage are generated. */
struct ValueSpec {
  double lo = -2.0;
  double hi = 2.0;
  bool constant = false;  // every element is `lo`
  std::vector<double> specials;
  double specialFraction = 0.0;  // probability that an element is replaced by one of `specials`
};

/** A strided view over a storage it will own, with the values to put there. */
struct TensorSpec {
  std::string name;
  aclDataType dtype = ACL_FLOAT;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // always filled in, one per dim
  int64_t offset = 0;
  ValueSpec values;
  uint64_t seed = 0;

  /** Product of the shape (1 for 0-d). */
  int64_t numel() const;
  /** Elements the storage must hold: offset + 1 + sum((d - 1) * stride), or 0 for an empty view. */
  int64_t storageElements() const;
  /** Row-major dense strides (size-1 dims ignored) and offset 0. */
  bool isContiguous() const;
};

/** What the case provides when a tensor's JSON leaves a key out. */
struct TensorDefaults {
  aclDataType dtype = ACL_FLOAT;
  std::vector<int64_t> shape;
  uint64_t seed = 0;
  ValueSpec values;
};

/**
 * Parses the tensor `name` from `json` (an object or null). Throws HarnessError naming the tensor and key on
 * bad input (unknown dtype or layout, wrong stride count, negative dims or strides, special values on an
 * integer dtype). The seed is the tensor's own or derived from the case seed and the name, so that two
 * tensors of one case never share a stream.
 */
TensorSpec parseTensorSpec(const nlohmann::json& json, std::string_view name, const TensorDefaults& defaults);

/** Dense row-major strides of `shape`. */
std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& shape);

/** Strides of a view of `shape` whose storage holds its dims in the order `permutation`. */
std::vector<int64_t> permutedStrides(const std::vector<int64_t>& shape, const std::vector<int64_t>& permutation);

/** Parses a dtype name ("fp32", "FLOAT", ...); throws HarnessError naming `what` when unknown. */
aclDataType parseDtypeOrThrow(const std::string& name, std::string_view what);

/** Parses a number or one of "nan", "-nan", "inf", "-inf", "-0", "+0". */
double parseSpecialValue(const nlohmann::json& value);

/** A 64-bit FNV-1a hash, for seeds derived from names. */
uint64_t hashName(std::string_view text);

}  // namespace gradkit::cli
