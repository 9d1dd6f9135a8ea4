#include "ops/sparse_attention/smla_metadata_rules.h"

#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/error.h"
#include "opapi/tensor_copy.h"
#include "ops/sparse_attention/smla_metadata_args.h"
#include "runtime/runtime.h"

namespace gradkit::ops {
namespace {

constexpr aclnnStatus kInvalid = ACLNN_ERR_PARAM_INVALID;

std::string at(const char* name, size_t index, int64_t value) {
  return std::string(name) + "[" + std::to_string(index) + "] = " + std::to_string(value);
}

std::string rankText(const aclTensor& t) { return std::to_string(t.dim()) + " dims, shape " + t.shapeString(); }

}  // namespace

aclnnStatus checkSmlaOutParams(const char* api, const uint64_t* workspaceSize, aclOpExecutor* const* executor) {
  if (workspaceSize == nullptr) {
    return fail(ACLNN_ERR_INNER_NULLPTR, api, "workspaceSize", "a non-null pointer", "nullptr");
  }
  if (executor == nullptr) return fail(ACLNN_ERR_INNER_NULLPTR, api, "executor", "a non-null pointer", "nullptr");
  return ACLNN_SUCCESS;
}

aclnnStatus checkSmlaAscend950Only(const char* api) {
  const rt::Soc soc = rt::currentSoc();
  if (soc == rt::Soc::Ascend950) return ACLNN_SUCCESS;
  return failText(kInvalid, api,
                  std::string("the operator exists only on Ascend950 (as upstream), the emulated SoC is ") +
                      rt::socName(soc) + " (GRADKIT_SOC)");
}

aclnnStatus checkSmlaRange(const char* api, const char* name, int64_t value, int64_t low, int64_t high,
                           const std::string& rule) {
  if (value >= low && value <= high) return ACLNN_SUCCESS;
  return fail(kInvalid, api, name,
              "a value in [" + std::to_string(low) + ", " + std::to_string(high) + "] (" + rule + ")",
              std::to_string(value));
}

aclnnStatus checkSmlaExists(const char* api, const SmlaInput& what, const std::string& when) {
  if (smlaExists(what.tensor)) return ACLNN_SUCCESS;
  const std::string given =
      what.tensor == nullptr ? "nullptr" : "a tensor without rows, shape " + what.tensor->shapeString();
  return fail(kInvalid, api, what.name, "a tensor with at least one row (" + when + ")", given);
}

aclnnStatus checkSmlaLengthTensor(const char* api, const SmlaInput& t) {
  if (t.tensor == nullptr) return ACLNN_SUCCESS;
  if (t.tensor->dim() != 1) return fail(kInvalid, api, t.name, "1 dim", rankText(*t.tensor));
  if (t.tensor->dtype != ACL_INT32) return fail(kInvalid, api, t.name, "dtype INT32", dtypeName(t.tensor->dtype));
  return ACLNN_SUCCESS;
}

aclnnStatus checkSmlaTopkLengthTensor(const char* api, const SmlaInput& t, bool tndQ) {
  if (t.tensor == nullptr) return ACLNN_SUCCESS;
  const int64_t rank = tndQ ? 2 : 3;
  if (t.tensor->dim() != rank) {
    return fail(
        kInvalid, api, t.name,
        std::to_string(rank) + (tndQ ? " dims [T1, N2] (layout of q TND)" : " dims [B, S1, N2] (layout of q BSND)"),
        rankText(*t.tensor));
  }
  if (t.tensor->dtype != ACL_INT32) return fail(kInvalid, api, t.name, "dtype INT32", dtypeName(t.tensor->dtype));
  return ACLNN_SUCCESS;
}

aclnnStatus checkSmlaMetadataTensor(const char* api, const SmlaInput& t, int64_t words, bool sizeFirst) {
  const aclTensor& m = *t.tensor;
  if (m.dim() != 1) return fail(kInvalid, api, t.name, "1 dim [" + std::to_string(words) + "]", rankText(m));
  const auto size = [&]() -> aclnnStatus {
    if (m.viewDims[0] == words) return ACLNN_SUCCESS;
    return fail(kInvalid, api, t.name, std::to_string(words) + " elements", "shape " + m.shapeString());
  };
  const auto dtype = [&]() -> aclnnStatus {
    if (m.dtype == ACL_INT32) return ACLNN_SUCCESS;
    return fail(kInvalid, api, t.name, "dtype INT32", dtypeName(m.dtype));
  };
  if (sizeFirst) {
    if (const aclnnStatus s = size(); s != ACLNN_SUCCESS) return s;
    return dtype();
  }
  if (const aclnnStatus s = dtype(); s != ACLNN_SUCCESS) return s;
  return size();
}

SmlaBatch smlaBatchOf(const SmlaInput& seqused, const SmlaInput& cuSeqlens, bool tnd, int64_t batchSize) {
  if (smlaExists(seqused.tensor)) {
    return {seqused.tensor->viewDims[0], seqused.name, std::string("the length of ") + seqused.name, true};
  }
  if (tnd && smlaExists(cuSeqlens.tensor)) {
    return {cuSeqlens.tensor->viewDims[0] - 1, cuSeqlens.name, std::string("the length of ") + cuSeqlens.name + " - 1",
            true};
  }
  return {batchSize, "batchSize", "batchSize", false};
}

aclnnStatus checkSmlaSameBatch(const char* api, const SmlaBatch& query, const SmlaBatch& side, const char* sideName) {
  if (query.count == side.count) return ACLNN_SUCCESS;
  return fail(kInvalid, api, side.fromTensor || !query.fromTensor ? side.name : query.name,
              std::string("the query's batch for the ") + sideName + " (" + std::to_string(query.count) + ", " +
                  query.from + ")",
              std::to_string(side.count) + " (" + side.from + ")");
}

aclnnStatus checkSmlaCuMatchesSeqused(const char* api, const SmlaInput& cuSeqlens, const SmlaInput& seqused) {
  const int64_t fromCu = cuSeqlens.tensor->viewDims[0] - 1;
  if (fromCu == seqused.tensor->viewDims[0]) return ACLNN_SUCCESS;
  return fail(kInvalid, api, cuSeqlens.name,
              std::string("one more element than ") + seqused.name + " (" +
                  std::to_string(seqused.tensor->viewDims[0] + 1) + ")",
              "shape " + cuSeqlens.tensor->shapeString());
}

aclnnStatus checkSmlaBatchLimit(const char* api, const SmlaBatch& batch) {
  if (batch.count <= kSmlaMetaMaxBatch) return ACLNN_SUCCESS;
  return fail(kInvalid, api, batch.name, "at most " + std::to_string(kSmlaMetaMaxBatch) + " batches (gradkit's limit)",
              std::to_string(batch.count) + " (" + batch.from + ")");
}

aclnnStatus checkSmlaCuSeqlensValues(const char* api, const char* name, const std::vector<int64_t>& cu) {
  if (cu.empty()) return ACLNN_SUCCESS;
  if (cu[0] != 0) {
    return fail(kInvalid, api, name, "first element 0 (prefix sums of the batch lengths)", at(name, 0, cu[0]));
  }
  for (size_t b = 1; b < cu.size(); ++b) {
    if (cu[b] < cu[b - 1]) {
      return fail(kInvalid, api, name, "non-decreasing elements (prefix sums of the batch lengths)",
                  at(name, b, cu[b]) + " after " + at(name, b - 1, cu[b - 1]));
    }
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkSmlaSequsedValues(const char* api, const char* name, const std::vector<int64_t>& used, int64_t cap,
                                   const char* capName, const std::vector<int64_t>& cu) {
  for (size_t b = 0; b < used.size(); ++b) {
    if (used[b] < 0) return fail(kInvalid, api, name, "elements >= 0", at(name, b, used[b]));
    if (cap >= 0 && used[b] > cap) {
      return fail(kInvalid, api, name,
                  std::string("elements <= ") + capName + " = " + std::to_string(cap) + " (layout BSND)",
                  at(name, b, used[b]));
    }
    if (b + 1 < cu.size() && used[b] > cu[b + 1] - cu[b]) {
      return fail(kInvalid, api, name,
                  "elements <= the batch's length from cu_seqlens (" + std::to_string(cu[b + 1] - cu[b]) +
                      " for batch " + std::to_string(b) + ")",
                  at(name, b, used[b]));
    }
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkSmlaResidualValues(const char* api, const char* name, const std::vector<int64_t>& residual,
                                    int64_t cmpRatio) {
  for (size_t b = 0; b < residual.size(); ++b) {
    if (residual[b] < 0 || residual[b] >= cmpRatio) {
      return fail(kInvalid, api, name, "elements in [0, cmpRatio = " + std::to_string(cmpRatio) + ")",
                  at(name, b, residual[b]));
    }
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkSmlaTopkLengthValues(const char* api, const SmlaInput& t, int64_t rowsNeeded,
                                      const std::string& rowsWhy) {
  const int64_t elements = t.tensor->numel();
  if (elements < rowsNeeded) {
    return fail(kInvalid, api, t.name, "at least " + std::to_string(rowsNeeded) + " elements (" + rowsWhy + ")",
                std::to_string(elements) + ", shape " + t.tensor->shapeString());
  }
  if (elements > kSmlaMetaMaxRows) {
    return fail(kInvalid, api, t.name, "at most " + std::to_string(kSmlaMetaMaxRows) + " elements (gradkit's limit)",
                std::to_string(elements) + ", shape " + t.tensor->shapeString());
  }
  const std::vector<int64_t> values = readInt32Values(t.tensor);
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] < 0) return fail(kInvalid, api, t.name, "elements >= 0", at(t.name, i, values[i]));
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkSmlaRowLimit(const char* api, int64_t rows, const std::string& from) {
  if (rows <= kSmlaMetaMaxRows) return ACLNN_SUCCESS;
  return failText(kInvalid, api,
                  "at most " + std::to_string(kSmlaMetaMaxRows) + " query rows in all (gradkit's limit), given " +
                      std::to_string(rows) + " (" + from + ")");
}

}  // namespace gradkit::ops
