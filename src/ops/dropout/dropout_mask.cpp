#include "ops/dropout/dropout_mask.h"

#include <cfloat>
#include <cmath>
#include <cstring>

#include "core/kernel_select.h"
#include "core/parallel.h"
#include "ops/dropout/gen_mask_stream.h"
#include "ops/dropout/kernels/mask_format.h"

namespace gradkit::ops {

void fillDropoutMask(uint8_t* mask, int64_t bytes, uint8_t value) {
  parallelFor(bytes, kMaskChunkBytes * 32,
              [&](int64_t begin, int64_t end) { std::memset(mask + begin, value, static_cast<size_t>(end - begin)); });
}

void DropoutMask::writeBytes(int64_t begin, int64_t end, uint8_t* to, const kernels::MaskStream& maskStream) const {
  if (fill) {
    std::memset(to, fillByte, static_cast<size_t>(end - begin));
  } else {
    kernels->bytes(maskStream, n, begin, end - begin, to);
  }
}

void DropoutMask::write(uint8_t* mask, const kernels::MaskStream& maskStream) const {
  if (fill) {
    fillDropoutMask(mask, maskBytes, fillByte);
    return;
  }
  parallelFor(maskBytes, kMaskChunkBytes,
              [&](int64_t begin, int64_t end) { kernels->bytes(maskStream, n, begin, end - begin, mask + begin); });
}

DropoutMask planDropoutMask(int64_t n, double prob, int64_t seed, int64_t offset, bool epsilonFills) {
  DropoutMask mask;
  mask.n = n;
  mask.maskBytes = dropoutMaskBytes(n);
  // Upstream's short-cuts: a probability within DBL_EPSILON of 0 keeps everything, of 1 drops everything,
  // padding bits included.
  if (epsilonFills && std::fabs(prob) <= DBL_EPSILON) {
    mask.fill = true;
    mask.fillByte = 0xFF;
  } else if (epsilonFills && std::fabs(prob - 1.0) <= DBL_EPSILON) {
    mask.fill = true;
    mask.fillByte = 0x00;
  } else {
    mask.stream = makeMaskStream(prob, seed, offset);
  }
  mask.kernels = &chooseKernels(kernels::kGenMaskSimdKernels, kernels::kGenMaskScalarKernels);
  return mask;
}

}  // namespace gradkit::ops
