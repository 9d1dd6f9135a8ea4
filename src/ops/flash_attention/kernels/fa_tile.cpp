// Tile helpers of the flash attention kernels (fa_tile.h).
#include "ops/flash_attention/kernels/fa_tile.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "gradkit/float_convert.h"

namespace gradkit::kernels {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int64_t kPseChunk = 64;         // columns of pse computed at a time
constexpr int64_t kKeepChunkBlocks = 16;  // Philox blocks generated at a time (256 stream bytes)

size_t elementBytes(aclDataType dtype) { return dtype == ACL_FLOAT ? 4 : 2; }

/** Address of element (b, head, row, 0) of the view. */
char* rowAddress(const FaView& v, int64_t b, int64_t head, int64_t row) {
  const int64_t offset = b * v.strideBatch + head * v.strideHead + row * v.strideRow;
  return static_cast<char*>(v.data) + offset * static_cast<int64_t>(elementBytes(v.dtype));
}

float loadAs(const void* data, aclDataType dtype, int64_t index) {
  switch (dtype) {
    case ACL_FLOAT16:
      return halfToFloat(static_cast<const uint16_t*>(data)[index]);
    case ACL_BF16:
      return bf16ToFloat(static_cast<const uint16_t*>(data)[index]);
    default:
      return static_cast<const float*>(data)[index];
  }
}

}  // namespace

void faLoadRows(const FaView& view, int64_t b, int64_t head, int64_t row0, int64_t rows, int64_t cols, float* dst,
                int64_t ld) {
  const int64_t sc = view.strideCol;
  for (int64_t r = 0; r < rows; ++r) {
    const char* at = rowAddress(view, b, head, row0 + r);
    float* out = dst + r * ld;
    switch (view.dtype) {
      case ACL_FLOAT: {
        const auto* from = reinterpret_cast<const float*>(at);
        if (sc == 1) {
          std::memcpy(out, from, static_cast<size_t>(cols) * sizeof(float));
        } else {
          for (int64_t c = 0; c < cols; ++c) out[c] = from[c * sc];
        }
        break;
      }
      case ACL_BF16: {
        const auto* from = reinterpret_cast<const uint16_t*>(at);
        for (int64_t c = 0; c < cols; ++c) out[c] = bf16ToFloat(from[c * sc]);
        break;
      }
      default: {
        const auto* from = reinterpret_cast<const uint16_t*>(at);
        for (int64_t c = 0; c < cols; ++c) out[c] = halfToFloat(from[c * sc]);
        break;
      }
    }
  }
}

const float* faRowsForProduct(const FaView& view, int64_t b, int64_t head, int64_t row0, int64_t rows, int64_t cols,
                              float* buffer, int64_t bufferLd, int64_t* ld) {
  if (view.dtype == ACL_FLOAT && view.strideCol == 1 && view.strideRow >= cols) {
    *ld = view.strideRow;
    return reinterpret_cast<const float*>(rowAddress(view, b, head, row0));
  }
  faLoadRows(view, b, head, row0, rows, cols, buffer, bufferLd);
  *ld = bufferLd;
  return buffer;
}

const float* faRowsWithRope(const FaView& main, const FaView& rope, int64_t d, int64_t dRope, int64_t b, int64_t head,
                            int64_t row0, int64_t rows, float* buffer, int64_t* ld) {
  const int64_t dq = d + dRope;
  if (dRope == 0) return faRowsForProduct(main, b, head, row0, rows, d, buffer, dq, ld);
  faLoadRows(main, b, head, row0, rows, d, buffer, dq);
  faLoadRows(rope, b, head, row0, rows, dRope, buffer + d, dq);
  *ld = dq;
  return buffer;
}

namespace {

/** Row r's bf16 bits of the view (columns [0, cols)) into dst: copied when BF16, else each value rounded. */
void loadRowsBf16(const FaView& view, int64_t b, int64_t head, int64_t row0, int64_t rows, int64_t cols, uint16_t* dst,
                  int64_t ld) {
  const int64_t sc = view.strideCol;
  for (int64_t r = 0; r < rows; ++r) {
    const char* at = rowAddress(view, b, head, row0 + r);
    uint16_t* out = dst + r * ld;
    if (view.dtype == ACL_BF16) {
      const auto* from = reinterpret_cast<const uint16_t*>(at);
      if (sc == 1) {
        std::memcpy(out, from, static_cast<size_t>(cols) * sizeof(uint16_t));
      } else {
        for (int64_t c = 0; c < cols; ++c) out[c] = from[c * sc];
      }
    } else {
      for (int64_t c = 0; c < cols; ++c) out[c] = floatToBf16(loadAs(at, view.dtype, c * sc));
    }
  }
}

}  // namespace

const void* faOperandRows(aclDataType type, const FaView& main, const FaView& rope, int64_t d, int64_t dRope, int64_t b,
                          int64_t head, int64_t row0, int64_t rows, float* buffer, int64_t* ld) {
  if (type != ACL_BF16) return faRowsWithRope(main, rope, d, dRope, b, head, row0, rows, buffer, ld);
  const int64_t dq = d + dRope;
  if (dRope == 0 && main.dtype == ACL_BF16 && main.strideCol == 1 && main.strideRow >= d) {
    *ld = main.strideRow;
    return rowAddress(main, b, head, row0);
  }
  auto* bits = reinterpret_cast<uint16_t*>(buffer);
  loadRowsBf16(main, b, head, row0, rows, d, bits, dq);
  if (dRope > 0) loadRowsBf16(rope, b, head, row0, rows, dRope, bits + d, dq);
  *ld = dq;
  return bits;
}

void faRoundRowsToBf16(const float* src, int64_t ld, int64_t rows, int64_t cols, uint16_t* dst, int64_t dstLd) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = src + r * ld;
    uint16_t* out = dst + r * dstLd;
    for (int64_t c = 0; c < cols; ++c) out[c] = floatToBf16(in[c]);
  }
}

void faStoreRows(const float* src, int64_t ld, const FaView& view, int64_t b, int64_t head, int64_t row0, int64_t rows,
                 int64_t cols) {
  const int64_t sc = view.strideCol;
  for (int64_t r = 0; r < rows; ++r) {
    char* at = rowAddress(view, b, head, row0 + r);
    const float* in = src + r * ld;
    switch (view.dtype) {
      case ACL_FLOAT: {
        auto* to = reinterpret_cast<float*>(at);
        for (int64_t c = 0; c < cols; ++c) to[c * sc] = in[c];
        break;
      }
      case ACL_BF16: {
        auto* to = reinterpret_cast<uint16_t*>(at);
        for (int64_t c = 0; c < cols; ++c) to[c * sc] = floatToBf16(in[c]);
        break;
      }
      default: {
        auto* to = reinterpret_cast<uint16_t*>(at);
        for (int64_t c = 0; c < cols; ++c) to[c * sc] = floatToHalf(in[c]);
        break;
      }
    }
  }
}

void faZeroRows(const FaView& view, int64_t b, int64_t head, int64_t row0, int64_t rows, int64_t cols) {
  const auto size = static_cast<int64_t>(elementBytes(view.dtype));  // +0 is all zero bits in every dtype
  for (int64_t r = 0; r < rows; ++r) {
    char* at = rowAddress(view, b, head, row0 + r);
    for (int64_t c = 0; c < cols; ++c) std::memset(at + c * view.strideCol * size, 0, static_cast<size_t>(size));
  }
}

FaTileKind faClassifyTile(const FaProblem& problem, const FaBatch& batch, int64_t b, int64_t n1, int64_t r0, int64_t r1,
                          int64_t c0, int64_t c1) {
  bool bandKeepsAll = true;
  if (problem.band && c1 > batch.prefix) {
    const int64_t left = batch.bandLeft, right = batch.bandRight;
    // Rows r keep columns [r - left, r + right]; over [r0, r1) these intervals are contiguous and cover
    // [r0 - left, r1 - 1 + right] (when not empty: right >= -left).
    const bool noneInBand = right < -left || r1 - 1 + right < c0 || r0 - left > c1 - 1;
    if (noneInBand && c0 >= batch.prefix) return FaTileKind::Skip;
    bandKeepsAll = !noneInBand && c0 >= r1 - 1 - left && c1 - 1 <= r0 + right;
  }
  if (!problem.maskTensor) return bandKeepsAll ? FaTileKind::Full : FaTileKind::Partial;
  const FaView& m = problem.mask;
  const auto* bytes = static_cast<const uint8_t*>(m.data);
  bool anyMasked = false, anyKept = false;
  for (int64_t i = r0; i < r1 && !(anyMasked && anyKept); ++i) {
    const uint8_t* row = bytes + b * m.strideBatch + n1 * m.strideHead + (batch.maskRow0 + i) * m.strideRow +
                         batch.maskCol0 * m.strideCol;
    for (int64_t j = c0; j < c1; ++j) {
      if (row[j * m.strideCol] != 0) {
        anyMasked = true;
      } else {
        anyKept = true;
      }
    }
  }
  if (!anyKept) return FaTileKind::Skip;
  return !anyMasked && bandKeepsAll ? FaTileKind::Full : FaTileKind::Partial;
}

void faBandRows(const FaProblem& problem, const FaBatch& batch, int64_t c0, int64_t c1, int64_t* first, int64_t* last) {
  *first = 0;
  *last = batch.s1;
  if (!problem.band || c0 < batch.prefix) return;
  const int64_t left = batch.bandLeft, right = batch.bandRight;
  if (right < -left) {
    *last = 0;
    return;
  }
  // Row i keeps column j when i - left <= j <= i + right, i.e. j - right <= i <= j + left.
  *first = std::clamp<int64_t>(c0 - right, 0, batch.s1);
  *last = std::clamp<int64_t>(c1 - 1 + left + 1, *first, batch.s1);
}

void faBandCols(const FaProblem& problem, const FaBatch& batch, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                int64_t* lo, int64_t* hi) {
  *lo = c0;
  *hi = c1;
  if (!problem.band) return;
  const int64_t left = batch.bandLeft, right = batch.bandRight;
  const bool empty = right < -left;
  // Rows [r0, r1) keep band columns [r0 - left, r1 - 1 + right] (when the band is not empty) and columns < prefix.
  const int64_t bandHi = empty ? c0 : std::clamp<int64_t>(r1 + right, c0, c1);
  if (c0 < batch.prefix) {
    *hi = std::max(bandHi, std::min(c1, batch.prefix));
    return;
  }
  *lo = empty ? c1 : std::clamp<int64_t>(r0 - left, c0, c1);
  *hi = std::max(*lo, bandHi);
}

float faPrepareScores(const FaProblem& problem, const FaBatch& batch, int64_t b, int64_t n1, int64_t r0, int64_t rows,
                      int64_t c0, int64_t cols, FaTileKind kind, float* s, int64_t ld) {
  float kernelScale = problem.scale;
  if (problem.pse.kind != FaPseKind::None) {
    faPseTile(problem, batch, b, n1, r0, rows, c0, cols, s, ld);
    kernelScale = 1.0f;
  }
  if (kind != FaTileKind::Partial) return kernelScale;
  if (kernelScale != 1.0f) {  // scale before masking: -Inf must stay -Inf whatever the scale's sign
    for (int64_t r = 0; r < rows; ++r) {
      float* row = s + r * ld;
      for (int64_t j = 0; j < cols; ++j) row[j] = row[j] * kernelScale;
    }
  }
  faMaskTile(problem, batch, b, n1, r0, rows, c0, cols, s, ld);
  return 1.0f;
}

void faMaskTile(const FaProblem& problem, const FaBatch& batch, int64_t b, int64_t n1, int64_t r0, int64_t rows,
                int64_t c0, int64_t cols, float* s, int64_t ld) {
  const int64_t c1 = c0 + cols;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = r0 + r;
    float* row = s + r * ld - c0;  // indexed by the batch column j
    if (problem.band) {
      const int64_t from = std::max(c0, batch.prefix);
      // Masked: j >= prefix and (j < i - left or j > i + right).
      const int64_t belowEnd = std::min(c1, std::max(from, i - batch.bandLeft));
      for (int64_t j = from; j < belowEnd; ++j) row[j] = -kInf;
      const int64_t aboveBegin = std::max(from, std::min(c1, i + batch.bandRight + 1));
      for (int64_t j = aboveBegin; j < c1; ++j) row[j] = -kInf;
    }
    if (problem.maskTensor) {
      const FaView& m = problem.mask;
      const uint8_t* bytes = static_cast<const uint8_t*>(m.data) + b * m.strideBatch + n1 * m.strideHead +
                             (batch.maskRow0 + i) * m.strideRow + batch.maskCol0 * m.strideCol;
      for (int64_t j = c0; j < c1; ++j) {
        if (bytes[j * m.strideCol] != 0) row[j] = -kInf;
      }
    }
  }
}

void faPseTile(const FaProblem& problem, const FaBatch& batch, int64_t b, int64_t n1, int64_t r0, int64_t rows,
               int64_t c0, int64_t cols, float* s, int64_t ld) {
  const FaPse& pse = problem.pse;
  const float scale = problem.scale;
  const FaView& t = pse.table;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = r0 + r;
    float* x = s + r * ld;
    float bias[kPseChunk];
    for (int64_t done = 0; done < cols; done += kPseChunk) {
      const int64_t width = std::min(kPseChunk, cols - done);
      const int64_t j0 = c0 + done;
      if (pse.kind == FaPseKind::Table) {
        int64_t row = batch.pseRow0 + i, col = batch.pseCol0 + j0;
        if (pse.alibiRows && row < 0) {  // the 1024-row ALiBi form: constant along diagonals
          col -= row;
          row = 0;
        }
        for (int64_t k = 0; k < width; ++k) bias[k] = 0.0f;
        if (row >= 0 && row < pse.tableRows) {
          const int64_t base = b * t.strideBatch + n1 * t.strideHead + row * t.strideRow;
          const int64_t kBegin = std::clamp<int64_t>(-col, 0, width);
          const int64_t kEnd = std::clamp<int64_t>(pse.tableCols - col, kBegin, width);
          for (int64_t k = kBegin; k < kEnd; ++k) bias[k] = loadAs(t.data, t.dtype, base + (col + k) * t.strideCol);
        }
      } else {
        const float slope = static_cast<const float*>(t.data)[b * t.strideBatch + n1 * t.strideHead];
        for (int64_t k = 0; k < width; ++k) {
          const int64_t delta = (j0 + k + pse.kvStartIdx) - (i + pse.qStartIdx);
          const auto distance = static_cast<float>(delta < 0 ? -delta : delta);
          bias[k] = -slope * (pse.kind == FaPseKind::Slope ? distance : std::sqrt(distance));
        }
      }
      float* xs = x + done;
      if (pse.beforeScale) {
        for (int64_t k = 0; k < width; ++k) xs[k] = (xs[k] + bias[k]) * scale;
      } else {
        for (int64_t k = 0; k < width; ++k) xs[k] = xs[k] * scale + bias[k];
      }
    }
  }
}

void faKeepTile(const FaDropout& dropout, const FaBatch& batch, int64_t n1, int64_t r0, int64_t rows, int64_t c0,
                int64_t cols, float* keep, int64_t ld, FaPhiloxBytesFn philoxBytes) {
  for (int64_t r = 0; r < rows; ++r) {
    const auto e0 = static_cast<uint64_t>(batch.dropBase + (n1 * batch.s1 + r0 + r) * batch.dropRowLength + c0);
    float* out = keep + r * ld;
    if (dropout.kind == FaDropoutKind::Packed) {
      for (int64_t j = 0; j < cols; ++j) {
        const uint64_t e = e0 + static_cast<uint64_t>(j);
        out[j] = ((dropout.bits[e / 8] >> (e % 8)) & 1u) != 0 ? 1.0f : 0.0f;
      }
      continue;
    }
    // Philox: block t gives stream bytes 16 t .. 16 t + 15. The row's blocks are generated into bytes first, then
    // compared in a loop the compiler vectorises.
    for (int64_t done = 0; done < cols;) {
      alignas(64) uint8_t bytes[kKeepChunkBlocks * 16];
      const uint64_t at = e0 + static_cast<uint64_t>(done), block0 = at / 16, skip = at % 16;
      const int64_t width = std::min<int64_t>(cols - done, kKeepChunkBlocks * 16 - static_cast<int64_t>(skip));
      const uint64_t blocks = (skip + static_cast<uint64_t>(width) + 15) / 16;
      philoxBytes(dropout, block0, static_cast<int64_t>(blocks), bytes);
      const uint8_t* from = bytes + skip;
      const auto threshold = static_cast<uint8_t>(dropout.threshold);
      for (int64_t j = 0; j < width; ++j) out[done + j] = from[j] <= threshold ? 1.0f : 0.0f;
      done += width;
    }
  }
}

}  // namespace gradkit::kernels
