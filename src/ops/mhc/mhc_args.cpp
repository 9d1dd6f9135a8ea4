#include "ops/mhc/mhc_args.h"

#include <cstdint>
#include <cstring>

#include "opapi/tensor.h"

namespace gradkit::ops {

bool MhcPreArgs::isV2() const { return std::strcmp(api, kMhcPreV2Api) == 0; }

bool MhcPreBackwardArgs::isV2() const { return std::strcmp(api, kMhcPreBackwardV2Api) == 0; }

MhcDims mhcDimsOf(const aclTensor& x, const aclTensor& phi) {
  MhcDims dims;
  const int64_t rank = x.dim();
  dims.bsnd = rank == 4;
  dims.streams = x.viewDims[rank - 2];
  dims.hidden = x.viewDims[rank - 1];
  dims.tokens = dims.bsnd ? x.viewDims[0] * x.viewDims[1] : x.viewDims[0];
  dims.fusion = phi.viewDims[0];
  dims.residual = dims.fusion - 2 * dims.streams;
  return dims;
}

}  // namespace gradkit::ops
