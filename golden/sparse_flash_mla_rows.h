// Internal helpers of the sparse flash MLA golden (sparse_flash_mla.cpp, sparse_flash_mla_grad.cpp): input checks,
// the key rows of one query row, a plain sequential dot product.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "golden/sparse_flash_mla.h"

namespace gradkit::golden {

template <class Real>
void checkSmlaInputs(const SparseFlashMlaProblem& p, const SparseFlashMlaInputs<Real>& in) {
  checkSparseFlashMlaProblem(p);
  if (p.dim == 0) return;
  if ((p.qRows() > 0 && !in.q) || (p.oriRows() > 0 && !in.ori) || (p.cmpRows() > 0 && !in.cmp))
    throw std::invalid_argument("golden::sparseFlashMla: q, ori and cmp are required for their rows");
}

/** Query row i of batch b: its logical row and, per visible key, the key and its kv row. */
template <class Real>
struct SmlaRowKeys {
  int64_t q = 0;  // qRowsBefore(b) + i
  std::vector<SmlaKey> keys;
  std::vector<const Real*> rows;  // [D] of each key, in keys' order
  std::vector<int64_t> kvRows;    // the key's row in ori (key.cmp false) or cmp (true)
};

template <class Real>
SmlaRowKeys<Real> smlaRowKeys(const SparseFlashMlaProblem& p, const SparseFlashMlaInputs<Real>& in, int64_t b,
                              int64_t i) {
  SmlaRowKeys<Real> row;
  row.q = p.qRowsBefore(b) + i;
  row.keys = sparseFlashMlaVisibleKeys(p, b, i);
  const int64_t ori0 = p.oriRowsBefore(b), cmp0 = p.cmpRowsBefore(b);
  for (const SmlaKey& key : row.keys) {
    const int64_t kvRow = (key.cmp ? cmp0 : ori0) + key.index;
    row.kvRows.push_back(kvRow);
    row.rows.push_back((key.cmp ? in.cmp : in.ori) + kvRow * p.dim);
  }
  return row;
}

template <class Real>
Real smlaDot(const Real* a, const Real* b, int64_t n) {
  Real sum = 0;
  for (int64_t d = 0; d < n; ++d) {
    const Real product = a[d] * b[d];
    sum = sum + product;
  }
  return sum;
}

}  // namespace gradkit::golden
