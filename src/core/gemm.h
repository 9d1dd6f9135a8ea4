// The one GEMM wrapper: C[M,N] (fp32) = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, with A and B both
// fp32 or both bf16 (raw uint16 bits). Built on oneDNN matmul; the primitive is created once per Gemm
// object (create it in the plan, run it in the kernel). Its scratch comes from the caller (book scratchBytes()
// in the op's workspace): run() allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/gemm_shape.h"
#include "core/parallel.h"

namespace gradkit {

class Gemm {
 public:
  /**
   * Creates the primitives; throws std::runtime_error if oneDNN rejects the shape. `slots`: how many threads may
   * run tiles at once (the pool's size when the plan is made); results do not depend on it.
   */
  explicit Gemm(const GemmShape& shape, int slots = threadCount());
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  /** Bytes of scratch run() needs (64-byte aligned base recommended). */
  size_t scratchBytes() const;

  /** Runs C = alpha*op(A)*op(B) + beta*C on the calling thread's pool, with scratchBytes() of `scratch`. */
  void run(const void* a, const void* b, float* c, void* scratch) const;

  const GemmShape& shape() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gradkit
