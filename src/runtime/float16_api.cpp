// acl_base.h's fp16 helpers, on the library's one fp16 conversion (gradkit/float_convert.h).
#include "acl/acl_base.h"
#include "gradkit/float_convert.h"

extern "C" aclFloat16 aclFloatToFloat16(float value) { return gradkit::floatToHalf(value); }

extern "C" float aclFloat16ToFloat(aclFloat16 value) { return gradkit::halfToFloat(value); }
