#include "harness/fill.h"

#include <algorithm>
#include <cmath>

#include "harness/elements.h"

namespace gradkit::cli {

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double SplitMix64::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

double NormalStream::next() {
  if (spare_) {
    spare_ = false;
    return second_;
  }
  constexpr double kTwoPi = 6.28318530717958647692;
  const double u1 = 1.0 - random_.uniform(), u2 = random_.uniform();  // u1 in (0, 1]
  const double radius = std::sqrt(-2.0 * std::log(u1));
  second_ = radius * std::sin(kTwoPi * u2);
  spare_ = true;
  return radius * std::cos(kTwoPi * u2);
}

void fillStorage(const TensorSpec& spec, void* storage, int64_t elements) {
  SplitMix64 random(spec.seed);
  const ValueSpec& values = spec.values;
  const bool integral = !holdsSpecialValues(spec.dtype);
  const double lo = integral ? std::ceil(values.lo) : values.lo;
  const double hi = integral ? std::floor(values.hi) : values.hi;
  const double width = integral ? hi - lo + 1.0 : hi - lo;
  for (int64_t i = 0; i < elements; ++i) {
    double value;
    if (!values.specials.empty() && random.uniform() < values.specialFraction) {
      const auto pick = static_cast<size_t>(random.uniform() * static_cast<double>(values.specials.size()));
      value = values.specials[pick];
    } else if (values.constant) {
      value = values.lo;
    } else {
      const double u = random.uniform();
      value = integral ? std::min(lo + std::floor(u * width), hi) : lo + u * width;
    }
    storeFromDouble(spec.dtype, storage, i, value);
  }
}

}  // namespace gradkit::cli
