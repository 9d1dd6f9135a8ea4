#include "ops/lightning_indexer/liv2_check_values.h"

#include <climits>
#include <string>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor_copy.h"  // readInt32Values

namespace gradkit::ops {
namespace {

constexpr const char* kApi = kLiV2Api;

std::string at(const char* name, int64_t index) { return std::string(name) + "[" + std::to_string(index) + "]"; }

// cu_seqlens: [0] = 0, non-decreasing, the last at most the rows of the tensor it splits.
aclnnStatus checkCuSeqlens(const char* name, const std::vector<int64_t>& cu, int64_t rows, const char* rowsText) {
  if (cu.empty()) return ACLNN_SUCCESS;
  if (cu[0] != 0) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, name, "prefix sums starting at 0",
                at(name, 0) + " = " + std::to_string(cu[0]));
  }
  for (size_t b = 1; b < cu.size(); ++b) {
    if (cu[b] < cu[b - 1]) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, name, "non-decreasing prefix sums",
                  at(name, static_cast<int64_t>(b)) + " = " + std::to_string(cu[b]) + " after " +
                      at(name, static_cast<int64_t>(b) - 1) + " = " + std::to_string(cu[b - 1]));
    }
  }
  if (cu.back() > rows) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, name,
                std::string("a last value <= ") + rowsText + " = " + std::to_string(rows),
                at(name, static_cast<int64_t>(cu.size()) - 1) + " = " + std::to_string(cu.back()));
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkUsed(const char* name, const std::vector<int64_t>& used, const std::vector<LiV2Batch>& batches,
                      bool keys, const std::string& lengthText) {
  for (size_t b = 0; b < used.size(); ++b) {
    const int64_t length = keys ? batches[b].keys : batches[b].rows;
    if (used[b] < 0 || used[b] > length) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, name,
                  "0 <= value <= " + lengthText + " = " + std::to_string(length) + " for batch " + std::to_string(b),
                  at(name, static_cast<int64_t>(b)) + " = " + std::to_string(used[b]));
    }
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkResidual(const LiV2Args& a, const std::vector<int64_t>& residual) {
  for (size_t b = 0; b < residual.size(); ++b) {
    if (residual[b] < 0 || residual[b] >= a.cmpRatio) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, "cmpResidualKOptional",
                  "values in [0, cmpRatio) = [0, " + std::to_string(a.cmpRatio) + ") (tokens not yet compressed)",
                  at("cmpResidualKOptional", static_cast<int64_t>(b)) + " = " + std::to_string(residual[b]));
    }
  }
  return ACLNN_SUCCESS;
}

// The table entries the used keys go through: columns [0, ceil(Sk_b / blockSize)) of row b, in [0, blockNum).
aclnnStatus checkBlockTable(const LiV2Args& a, const LiV2Dims& dims, const std::vector<LiV2Batch>& batches) {
  for (int64_t b = 0; b < dims.batch; ++b) {
    const int64_t columns = (batches[static_cast<size_t>(b)].usedKeys + dims.blockSize - 1) / dims.blockSize;
    for (int64_t c = 0; c < columns; ++c) {
      const int64_t entry = liv2Int32At(*a.blockTable, {b, c});
      if (entry >= 0 && entry < dims.blockNum) continue;
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, "blockTableOptional",
                  "entries in [0, blockNum = " + std::to_string(dims.blockNum) + ") for the blocks of the used keys",
                  "blockTableOptional[" + std::to_string(b) + "][" + std::to_string(c) +
                      "] = " + std::to_string(entry) + " (batch " + std::to_string(b) + " uses " +
                      std::to_string(batches[static_cast<size_t>(b)].usedKeys) + " keys)");
    }
  }
  return ACLNN_SUCCESS;
}

// Every offset >= 0; a row of batch b shifts indices up to Sk_b - 1, which must stay <= INT32_MAX.
aclnnStatus checkOffsets(const LiV2Args& a, const LiV2Dims& dims, const std::vector<LiV2Batch>& batches) {
  std::vector<int64_t> reach(static_cast<size_t>(dims.queryRows), 0);  // the largest index a row may select
  for (const LiV2Batch& x : batches) {
    for (int64_t i = 0; i < x.usedRows; ++i) reach[static_cast<size_t>(x.firstRow + i)] = x.usedKeys - 1;
  }
  const bool bsnd = dims.layoutQ == LiV2Layout::BSND;
  for (int64_t row = 0; row < dims.queryRows; ++row) {
    const int64_t offset = bsnd ? liv2Int32At(*a.outputIdxOffset, {row / dims.querySeq, row % dims.querySeq, 0})
                                : liv2Int32At(*a.outputIdxOffset, {row, 0});
    const int64_t last = reach[static_cast<size_t>(row)];
    if (offset >= 0 && offset + (last > 0 ? last : 0) <= INT32_MAX) continue;
    const std::string where = bsnd ? "outputIdxOffsetOptional[" + std::to_string(row / dims.querySeq) + "][" +
                                         std::to_string(row % dims.querySeq) + "][0]"
                                   : "outputIdxOffsetOptional[" + std::to_string(row) + "][0]";
    return fail(
        ACLNN_ERR_PARAM_INVALID, kApi, "outputIdxOffsetOptional",
        "offsets >= 0 that keep every index they shift <= 2147483647",
        where + " = " + std::to_string(offset) + (last > 0 ? " with indices up to " + std::to_string(last) : ""));
  }
  return ACLNN_SUCCESS;
}

}  // namespace

int32_t liv2Int32At(const aclTensor& tensor, std::initializer_list<int64_t> index) {
  int64_t element = 0;
  size_t d = 0;
  for (int64_t i : index) element += i * tensor.strides[d++];
  return static_cast<const int32_t*>(tensor.firstElement())[element];
}

LiV2Values liv2ValuesOf(const LiV2Args& a) {
  LiV2Values v;
  v.cuSeqlensQ = readInt32Values(a.cuSeqlensQ);
  v.cuSeqlensK = readInt32Values(a.cuSeqlensK);
  v.sequsedQ = readInt32Values(a.sequsedQ);
  v.sequsedK = readInt32Values(a.sequsedK);
  v.cmpResidualK = readInt32Values(a.cmpResidualK);
  return v;
}

aclnnStatus checkLightningIndexerV2Values(const LiV2Args& a, const LiV2Dims& dims) {
  const LiV2Values v = liv2ValuesOf(a);
  GRADKIT_RETURN_IF_ERROR(checkCuSeqlens("cuSeqlensQOptional", v.cuSeqlensQ, dims.queryRows, "T1 (the rows of q)"));
  GRADKIT_RETURN_IF_ERROR(checkCuSeqlens("cuSeqlensKOptional", v.cuSeqlensK, dims.keyRows, "T2 (the rows of k)"));
  const std::vector<LiV2Batch> batches = liv2BatchesOf(dims, v);
  const bool tndQ = dims.layoutQ == LiV2Layout::TND;
  GRADKIT_RETURN_IF_ERROR(
      checkUsed("sequsedQOptional", v.sequsedQ, batches, false, tndQ ? "cuSeqlensQ[b + 1] - cuSeqlensQ[b]" : "S1"));
  const char* keyLength = dims.layoutK == LiV2Layout::TND    ? "cuSeqlensK[b + 1] - cuSeqlensK[b]"
                          : dims.layoutK == LiV2Layout::BSND ? "S2"
                                                             : "blockTable columns * blockSize";
  GRADKIT_RETURN_IF_ERROR(checkUsed("sequsedKOptional", v.sequsedK, batches, true, keyLength));
  GRADKIT_RETURN_IF_ERROR(checkResidual(a, v.cmpResidualK));
  if (dims.layoutK == LiV2Layout::PaBbnd) GRADKIT_RETURN_IF_ERROR(checkBlockTable(a, dims, batches));
  if (a.outputIdxOffset != nullptr) GRADKIT_RETURN_IF_ERROR(checkOffsets(a, dims, batches));
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
