// aclnnCompressorGetWorkspaceSize: spec compressor.md 3.1 in upstream's order (null pointers, the layout and the empty
// rule, each argument's dtype / rank / range, the shapes that must agree), the limits of the emulated SoC
// (DECISIONS.md; A2/A3: cmpRatio a power of two, cacheMode 1, no gradEnabled, state-cache blocks dense), then what
// upstream leaves unchecked: stateCacheStrideDim0, the exact output shapes, the values of cu_seqlens / seqused /
// start_pos and of the block-table entries the call uses (compressor_fwd_check_values.cpp, after gradkit's memory
// rules, since they read host memory).
#include "ops/compressor/compressor_check.h"

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "opapi/tensor_rules.h"
#include "ops/compressor/compressor_fwd_check_values.h"
#include "ops/compressor/compressor_fwd_state_cache.h"
#include "runtime/runtime.h"

namespace gradkit::ops {
namespace {

constexpr const char* kApi = kCompressorApi;
constexpr int64_t kMinHidden = 1024, kMaxHidden = 10240, kHiddenAlignment = 512;
constexpr int64_t kMinBlockSize = 1, kMaxBlockSize = 1024;
constexpr int64_t kMinCmpRatio = 2, kMaxCmpRatio = 128;

// What the emulated SoC allows (spec 3.1: A2/A3 only powers of two 2..128, no cacheMode 2, no gradEnabled, no
// non-contiguous state-cache dim 0).
struct CompressorProfile {
  const char* name;
  bool full;  // Ascend950: every documented option
};

CompressorProfile currentProfile() {
  const rt::Soc soc = rt::currentSoc();
  return {rt::socName(soc), soc == rt::Soc::Ascend950};
}

std::string profileText(const CompressorProfile& profile) {
  return std::string(" in the ") + profile.name + " profile (GRADKIT_SOC)";
}

bool isPowerOfTwo(int64_t value) { return value > 0 && (value & (value - 1)) == 0; }

aclnnStatus checkNulls(const CompressorArgs& a, const uint64_t* workspaceSize, aclOpExecutor* const* executor) {
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "executor", executor));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "x", a.x));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "wkv", a.wkv));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "wgate", a.wgate));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "stateCacheRef", a.stateCache));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "ape", a.ape));
  if (a.stateBlockTable == nullptr) {  // upstream's tiling requires it: the cache is addressed only through it
    return fail(ACLNN_ERR_PARAM_NULLPTR, kApi, "stateBlockTableOptional",
                "a non-null pointer (the state cache is addressed through the block table)", "nullptr");
  }
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "cmpKvOut", a.cmpKv));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "softmaxScoreOut", a.softmaxScore));
  return checkNotNull(kApi, "kvOut", a.kv);
}

// x's rank decides the layout; cu_seqlens comes with TH and only with TH.
aclnnStatus checkLayout(const CompressorArgs& a) {
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "x", *a.x, {2, 3}, "TH [T, H] or BSH [B, S, H]"));
  if (a.x->dim() == 2 && a.cuSeqlens == nullptr) {
    return fail(ACLNN_ERR_PARAM_NULLPTR, kApi, "cuSeqlensOptional", "a non-null pointer (x is TH [T, H])", "nullptr");
  }
  if (a.x->dim() == 3 && a.cuSeqlens != nullptr) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "cuSeqlensOptional", "nullptr (x is BSH [B, S, H])",
                "a tensor of shape " + a.cuSeqlens->shapeString());
  }
  return ACLNN_SUCCESS;
}

// Only x's B, S or T may be 0 (then nothing is computed); the weights, the cache, ape are never empty, the table only
// with an empty x.
aclnnStatus checkEmpty(const CompressorArgs& a) {
  if (a.x->viewDims.back() == 0) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "x", "H (last dim) > 0 (only B, S or T may be 0)",
                "shape " + a.x->shapeString());
  }
  const std::vector<NamedTensor> neverEmpty = {
      {"wkv", a.wkv}, {"wgate", a.wgate}, {"stateCacheRef", a.stateCache}, {"ape", a.ape}};
  for (const NamedTensor& named : neverEmpty) {
    if (named.tensor->isEmpty()) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, named.name,
                  "a non-empty tensor (only x's B, S or T may be 0; block_num > 0)",
                  "empty shape " + named.tensor->shapeString());
    }
  }
  if (!a.x->isEmpty() && a.stateBlockTable->isEmpty()) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "stateBlockTableOptional",
                "a non-empty tensor (it may be empty only with an empty x)",
                "empty shape " + a.stateBlockTable->shapeString());
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkAttributes(const CompressorArgs& a, const CompressorProfile& profile) {
  if (a.cmpRatio < kMinCmpRatio || a.cmpRatio > kMaxCmpRatio) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "cmpRatio", "an integer in [2, 128]", std::to_string(a.cmpRatio));
  }
  if (!profile.full && !isPowerOfTwo(a.cmpRatio)) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "cmpRatio",
                "a power of two in [2, 128] (2, 4, 8, 16, 32, 64, 128)" + profileText(profile),
                std::to_string(a.cmpRatio));
  }
  if (a.coff != 1 && a.coff != 2) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "coff", "1 or 2", std::to_string(a.coff));
  }
  if (a.cacheMode != kCompressorPagedCache && a.cacheMode != kCompressorRingCache) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "cacheMode", "1 (paged buffer) or 2 (ring buffer)",
                std::to_string(a.cacheMode));
  }
  if (!profile.full && a.cacheMode != kCompressorPagedCache) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "cacheMode",
                "1 (paged buffer; the ring buffer 2 exists only in the "
                "Ascend950 profile)" +
                    profileText(profile),
                std::to_string(a.cacheMode));
  }
  if (!profile.full && a.gradEnabled) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "gradEnabled",
                "false (softmaxScoreOut and kvOut are exported only in the Ascend950 profile)" + profileText(profile),
                "true");
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkInputs(const CompressorArgs& a) {
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "x", *a.x, {ACL_BF16, ACL_FLOAT16}));
  const int64_t hidden = a.x->viewDims.back();
  if (hidden < kMinHidden || hidden > kMaxHidden || hidden % kHiddenAlignment != 0) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "x", "H (last dim) a multiple of 512 in [1024, 10240]",
                "H = " + std::to_string(hidden) + " (shape " + a.x->shapeString() + ")");
  }
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "wkv", *a.wkv, {ACL_BF16, ACL_FLOAT16}));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "wkv", *a.wkv, {2}, "[coff*D, H]"));
  const int64_t rows = a.wkv->viewDims[0];
  if (rows % a.coff != 0 || (rows / a.coff != 128 && rows / a.coff != 512)) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "wkv", "dim 0 = coff*D with D (head dim) 128 or 512",
                "dim 0 = " + std::to_string(rows) + " with coff = " + std::to_string(a.coff) + " (shape " +
                    a.wkv->shapeString() + ")");
  }
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "wgate", *a.wgate, {ACL_BF16, ACL_FLOAT16}));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "wgate", *a.wgate, {2}, "[coff*D, H]"));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "ape", *a.ape, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "ape", *a.ape, {2}, "[cmpRatio, coff*D]"));
  const std::vector<NamedTensor> perBatch = {
      {"cuSeqlensOptional", a.cuSeqlens}, {"sequsedOptional", a.seqused}, {"startPosOptional", a.startPos}};
  for (const NamedTensor& named : perBatch) {
    if (named.tensor == nullptr) continue;
    GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, named.name, *named.tensor, {ACL_INT32}));
    GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, named.name, *named.tensor, {1}, "one value per batch"));
  }
  if (a.cuSeqlens != nullptr && a.cuSeqlens->viewDims[0] == 0) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "cuSeqlensOptional", "shape [B + 1] (at least one value, 0 first)",
                "shape " + a.cuSeqlens->shapeString());
  }
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "stateBlockTableOptional", *a.stateBlockTable, {ACL_INT32}));
  return ACLNN_SUCCESS;
}

int64_t batchOf(const CompressorArgs& a) { return a.x->dim() == 3 ? a.x->viewDims[0] : a.cuSeqlens->viewDims[0] - 1; }

// gradkit's limit on B (kCompressorMaxBatch), before anything reads per-batch values or sizes by B.
aclnnStatus checkBatchCount(const CompressorArgs& a) {
  const int64_t batch = batchOf(a);
  if (batch <= kCompressorMaxBatch) return ACLNN_SUCCESS;
  const bool th = a.x->dim() == 2;
  return fail(ACLNN_ERR_PARAM_INVALID, kApi, th ? "cuSeqlensOptional" : "x",
              "at most " + std::to_string(kCompressorMaxBatch) + " batches (gradkit's limit)",
              "B = " + std::to_string(batch) + " (shape " + (th ? a.cuSeqlens : a.x)->shapeString() + ")");
}

aclnnStatus checkStateCache(const CompressorArgs& a) {
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "stateCacheRef", *a.stateCache, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "stateCacheRef", *a.stateCache, {3}, "[block_num, block_size, 2*coff*D]"));
  const int64_t blockSize = a.stateCache->viewDims[1];
  if (blockSize < kMinBlockSize || blockSize > kMaxBlockSize) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "stateCacheRef", "block_size (dim 1) in [1, 1024]",
                "block_size = " + std::to_string(blockSize) + " (shape " + a.stateCache->shapeString() + ")");
  }
  if (a.cacheMode == kCompressorRingCache) {
    const int64_t batch = batchOf(a);
    if (a.stateCache->viewDims[0] < batch) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, "stateCacheRef",
                  "block_num (dim 0) >= B = " + std::to_string(batch) + " (cacheMode 2: one ring buffer per batch)",
                  "block_num = " + std::to_string(a.stateCache->viewDims[0]));
    }
    return checkRankIn(kApi, "stateBlockTableOptional", *a.stateBlockTable, {1}, "cacheMode 2: [B]");
  }
  return checkRankIn(kApi, "stateBlockTableOptional", *a.stateBlockTable, {2},
                     "cacheMode 1: [B, ceil(Smax / block_size)]");
}

aclnnStatus checkOutputKinds(const CompressorArgs& a) {
  const int64_t rank = a.x->dim();
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "cmpKvOut", *a.cmpKv, {ACL_BF16, ACL_FLOAT16}));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "cmpKvOut", *a.cmpKv, {rank}, "the rank of x"));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "softmaxScoreOut", *a.softmaxScore, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "softmaxScoreOut", *a.softmaxScore, {rank + 1}, "the rank of x + 1"));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "kvOut", *a.kv, {ACL_FLOAT}));
  return checkRankIn(kApi, "kvOut", *a.kv, {rank + 1}, "the rank of x + 1");
}

// The shapes that must agree with x, wkv and the attributes (upstream's consistency rules), and the dtypes that follow
// x.
aclnnStatus checkConsistency(const CompressorArgs& a) {
  const int64_t batch = batchOf(a);
  const int64_t hidden = a.x->viewDims.back();
  const int64_t channels = a.wkv->viewDims[0];
  const std::string b = std::to_string(batch);
  if (a.cacheMode == kCompressorPagedCache) {
    if (a.stateBlockTable->viewDims[0] != batch) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, "stateBlockTableOptional", "dim 0 = B = " + b,
                  "shape " + a.stateBlockTable->shapeString());
    }
    const int64_t blockSize = a.stateCache->viewDims[1];
    const int64_t maxColumns = compressorMaxTableColumns(blockSize);
    if (a.stateBlockTable->viewDims[1] > maxColumns) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, "stateBlockTableOptional",
                  "dim 1 <= ceil(2^31 / block_size) = " + std::to_string(maxColumns) +
                      " (positions are int32: no call reaches a later column; block_size " + std::to_string(blockSize) +
                      ")",
                  "shape " + a.stateBlockTable->shapeString());
    }
  } else {
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "stateBlockTableOptional", *a.stateBlockTable, {batch}, "[B]"));
  }
  if (a.seqused != nullptr) {
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "sequsedOptional", *a.seqused, {batch}, "[B]"));
  }
  if (a.startPos != nullptr) {
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "startPosOptional", *a.startPos, {batch}, "[B]"));
  }
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "wkv", *a.wkv, {channels, hidden}, "[coff*D, H] with H of x"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "wgate", *a.wgate, {channels, hidden}, "[coff*D, H], as wkv"));
  const int64_t width = 2 * channels;
  if (a.stateCache->viewDims[2] != width) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "stateCacheRef",
                "dim 2 = 2*coff*D = " + std::to_string(width) + " (kv_state, then score_state)",
                "shape " + a.stateCache->shapeString());
  }
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "ape", *a.ape, {a.cmpRatio, channels}, "[cmpRatio, coff*D]"));
  GRADKIT_RETURN_IF_ERROR(checkSameDtype(kApi, "wkv", *a.wkv, "x", *a.x));
  GRADKIT_RETURN_IF_ERROR(checkSameDtype(kApi, "wgate", *a.wgate, "x", *a.x));
  return checkSameDtype(kApi, "cmpKvOut", *a.cmpKv, "x", *a.x);
}

// stateCacheStrideDim0: 0 (the tensor's own dim-0 stride) or the elements between two blocks, at least one block's
// extent (blocks never overlap) and within int32 (upstream's attribute width). A2/A3: the blocks must be dense.
aclnnStatus checkStrideDim0(const CompressorArgs& a, const CompressorProfile& profile) {
  const aclTensor& cache = *a.stateCache;
  const int64_t extent = compressorCacheBlockExtent(cache);
  const int64_t stride = a.stateCacheStrideDim0;
  if (stride != 0 && (stride < extent || stride > INT32_MAX)) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "stateCacheStrideDim0",
                "0 (the dim-0 stride of stateCacheRef) or the elements between two cache blocks in [" +
                    std::to_string(extent) + ", 2147483647] (one block spans " + std::to_string(extent) + " elements)",
                std::to_string(stride));
  }
  const int64_t reach = compressorCacheReach(compressorEffectiveStateCache(cache, stride));
  const int64_t storage = cache.storageNumel();
  if (reach > storage) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "stateCacheStrideDim0",
                "a block stride that keeps the block_num = " + std::to_string(cache.viewDims[0]) +
                    " blocks inside the storage stateCacheRef declares (" + std::to_string(storage) +
                    " elements from offset " + std::to_string(cache.offset) + ")",
                std::to_string(stride) + ", whose last block ends at element " +
                    (reach == INT64_MAX ? std::string("> 2^63") : std::to_string(reach)));
  }
  if (!profile.full) {
    const int64_t dense = cache.viewDims[1] * cache.viewDims[2];
    const int64_t effective = stride != 0 ? stride : cache.strides[0];
    const bool denseBlock = cache.strides[2] == 1 && cache.strides[1] == cache.viewDims[2];
    if (effective != dense || !denseBlock) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, "stateCacheRef",
                  "dense blocks (strides [" + std::to_string(dense) + ", " + std::to_string(cache.viewDims[2]) +
                      ", 1]; a non-contiguous dim 0 exists only in the Ascend950 profile)" + profileText(profile),
                  "strides " + dimsString(cache.strides) + " with stateCacheStrideDim0 = " + std::to_string(stride));
    }
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkOutputShapes(const CompressorArgs& a) {
  const int64_t d = a.wkv->viewDims[0] / a.coff;
  const int64_t n = a.coff * a.cmpRatio;
  const bool th = a.x->dim() == 2;
  const std::vector<int64_t> lead = compressorOutputLead(th, batchOf(a), a.x->viewDims[th ? 0 : 1], a.cmpRatio);
  const std::string why = th ? "[min(T, T/cmpRatio + B)" : "[B, ceil(S/cmpRatio)";
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "cmpKvOut", *a.cmpKv, shapeWithTail(lead, {d}), why + ", D]"));
  if (!a.gradEnabled) return ACLNN_SUCCESS;  // softmaxScoreOut and kvOut are not written
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "softmaxScoreOut", *a.softmaxScore, shapeWithTail(lead, {n, d}),
                                       why + ", coff*cmpRatio, D] (gradEnabled)"));
  return checkShapeIs(kApi, "kvOut", *a.kv, shapeWithTail(lead, {n, d}), why + ", coff*cmpRatio, D] (gradEnabled)");
}

std::vector<NamedTensor> inputsOf(const CompressorArgs& a) {
  return {{"x", a.x},
          {"wkv", a.wkv},
          {"wgate", a.wgate},
          {"ape", a.ape},
          {"stateBlockTableOptional", a.stateBlockTable},
          {"cuSeqlensOptional", a.cuSeqlens},
          {"sequsedOptional", a.seqused},
          {"startPosOptional", a.startPos}};
}

// The outputs the call writes: the state cache (read and written: no other tensor may share its bytes), cmpKvOut,
// and with gradEnabled softmaxScoreOut and kvOut.
std::vector<NamedTensor> outputsOf(const CompressorArgs& a, const aclTensor& effectiveCache) {
  std::vector<NamedTensor> outputs = {{"stateCacheRef", &effectiveCache}, {"cmpKvOut", a.cmpKv}};
  if (a.gradEnabled) {
    outputs.push_back({"softmaxScoreOut", a.softmaxScore});
    outputs.push_back({"kvOut", a.kv});
  }
  return outputs;
}

aclnnStatus checkFormats(const CompressorArgs& a) {
  std::vector<NamedTensor> all = inputsOf(a);
  all.push_back({"stateCacheRef", a.stateCache});
  all.push_back({"cmpKvOut", a.cmpKv});
  all.push_back({"softmaxScoreOut", a.softmaxScore});
  all.push_back({"kvOut", a.kv});
  for (const NamedTensor& named : all) {
    if (named.tensor != nullptr) GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormat(kApi, named.name, *named.tensor));
  }
  return ACLNN_SUCCESS;
}

}  // namespace

aclnnStatus checkCompressor(const CompressorArgs& args, const uint64_t* workspaceSize, aclOpExecutor* const* executor) {
  GRADKIT_RETURN_IF_ERROR(checkNulls(args, workspaceSize, executor));
  GRADKIT_RETURN_IF_ERROR(checkLayout(args));
  GRADKIT_RETURN_IF_ERROR(checkEmpty(args));
  const CompressorProfile profile = currentProfile();
  GRADKIT_RETURN_IF_ERROR(checkAttributes(args, profile));
  GRADKIT_RETURN_IF_ERROR(checkInputs(args));
  GRADKIT_RETURN_IF_ERROR(checkBatchCount(args));
  GRADKIT_RETURN_IF_ERROR(checkStateCache(args));
  GRADKIT_RETURN_IF_ERROR(checkOutputKinds(args));
  GRADKIT_RETURN_IF_ERROR(checkConsistency(args));
  GRADKIT_RETURN_IF_ERROR(checkStrideDim0(args, profile));
  GRADKIT_RETURN_IF_ERROR(checkOutputShapes(args));
  GRADKIT_RETURN_IF_ERROR(checkFormats(args));
  const aclTensor cache = compressorEffectiveStateCache(*args.stateCache, args.stateCacheStrideDim0);
  GRADKIT_RETURN_IF_ERROR(checkMemoryRules(kApi, inputsOf(args), outputsOf(args, cache)));
  // The values read from host memory come last: the reads rely on the shapes and on the memory being live.
  return checkCompressorValues(args);
}

}  // namespace gradkit::ops
