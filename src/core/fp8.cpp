// The fp8 decode tables and row helpers (fp8.h).
#include "core/fp8.h"

namespace gradkit {
namespace {

struct Fp8Tables {
  float e5m2[256];
  float e4m3[256];
  Fp8Tables() {
    for (int code = 0; code < 256; ++code) {
      e5m2[code] = fp8e5m2ToFloat(static_cast<uint8_t>(code));
      e4m3[code] = fp8e4m3ToFloat(static_cast<uint8_t>(code));
    }
  }
};

const Fp8Tables& tables() {
  static const Fp8Tables kTables;
  return kTables;
}

}  // namespace

const float* fp8DecodeTable(Fp8Format format) { return format == Fp8Format::E5M2 ? tables().e5m2 : tables().e4m3; }

namespace {

template <bool kE4m3>
void roundRow(float* values, int64_t count) {
  for (int64_t i = 0; i < count; ++i) values[i] = fp8_detail::roundToFp8<kE4m3>(values[i]);
}

}  // namespace

void fp8RoundInPlace(Fp8Format format, float* values, int64_t count) {
  if (format == Fp8Format::E4M3FN) {
    roundRow<true>(values, count);
  } else {
    roundRow<false>(values, count);
  }
}

void fp8DecodeRow(Fp8Format format, const uint8_t* codes, float* out, int64_t count) {
  const float* table = fp8DecodeTable(format);
  for (int64_t i = 0; i < count; ++i) out[i] = table[codes[i]];
}

}  // namespace gradkit
