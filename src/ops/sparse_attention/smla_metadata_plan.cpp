#include "ops/sparse_attention/smla_metadata_plan.h"

#include "opapi/tensor_copy.h"
#include "ops/sparse_attention/smla_metadata_planner.h"
#include "ops/sparse_attention/smla_metadata_problem.h"
#include "runtime/profile.h"
#include "runtime/runtime.h"

namespace gradkit::ops {

aclnnStatus SmlaMetaPlan::run(void* /*memory*/) const {
  aclTensor written = metadata;  // the first words.size() elements of the 1-D view
  written.viewDims = {static_cast<int64_t>(words.size())};
  copyFromContiguous(words.data(), written);
  return ACLNN_SUCCESS;
}

SmlaMetaPlan planSmlaMetadataCall(const SmlaMetaArgs& args) {
  const rt::Soc soc = rt::currentSoc();
  const SmlaMetaProblem problem = smlaMetaProblemOf(args, soc == rt::Soc::Ascend950);
  SmlaMetaPlan plan;
  plan.metadata = *args.metadata;
  plan.words = args.op == SmlaMetaOp::Forward ? planSmlaMetadata(problem, rt::aicCores(soc))
                                              : planSmlaGradMetadata(problem, rt::aicCores(soc));
  return plan;
}

SmlaMetaPlan planSmlaL1NormMetadataCall(const SmlaL1MetaArgs& args) {
  SmlaMetaPlan plan;
  plan.metadata = *args.metadata;
  plan.words = planSmlaL1NormMetadata(smlaL1TotalRows(args), rt::aicCores(rt::currentSoc()));
  return plan;
}

}  // namespace gradkit::ops
