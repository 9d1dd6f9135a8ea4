// The plans of the three sparse attention metadata operators: the whole image is computed in GetWorkspaceSize (the
// int32 inputs are host memory, read and checked there); the run only writes it into the metadata tensor's view.
#pragma once

#include <cstdint>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "opapi/tensor.h"
#include "opapi/workspace.h"
#include "ops/sparse_attention/smla_metadata_args.h"

namespace gradkit::ops {

struct SmlaMetaPlan {
  WorkspaceBooking workspace;   // none: upstream's workspace size is 0 too
  aclTensor metadata;           // the output's descriptor
  std::vector<uint32_t> words;  // written to metadata elements 0 .. words.size() - 1; the others keep their content

  aclnnStatus run(void* memory) const;
};

/** aclnnSparseFlashMlaMetadata (900 words) or aclnnSparseFlashMlaGradMetadata (7 words) of a checked call. */
SmlaMetaPlan planSmlaMetadataCall(const SmlaMetaArgs& args);

/** aclnnSparseFlashMlaSoftmaxL1NormMetadata (64 words) of a checked call. */
SmlaMetaPlan planSmlaL1NormMetadataCall(const SmlaL1MetaArgs& args);

}  // namespace gradkit::ops
