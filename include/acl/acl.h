// gradkit: CANN's AscendCL entry header. Programs written against acl/acl.h compile unchanged.
#ifndef GRADKIT_ACL_ACL_H_
#define GRADKIT_ACL_ACL_H_

#include "acl/acl_base.h"
#include "acl/acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Initialises the runtime. `configPath` may be nullptr; a given path must name a readable file. */
ACL_FUNC_VISIBILITY aclError aclInit(const char* configPath);
/** Finalises the runtime: drains and destroys every stream and context. */
ACL_FUNC_VISIBILITY aclError aclFinalize(void);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACL_ACL_H_
