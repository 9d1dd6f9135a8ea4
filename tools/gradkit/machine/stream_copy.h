// A copy with non-temporal stores: the fastest way this machine moves a large buffer, used as the
// bandwidth limit of the roofline (a copy with ordinary stores also reads the destination lines first).
#pragma once

#include <cstddef>

namespace gradkit {

/** Copies `bytes` (a multiple of 64) from `src` to `dst`, both 64-byte aligned, bypassing the caches. */
void streamCopy(const void* src, void* dst, size_t bytes);

}  // namespace gradkit
