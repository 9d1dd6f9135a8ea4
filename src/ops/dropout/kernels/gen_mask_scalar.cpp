// The scalar mask kernel: one Philox block per four elements, straight from core/philox.h.
#include "core/philox.h"
#include "ops/dropout/kernels/gen_mask_kernel.h"

namespace gradkit::kernels {

void genMaskBytesScalar(const MaskStream& stream, int64_t n, int64_t firstByte, int64_t byteCount, uint8_t* out) {
  const philox::Key key = stream.key;
  for (int64_t k = 0; k < byteCount; ++k) {
    const int64_t first = (firstByte + k) * 8;  // element of bit 0
    unsigned byte = 0;
    for (int64_t half = 0; half < 2 && first + 4 * half < n; ++half) {
      const auto block = static_cast<uint64_t>(first / 4 + half);
      const philox::Counter counter = {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                                       stream.counterHigh[0], stream.counterHigh[1]};
      const philox::Counter words = philox::block<10>(counter, key);
      for (int w = 0; w < 4; ++w) {
        const int64_t element = first + 4 * half + w;
        if (element < n && words[w] < stream.keepBelow) byte |= 1u << (4 * half + w);
      }
    }
    out[k] = static_cast<uint8_t>(byte);
  }
}

const GenMaskKernels kGenMaskScalarKernels{genMaskBytesScalar};

}  // namespace gradkit::kernels
