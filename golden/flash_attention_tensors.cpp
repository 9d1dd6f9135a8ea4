// The golden problem's mask and pse read from dense tensors as the operator takes them (golden/flash_attention.h):
// the broadcast forms of attenMask and pse, and the 1024-row ALiBi table expanded per (batch, head).
#include <memory>
#include <vector>

#include "golden/flash_attention.h"

namespace gradkit::golden {
namespace {

/**
 * The flat element of (b, n, i, j) in a dense [rows, cols] or [B | 1, N | 1, rows, cols] tensor: a leading dim of 1
 * and rows = 1 broadcast; -1 outside the tensor.
 */
int64_t broadcastElement(const std::vector<int64_t>& shape, int64_t b, int64_t n, int64_t i, int64_t j) {
  const size_t rank = shape.size();
  const int64_t rows = shape[rank - 2], cols = shape[rank - 1];
  if (i < 0 || j < 0 || (rows > 1 && i >= rows) || j >= cols) return -1;
  const int64_t batches = rank == 4 ? shape[0] : 1, heads = rank == 4 ? shape[1] : 1;
  const int64_t outer = (batches == 1 ? 0 : b) * heads + (heads == 1 ? 0 : n);
  return (outer * rows + (rows == 1 ? 0 : i)) * cols + j;
}

}  // namespace

void setMaskTensor(FlashAttentionProblem& p, std::shared_ptr<const std::vector<uint8_t>> bytes,
                   const std::vector<int64_t>& shape) {
  p.maskRows = shape[shape.size() - 2];
  p.maskCols = shape.back();
  p.attenMask = [bytes, shape](int64_t b, int64_t n, int64_t i, int64_t j) {
    const int64_t e = broadcastElement(shape, b, n, i, j);
    return e >= 0 && (*bytes)[static_cast<size_t>(e)] != 0;
  };
}

void setPseTensor(FlashAttentionProblem& p, std::shared_ptr<const std::vector<double>> values,
                  const std::vector<int64_t>& shape, bool alibiTable) {
  if (!alibiTable) {
    p.pse = [values, shape](int64_t b, int64_t n, int64_t i, int64_t j) {
      const int64_t e = broadcastElement(shape, b, n, i, j);
      return e >= 0 ? (*values)[static_cast<size_t>(e)] : 0.0;
    };
    return;
  }
  // Expanded for one (b, n) on first use and kept for the rows that follow (the golden walks heads in order).
  struct Expanded {
    int64_t b = -1, n = -1;
    std::vector<double> bias;
  };
  auto expanded = std::make_shared<Expanded>();
  p.pse = [values, shape, expanded, s1 = p.s1, s2 = p.s2](int64_t b, int64_t n, int64_t i, int64_t j) {
    const auto batch = static_cast<size_t>(b);
    if (expanded->b != b || expanded->n != n) {
      const double* table = values->data() + ((shape[0] == 1 ? 0 : b) * shape[1] + n) * shape[2] * shape[3];
      expanded->bias = expandAlibiPse(table, shape[2], shape[3], s1[batch], s2[batch]);
      expanded->b = b, expanded->n = n;
    }
    return expanded->bias[static_cast<size_t>(i * s2[batch] + j)];
  };
}

}  // namespace gradkit::golden
