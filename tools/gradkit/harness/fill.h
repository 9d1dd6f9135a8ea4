// Deterministic value generation for case tensors (independent of the standard library's distributions,
// so a case file gives the same data on every platform).
#pragma once

#include <cstdint>

#include "harness/tensor_spec.h"

namespace gradkit::cli {

/** SplitMix64: a tiny, well-mixed 64-bit generator. */
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  /** The next 64 random bits. */
  uint64_t next();
  /** Uniform in [0, 1) with 53 random bits. */
  double uniform();

 private:
  uint64_t state_;
};

/** Standard normal values: Box-Muller over SplitMix64 (the same on every platform, unlike std::normal_distribution). */
class NormalStream {
 public:
  explicit NormalStream(uint64_t seed) : random_(seed) {}
  double next();
  /** Uniform in [0, 1) from the same stream. */
  double uniform() { return random_.uniform(); }

 private:
  SplitMix64 random_;
  bool spare_ = false;
  double second_ = 0.0;
};

/**
 * Fills `elements` elements of `storage` (dtype spec.dtype) with spec.values, drawn with spec.seed: every
 * storage element, including the gaps a strided view skips, so gaps hold plausible data too.
 */
void fillStorage(const TensorSpec& spec, void* storage, int64_t elements);

}  // namespace gradkit::cli
