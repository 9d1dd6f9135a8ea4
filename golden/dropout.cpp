#include "golden/dropout.h"

#include <stdexcept>

#include "golden/dropout_do_mask.h"
#include "golden/dropout_gen_mask.h"

namespace gradkit::golden {

void dropout(aclDataType inDtype, aclDataType outDtype, const void* input, int64_t n, double p, bool train,
             int64_t seed, int64_t offset, void* out, std::vector<uint8_t>& mask) {
  if (static_cast<int64_t>(mask.size()) != (n + 127) / 128 * 16) {
    throw std::invalid_argument("golden::dropout: the mask must hold ceil(n / 128) * 16 bytes");
  }
  if (n == 0) return;
  if (train && p != 0.0 && p != 1.0) mask = dropoutGenMaskStream(n, p, seed, offset);
  dropoutDoMask(inDtype, outDtype, input, mask.data(), train ? p : 0.0, out, n);
}

}  // namespace gradkit::golden
