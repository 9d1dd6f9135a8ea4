#include "core/gemm_shape.h"

#include <algorithm>

namespace gradkit {
namespace {

/** Elements spanned by a row-major operand of `rows` x `cols` with leading dim `ld`. */
int64_t storedExtent(int64_t rows, int64_t cols, int64_t ld) {
  return rows == 0 || cols == 0 ? 0 : (rows - 1) * ld + cols;
}

}  // namespace

std::string completeGemmShape(GemmShape& g) {
  if (g.m < 0 || g.n < 0 || g.k < 0) {
    return "expected m, n, k >= 0, given " + std::to_string(g.m) + ", " + std::to_string(g.n) + ", " +
           std::to_string(g.k);
  }
  if (g.inputType != ACL_FLOAT && g.inputType != ACL_BF16) {
    return "expected inputType FLOAT or BF16, given " + std::to_string(static_cast<int>(g.inputType));
  }
  if (g.sums == GemmSums::Bf16Pairs && g.inputType != ACL_BF16) return "expected BF16 operands for Bf16Pairs sums";
  const int64_t aRowLength = g.transA ? g.m : g.k;
  const int64_t bRowLength = g.transB ? g.k : g.n;
  if (g.lda == 0) g.lda = std::max<int64_t>(aRowLength, 1);
  if (g.ldb == 0) g.ldb = std::max<int64_t>(bRowLength, 1);
  if (g.ldc == 0) g.ldc = std::max<int64_t>(g.n, 1);
  if (g.lda < aRowLength) return "expected lda >= " + std::to_string(aRowLength) + ", given " + std::to_string(g.lda);
  if (g.ldb < bRowLength) return "expected ldb >= " + std::to_string(bRowLength) + ", given " + std::to_string(g.ldb);
  if (g.ldc < g.n) return "expected ldc >= " + std::to_string(g.n) + ", given " + std::to_string(g.ldc);
  return "";
}

int64_t gemmExtentA(const GemmShape& g) {
  return g.transA ? storedExtent(g.k, g.m, g.lda) : storedExtent(g.m, g.k, g.lda);
}

int64_t gemmExtentB(const GemmShape& g) {
  return g.transB ? storedExtent(g.n, g.k, g.ldb) : storedExtent(g.k, g.n, g.ldb);
}

}  // namespace gradkit
