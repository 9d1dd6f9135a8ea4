// The arguments of DeepSeek-V4 sparse attention's three metadata operators, packed once, and the layout of what they
// write. Upstream (ops-transformer attention/): sparse_flash_mla_metadata, sparse_flash_mla_grad_metadata,
// sparse_flash_mla_softmax_l1_norm_metadata (AI CPU kernels planning the main operators' split over AI cores);
// docs/sparse_attention.md, "Metadata operators".
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "opapi/tensor.h"

namespace gradkit::ops {

inline constexpr const char* kSmlaMetadataApi = "aclnnSparseFlashMlaMetadata";
inline constexpr const char* kSmlaGradMetadataApi = "aclnnSparseFlashMlaGradMetadata";
inline constexpr const char* kSmlaL1NormMetadataApi = "aclnnSparseFlashMlaSoftmaxL1NormMetadata";

/** Which of the two operators sharing the 30-parameter prototype a call is. */
enum class SmlaMetaOp { Forward, Grad };

/**
 * One aclnnSparseFlashMlaMetadata or aclnnSparseFlashMlaGradMetadata call, as the caller gave it (both take the same
 * 30 parameters; `op` says which).
 */
struct SmlaMetaArgs {
  SmlaMetaOp op;
  const aclTensor* cuSeqlensQ;
  const aclTensor* cuSeqlensOriKv;
  const aclTensor* cuSeqlensCmpKv;
  const aclTensor* sequsedQ;
  const aclTensor* sequsedOriKv;
  const aclTensor* sequsedCmpKv;
  const aclTensor* cmpResidualKv;
  const aclTensor* oriTopkLength;
  const aclTensor* cmpTopkLength;
  int64_t numHeadsQ;
  int64_t numHeadsKv;
  int64_t headDim;
  int64_t batchSize;
  int64_t maxSeqlenQ;
  int64_t maxSeqlenOriKv;
  int64_t maxSeqlenCmpKv;
  int64_t oriTopk;
  int64_t cmpTopk;
  int64_t cmpRatio;
  int64_t oriMaskMode;
  int64_t cmpMaskMode;
  int64_t oriWinLeft;
  int64_t oriWinRight;
  const char* layoutQ;
  const char* layoutKv;
  bool hasOriKv;
  bool hasCmpKv;
  const aclTensor* metadata;  // the output (upstream declares it const)

  const char* api() const { return op == SmlaMetaOp::Forward ? kSmlaMetadataApi : kSmlaGradMetadataApi; }
};

/** One aclnnSparseFlashMlaSoftmaxL1NormMetadata call, as the caller gave it. */
struct SmlaL1MetaArgs {
  const aclTensor* cuSeqLensQ;
  const aclTensor* cuSeqLensK;
  const aclTensor* seqUsedQ;
  const aclTensor* seqUsedK;
  const aclTensor* cmpResidualK;
  const aclTensor* topkLength;
  int64_t batchSize;
  int64_t maxSeqLenQ;
  int64_t maxSeqLenK;
  int64_t numHeadsQ;
  int64_t numHeadsK;
  int64_t headDim;
  int64_t topk;
  int64_t cmpRatio;
  int64_t maskMode;
  const char* layoutQ;
  const char* layoutK;
  const aclTensor* metadata;
};

// The metadata images (upstream sparse_flash_mla_kernel_metadata.h, sparse_flash_mla_grad_metadata.h,
// sparse_flash_mla_softmax_l1_norm_metadata.h). INT32 words; the fields are read as uint32.
inline constexpr int64_t kSmlaMetadataWords = 1024;      // aclnnSparseFlashMla[Grad]Metadata's tensor
inline constexpr int64_t kSmlaL1NormMetadataWords = 64;  // aclnnSparseFlashMlaSoftmaxL1NormMetadata's tensor
inline constexpr int64_t kSmlaAicEntries = 36;           // cube-core entries of the forward image
inline constexpr int64_t kSmlaAivEntries = 72;           // vector-core entries
inline constexpr int64_t kSmlaAicFields = 9;             // per cube core
inline constexpr int64_t kSmlaAivFields = 8;             // per vector core
/** Words the forward planner writes (zeroed first): the cube-core area, then the vector-core area at word 324. */
inline constexpr int64_t kSmlaFaWords = kSmlaAicEntries * kSmlaAicFields;
inline constexpr int64_t kSmlaPlanWords = kSmlaFaWords + kSmlaAivEntries * kSmlaAivFields;  // 900
/** Words the gradient planner writes (the rest keep their content). */
inline constexpr int64_t kSmlaGradPlanWords = 7;
/** The most cube cores the L1-norm planner uses (upstream SMLA_METADATA_MAX_CORE_NUM). */
inline constexpr int64_t kSmlaL1MaxCores = 36;

/** Fields of one cube-core entry of the forward image. */
enum SmlaFaField : int64_t {
  kFaCoreEnable = 0,
  kFaBn2Start,
  kFaMStart,
  kFaS2Start,
  kFaBn2End,
  kFaMEnd,
  kFaS2End,
  kFaFirstFdWorkspace,
  kFaMaxS2Blocks,
};

/** Words of the gradient image. */
enum SmlaGradField : int64_t {
  kGradTotalRows = 0,
  kGradFormerCoreRows,
  kGradRemainCoreRows,
  kGradRemainCores,
  kGradUsedCores,
  kGradMaxOriKeys,
  kGradMaxCmpKeys,
};

/** Words of the L1-norm image. */
enum SmlaL1Field : int64_t {
  kL1TotalRows = 0,
  kL1FormerCoreRows,
  kL1RemainCoreRows,
  kL1RemainCores,
  kL1Cores,
};

/**
 * gradkit's limits, checked before anything reads per-batch or per-row values: upstream keeps these counts in int32
 * and the first phase walks every batch and query row, so both are bounded by what a real call can hold (2^20
 * batches; 2^24 query rows make a q of N1 x 512 values each: terabytes).
 */
inline constexpr int64_t kSmlaMetaMaxBatch = int64_t{1} << 20;
inline constexpr int64_t kSmlaMetaMaxRows = int64_t{1} << 24;

}  // namespace gradkit::ops
