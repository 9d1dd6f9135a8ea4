// The rule book the three sparse attention metadata operators share (aclnnSparseFlashMla[Grad]Metadata,
// aclnnSparseFlashMlaSoftmaxL1NormMetadata): upstream's "exists" test, where a batch count comes from, the int32
// length tensors' rank and dtype, the metadata tensor, and the value rules upstream's AI CPU kernels apply at run time
// (cu_seqlens from 0 and non-decreasing, seqused within the lengths, residual in [0, cmpRatio), topk lengths >= 0),
// which gradkit checks in the first phase (DECISIONS.md "Check early and clearly": 161002). Every helper returns
// ACLNN_SUCCESS or records "<api>: argument '<name>': expected ..., given ..." and returns the code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "opapi/tensor.h"

namespace gradkit::ops {

/** Upstream's IsTensorExist: non-null, at least one dim, and dim 0 > 0. Anything else is an absent optional. */
inline bool smlaExists(const aclTensor* t) { return t != nullptr && t->dim() > 0 && t->viewDims[0] > 0; }

/** The tensor when it exists, else nullptr. */
inline const aclTensor* smlaPresent(const aclTensor* t) { return smlaExists(t) ? t : nullptr; }

/** A named int32 input of a metadata call (`tensor` null when absent). */
struct SmlaInput {
  const char* name;
  const aclTensor* tensor;
};

/** 561103 (ACLNN_ERR_INNER_NULLPTR, as upstream's op-api) when workspaceSize or executor is null. */
aclnnStatus checkSmlaOutParams(const char* api, const uint64_t* workspaceSize, aclOpExecutor* const* executor);

/** 161002 naming the profile unless it is Ascend950 (the gradient and L1-norm metadata operators exist only there). */
aclnnStatus checkSmlaAscend950Only(const char* api);

/** 161002 unless low <= value <= high; `rule` says why ("upstream counts it in int32"). */
aclnnStatus checkSmlaRange(const char* api, const char* name, int64_t value, int64_t low, int64_t high,
                           const std::string& rule);

/** 161002 unless `what` exists (required input or output): upstream's "<name> cannot be empty". */
aclnnStatus checkSmlaExists(const char* api, const SmlaInput& what, const std::string& when);

/** An existing length tensor (cu_seqlens, seqused, residual): 1-D, then INT32 (upstream's order). */
aclnnStatus checkSmlaLengthTensor(const char* api, const SmlaInput& t);

/** An existing topk-length tensor: rank 2 (TND q) or 3 (BSND q), then INT32. */
aclnnStatus checkSmlaTopkLengthTensor(const char* api, const SmlaInput& t, bool tndQ);

/** The existing metadata output: 1-D, `words` elements, INT32; `sizeFirst` puts the size before the dtype. */
aclnnStatus checkSmlaMetadataTensor(const char* api, const SmlaInput& t, int64_t words, bool sizeFirst);

/** A batch count and where it came from. */
struct SmlaBatch {
  int64_t count = 0;
  const char* name = "batchSize";  // the argument it came from
  std::string from;                // "the length of sequsedQOptional", "the length of cuSeqlensQOptional - 1", ...
  bool fromTensor = false;
};

/** Upstream's batch of one side: seqused's length if it exists, else (TND) cu_seqlens' length - 1, else batchSize. */
SmlaBatch smlaBatchOf(const SmlaInput& seqused, const SmlaInput& cuSeqlens, bool tnd, int64_t batchSize);

/** 161002 when `side` (ori or cmp kv) does not have the query's batch; names the side's source when a tensor. */
aclnnStatus checkSmlaSameBatch(const char* api, const SmlaBatch& query, const SmlaBatch& side, const char* sideName);

/** 161002 when a TND side has both: len(cuSeqlens) - 1 must equal len(seqused). */
aclnnStatus checkSmlaCuMatchesSeqused(const char* api, const SmlaInput& cuSeqlens, const SmlaInput& seqused);

/** 161002 when the batch exceeds gradkit's limit (kSmlaMetaMaxBatch), before any per-batch value is read. */
aclnnStatus checkSmlaBatchLimit(const char* api, const SmlaBatch& batch);

/** cu_seqlens values: [0] = 0, then non-decreasing (upstream's AI CPU order). */
aclnnStatus checkSmlaCuSeqlensValues(const char* api, const char* name, const std::vector<int64_t>& cu);

/**
 * seqused values, each >= 0, then <= `cap` when cap >= 0 (BSND: the max seqlen argument `capName`), then (cu given)
 * <= the batch's cu_seqlens length.
 */
aclnnStatus checkSmlaSequsedValues(const char* api, const char* name, const std::vector<int64_t>& used, int64_t cap,
                                   const char* capName, const std::vector<int64_t>& cu);

/** Residual values in [0, cmpRatio). */
aclnnStatus checkSmlaResidualValues(const char* api, const char* name, const std::vector<int64_t>& residual,
                                    int64_t cmpRatio);

/**
 * A topk-length tensor: at least `rowsNeeded` elements (upstream: the sum of the query lengths; gradkit also asks
 * for every row the planner reads, `rowsWhy`), at most kSmlaMetaMaxRows, then each element >= 0.
 */
aclnnStatus checkSmlaTopkLengthValues(const char* api, const SmlaInput& t, int64_t rowsNeeded,
                                      const std::string& rowsWhy);

/** 161002 when the query rows to plan exceed gradkit's limit (kSmlaMetaMaxRows). */
aclnnStatus checkSmlaRowLimit(const char* api, int64_t rows, const std::string& from);

}  // namespace gradkit::ops
