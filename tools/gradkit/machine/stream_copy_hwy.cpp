// streamCopy, compiled per Highway target and dispatched at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "machine/stream_copy_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "machine/stream_copy.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void StreamCopyBytes(const uint8_t* src, uint8_t* dst, size_t bytes) {
  const hn::ScalableTag<uint8_t> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= bytes; i += lanes) hn::Stream(hn::Load(d, src + i), d, dst + i);
  for (; i < bytes; ++i) dst[i] = src[i];  // vectors wider than 64 bytes only
  hwy::FlushStream();
}

}  // namespace gradkit::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gradkit {

HWY_EXPORT(StreamCopyBytes);

void streamCopy(const void* src, void* dst, size_t bytes) {
  HWY_DYNAMIC_DISPATCH(StreamCopyBytes)(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), bytes);
}

}  // namespace gradkit
#endif  // HWY_ONCE
