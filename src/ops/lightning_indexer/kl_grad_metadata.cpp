// The metadata image of kl_grad_metadata.h: upstream's two AI-CPU algorithms (op_kernel_aicpu arch35 and arch22)
// restated on the checked arguments.
#include "ops/lightning_indexer/kl_grad_metadata.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/int_math.h"
#include "opapi/tensor_copy.h"
#include "ops/lightning_indexer/kl_grad_check.h"
#include "runtime/profile.h"

namespace gradkit::ops {
namespace {

const aclTensor* presentOrNull(const aclTensor* t) { return klMetadataPresent(t) ? t : nullptr; }

/** Query rows of batch b: seqused_q[b], else the TND length, else maxSeqlenQ (upstream's GetS1SeqSize). */
int64_t queryRowsOf(const KlGradMetadataArgs& a, const KlMetadataValues& v, bool tnd, int64_t b) {
  if (!v.usedQ.empty()) return v.usedQ[static_cast<size_t>(b)];
  return klMetadataAllocated(a, v, tnd, true, b);
}

int64_t keyRowsOf(const KlGradMetadataArgs& a, const KlMetadataValues& v, bool tnd, int64_t b) {
  if (!v.usedK.empty()) return v.usedK[static_cast<size_t>(b)];
  return klMetadataAllocated(a, v, tnd, false, b);
}

std::array<int32_t, 64> image950(const KlGradMetadataArgs& a, const KlMetadataValues& v, bool tnd) {
  uint32_t total = 0;
  const int64_t batch = klMetadataQueryBatch(a, tnd).batch;
  for (int64_t b = 0; b < batch; ++b) total += static_cast<uint32_t>(queryRowsOf(a, v, tnd, b));
  const auto cores = static_cast<uint32_t>(rt::aicCores(rt::Soc::Ascend950));
  const uint32_t former = total / cores + (total % cores != 0 ? 1u : 0u);
  std::array<int32_t, 64> image{};
  const uint32_t words[] = {total, former, former - 1u, former * cores - total, std::min(total, cores)};
  for (size_t i = 0; i < 5; ++i) image[i] = static_cast<int32_t>(words[i]);
  return image;
}

/** The arch22 AI-CPU kernel's balanced split of the rows' loads over the cores. */
class A2Split {
 public:
  A2Split(std::vector<int64_t> loads, int64_t cores) : loads_(std::move(loads)), total_(loads_.size()), cores_(cores) {}

  std::vector<int64_t> starts() const {
    std::vector<int64_t> start(static_cast<size_t>(kKlA2MaxCores), total_);
    int64_t active = 0;
    while (active < total_ && loads_[at(active)] <= 0) ++active;
    if (active >= total_) return start;
    const int64_t activeCores = std::min(cores_, total_ - active);
    start[0] = active;
    if (activeCores == 1) return start;
    std::vector<int64_t> prefix(at(total_ + 1), 0);
    for (int64_t i = 0; i < total_; ++i) prefix[at(i + 1)] = prefix[at(i)] + loads_[at(i)];
    const int64_t maxLoad = minMaxLoad(active, activeCores);
    int64_t prev = active;
    for (int64_t core = 1; core < activeCores; ++core) {
      const int64_t remaining = activeCores - core;
      const int64_t minStart = prev + 1;
      int64_t maxStart = total_ - remaining;
      const auto limit =
          std::upper_bound(prefix.begin() + minStart, prefix.begin() + maxStart + 1, prefix[at(prev)] + maxLoad);
      maxStart = std::min<int64_t>(maxStart, (limit - prefix.begin()) - 1);
      int64_t left = minStart, right = maxStart;
      while (left < right) {
        const int64_t mid = left + (right - left) / 2;
        if (canSplit(mid, remaining, maxLoad)) {
          right = mid;
        } else {
          left = mid + 1;
        }
      }
      const int64_t target = prefix[at(prev)] + ceilDiv(prefix[at(total_)] - prefix[at(prev)], remaining + 1);
      const auto found = std::lower_bound(prefix.begin() + left, prefix.begin() + maxStart + 1, target);
      int64_t candidate = std::min<int64_t>(found - prefix.begin(), maxStart);
      if (candidate > left && distance(prefix[at(candidate - 1)], target) <= distance(prefix[at(candidate)], target)) {
        --candidate;
      }
      start[at(core)] = candidate;
      prev = candidate;
    }
    return start;
  }

 private:
  static size_t at(int64_t i) { return static_cast<size_t>(i); }
  static int64_t distance(int64_t x, int64_t y) { return x > y ? x - y : y - x; }

  bool canSplit(int64_t start, int64_t parts, int64_t maxLoad) const {
    if (parts == 0) return start == total_;
    if (parts < 0 || start < 0 || start > total_ || total_ - start < parts) return false;
    int64_t used = 1, current = 0;
    for (int64_t i = start; i < total_; ++i) {
      const int64_t load = loads_[at(i)];
      if (load > maxLoad) return false;
      if (current + load > maxLoad) {
        if (++used > parts) return false;
        current = load;
      } else {
        current += load;
      }
    }
    return used <= parts;
  }

  int64_t minMaxLoad(int64_t start, int64_t parts) const {
    const int64_t sum = std::accumulate(loads_.begin() + start, loads_.end(), int64_t{0});
    int64_t low = std::max(*std::max_element(loads_.begin() + start, loads_.end()), ceilDiv(sum, parts));
    int64_t high = sum;
    while (low < high) {
      const int64_t mid = low + (high - low) / 2;
      if (canSplit(start, parts, mid)) {
        high = mid;
      } else {
        low = mid + 1;
      }
    }
    return low;
  }

  std::vector<int64_t> loads_;
  int64_t total_;
  int64_t cores_;
};

std::array<int32_t, 64> imageA2(const KlGradMetadataArgs& a, const KlMetadataValues& v, bool tnd) {
  const int64_t total = klMetadataQueryRows(a, v, tnd);
  const int64_t cores = std::min({total, rt::aicCores(rt::Soc::Ascend910B), kKlA2MaxCores});
  const int64_t fixedLoad = std::min<int64_t>(256, std::min<int64_t>(a.topk, std::max<int64_t>(64, a.topk / 4)));
  std::vector<int64_t> loads(static_cast<size_t>(total), 0);
  size_t row = 0;
  const int64_t batch = klMetadataQueryBatch(a, tnd).batch;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t s1 = queryRowsOf(a, v, tnd, b), s2 = keyRowsOf(a, v, tnd, b);
    const int64_t residual = v.residual.empty() ? 0 : v.residual[static_cast<size_t>(b)];
    for (int64_t i = 0; i < s1 && row < loads.size(); ++i, ++row) {
      int64_t sparse = s2;  // upstream's GetS2RealSize (C++ division truncates toward zero)
      if (a.maskMode == 3) sparse = (std::max<int64_t>(0, s2 * a.cmpRatio + residual) - s1 + i + 1) / a.cmpRatio;
      const int64_t real = std::max<int64_t>(0, std::min(sparse, a.topk));
      loads[row] = real <= 0 ? 0 : real + fixedLoad;
    }
  }
  std::vector<int64_t> start = A2Split(std::move(loads), cores).starts();
  for (size_t i = 1; i < start.size(); ++i) {
    if (start[i] == 0) start[i] = total;
  }
  std::array<int32_t, 64> image{};
  image[0] = static_cast<int32_t>(cores);
  image[1] = static_cast<int32_t>(total);
  image[2] = static_cast<int32_t>(ceilDiv(total, cores));
  for (size_t i = 0; i < start.size(); ++i) image[8 + i] = static_cast<int32_t>(start[i]);
  return image;
}

}  // namespace

bool klMetadataPresent(const aclTensor* t) { return t != nullptr && t->dim() > 0 && t->viewDims[0] > 0; }

KlMetadataBatch klMetadataQueryBatch(const KlGradMetadataArgs& a, bool tnd) {
  if (klMetadataPresent(a.seqUsedQ)) return {a.seqUsedQ->viewDims[0], "seqUsedQOptional"};
  if (tnd && klMetadataPresent(a.cuSeqLensQ)) return {a.cuSeqLensQ->viewDims[0] - 1, "cuSeqLensQOptional"};
  return {a.batchSize, "batchSize"};
}

KlMetadataBatch klMetadataKeyBatch(const KlGradMetadataArgs& a, bool tnd) {
  if (klMetadataPresent(a.seqUsedK)) return {a.seqUsedK->viewDims[0], "seqUsedKOptional"};
  if (tnd && klMetadataPresent(a.cuSeqLensK)) return {a.cuSeqLensK->viewDims[0] - 1, "cuSeqLensKOptional"};
  return {a.batchSize, "batchSize"};
}

KlMetadataValues klMetadataValues(const KlGradMetadataArgs& a, bool tnd) {
  KlMetadataValues v;
  if (tnd) {
    v.cuQ = readInt32Values(presentOrNull(a.cuSeqLensQ));
    v.cuK = readInt32Values(presentOrNull(a.cuSeqLensK));
  }
  v.usedQ = readInt32Values(presentOrNull(a.seqUsedQ));
  v.usedK = readInt32Values(presentOrNull(a.seqUsedK));
  v.residual = readInt32Values(presentOrNull(a.cmpResidualK));
  return v;
}

int64_t klMetadataAllocated(const KlGradMetadataArgs& a, const KlMetadataValues& v, bool tnd, bool query, int64_t b) {
  const std::vector<int64_t>& cu = query ? v.cuQ : v.cuK;
  if (!tnd) return query ? a.maxSeqlenQ : a.maxSeqlenK;
  return cu[static_cast<size_t>(b + 1)] - cu[static_cast<size_t>(b)];
}

int64_t klMetadataQueryRows(const KlGradMetadataArgs& a, const KlMetadataValues& v, bool tnd) {
  const int64_t batch = klMetadataQueryBatch(a, tnd).batch;
  int64_t rows = 0;
  for (int64_t b = 0; b < batch; ++b) rows += queryRowsOf(a, v, tnd, b);
  return rows;
}

std::array<int32_t, 64> klMetadataImage(const KlGradMetadataArgs& a) {
  const bool tnd = *klLayoutFromName(a.layoutQ) == KlLayout::TND;
  const KlMetadataValues values = klMetadataValues(a, tnd);
  return klProfileIs950() ? image950(a, values, tnd) : imageA2(a, values, tnd);
}

KlGradMetadataPlan planKlGradMetadata(const KlGradMetadataArgs& args) {
  KlGradMetadataPlan plan;
  plan.metadata = StagedTensor::planUnlessDense(*args.metadata, "metadata staging", plan.workspace);
  plan.image = klMetadataImage(args);
  return plan;
}

aclnnStatus KlGradMetadataPlan::run(void* memory) const {
  std::memcpy(metadata.target(memory), image.data(), sizeof(int32_t) * image.size());
  metadata.writeBack(memory);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
