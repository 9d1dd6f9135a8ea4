// The aclnn entry points of the Compressor forward.
#include "aclnnop/aclnn_compressor.h"
#include "opapi/op_definition.h"
#include "ops/compressor/compressor_check.h"
#include "ops/compressor/compressor_plan.h"

namespace gradkit::ops {
namespace {

const OpDefinition<CompressorArgs, CompressorPlan> kCompressor{kCompressorApi, checkCompressor, compressorHasNoWork,
                                                               planCompressor};

}  // namespace
}  // namespace gradkit::ops

extern "C" aclnnStatus aclnnCompressorGetWorkspaceSize(
    const aclTensor* x, const aclTensor* wkv, const aclTensor* wgate, aclTensor* stateCacheRef, const aclTensor* ape,
    const aclTensor* stateBlockTableOptional, const aclTensor* cuSeqlensOptional, const aclTensor* sequsedOptional,
    const aclTensor* startPosOptional, int64_t cmpRatio, int64_t coff, int64_t cacheMode, int64_t stateCacheStrideDim0,
    bool gradEnabled, const aclTensor* cmpKvOut, const aclTensor* softmaxScoreOut, const aclTensor* kvOut,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  const gradkit::ops::CompressorArgs args{x,
                                          wkv,
                                          wgate,
                                          stateCacheRef,
                                          ape,
                                          stateBlockTableOptional,
                                          cuSeqlensOptional,
                                          sequsedOptional,
                                          startPosOptional,
                                          cmpRatio,
                                          coff,
                                          cacheMode,
                                          stateCacheStrideDim0,
                                          gradEnabled,
                                          cmpKvOut,
                                          softmaxScoreOut,
                                          kvOut};
  return gradkit::getWorkspaceSize(gradkit::ops::kCompressor, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnCompressor(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                       aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kCompressorApi, workspace, workspaceSize, executor, stream);
}
