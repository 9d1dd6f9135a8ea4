// libFuzzer target: the lightning indexer (tests/fuzz/README.md). The first byte picks aclnnLightningIndexerV2,
// aclnnLightningIndexerV2Metadata, aclnnSparseLightningIndexerKLLossGrad or
// aclnnSparseLightningIndexerKLLossGradMetadata; then one problem is decoded for all four: the SoC, q's layout (BSND /
// TND), k's (as q, PA_BBND for the indexer, or the other one), the dtype, B, N1, D, the per-batch query and key
// lengths, cmpRatio, maskMode, topk, returnValue, maxSeqlenQ, the block size, whether outputIdxOffset is given; every
// tensor then gets fuzz_common.h's hostile descriptor and the INT32 ones their contents (prefix sums, used lengths,
// residuals, block tables, offsets, the KL gradient's index lists with -1, duplicates and out-of-range entries, each
// sometimes hostile), the float ones small finite values (sometimes a NaN / -Inf, sometimes raw bytes). Oracle:
// fuzz::finish, a documented status with a message, the nulls and profiles that must fail, and after a run with
// finite inputs: indices >= -1 and a slot's score -inf exactly where its index is -1 (no offsets), finite dq / dk /
// dw / softmaxOut.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "aclnnop/aclnn_lightning_indexer_v2.h"
#include "aclnnop/aclnn_lightning_indexer_v2_metadata.h"
#include "aclnnop/aclnn_sparse_lightning_indexer_kl_loss_grad.h"
#include "aclnnop/aclnn_sparse_lightning_indexer_kl_loss_grad_metadata.h"
#include "fuzz_sparse_common.h"

namespace {

using fuzz::sparse::Arg;
using gradkit::rt::Soc;

enum class Kv { Bsnd, Tnd, Paged };

struct Problem {
  Soc soc = Soc::Ascend950;
  bool tndQ = false, offsets = false;
  Kv kv = Kv::Bsnd;
  int dtype = ACL_BF16;
  int64_t batch = 1, n1 = 1, d = 128, cr = 4, maskMode = 3, topk = 2, returnValue = 1, blockSize = 16;
  std::vector<int64_t> s1, s2;  // per batch: query rows, compressed keys
  static int64_t sum(const std::vector<int64_t>& v) {
    int64_t s = 0;
    for (int64_t x : v) s += x;
    return s;
  }
  static int64_t max(const std::vector<int64_t>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }
  int64_t tokens() const { return tndQ ? sum(s1) : batch * max(s1); }
  std::vector<int64_t> lead() const {  // q's leading dims
    return tndQ ? std::vector<int64_t>{tokens()} : std::vector<int64_t>{batch, max(s1)};
  }
  std::vector<int64_t> with(std::initializer_list<int64_t> tail) const {
    std::vector<int64_t> s = lead();
    s.insert(s.end(), tail.begin(), tail.end());
    return s;
  }
};

template <size_t N>
int64_t pick(fuzz::Input& in, uint8_t common, const int64_t (&usual)[N], std::initializer_list<int64_t> odd) {
  const uint8_t m = in.u8();
  if (m < common) return usual[m % N];
  return odd.begin()[m % odd.size()];
}

Problem decode(fuzz::Input& in, bool indexer) {
  Problem p;
  p.soc = fuzz::sparse::pickSoc(in);
  p.tndQ = in.u8() % 2 == 1;
  const uint8_t kvm = in.u8();
  const Kv same = p.tndQ ? Kv::Tnd : Kv::Bsnd, other = p.tndQ ? Kv::Bsnd : Kv::Tnd;
  p.kv = kvm < 160 ? same : kvm < 235 ? (indexer ? Kv::Paged : same) : other;
  p.dtype = in.u8() % 2 ? ACL_FLOAT16 : ACL_BF16;
  static constexpr int64_t kBatches[] = {1, 2, 3};
  p.batch = pick(in, 230, kBatches, {0, 4, 1});
  static constexpr int64_t kHeads[] = {1, 2, 3, 4, 8, 16, 1, 2};
  p.n1 = pick(in, 220, kHeads, {64, 65, 0, 128, 129, 32});
  static constexpr int64_t kDims[] = {128};
  p.d = pick(in, 240, kDims, {127, 0, 256, 512, 129});
  static constexpr int64_t kRatios[] = {4, 1, 2, 3, 7, 128};
  p.cr = pick(in, 215, kRatios, {0, 129, -1, 127, 16});
  static constexpr int64_t kModes[] = {3, 0, 3};
  p.maskMode = pick(in, 235, kModes, {1, -1, 2, 4});
  static constexpr int64_t kTopk[] = {1, 2, 3, 4, 5, 8, 16, 2};
  p.topk = pick(in, 225, kTopk, {0, 8193, 2048, 2049, 3072, -1, 512});
  static constexpr int64_t kValues[] = {1, 0};
  p.returnValue = pick(in, 240, kValues, {2, -1});
  p.offsets = in.oneIn(4);
  static constexpr int64_t kBlocks[] = {16, 32, 16};
  p.blockSize = pick(in, 225, kBlocks, {8, 0, 1024, 1040, 17, 1});
  for (int64_t b = 0; b < p.batch; ++b) {
    p.s1.push_back(in.u8() % 5);
    p.s2.push_back(in.u8() % 10);
  }
  if (p.batch > 0 && !in.oneIn(8)) {  // mostly q and k with rows
    if (p.tokens() == 0) p.s1[0] = 1;
    if (Problem::sum(p.s2) == 0) p.s2[0] = 3;
  }
  return p;
}

std::vector<int64_t> blockTable(fuzz::Input& in, int64_t batch, int64_t columns, int64_t blocks) {
  std::vector<int64_t> ids(static_cast<size_t>(std::max<int64_t>(0, batch * columns)));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = blocks > 0 ? static_cast<int64_t>(i) % blocks : 0;
  for (size_t i = ids.size(); i > 1; --i) std::swap(ids[i - 1], ids[in.u8() % i]);
  if (!ids.empty() && in.oneIn(8)) ids[in.u8() % ids.size()] = fuzz::sparse::hostileInt32(in, blocks);
  return ids;
}

bool presence(fuzz::Input& in, bool wanted) { return in.oneIn(16) ? !wanted : wanted; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  fuzz::World world;
  const int op = in.u8() % 4;  // 0 LightningIndexerV2, 1 its metadata, 2 KL loss grad, 3 its metadata
  const Problem p = decode(in, op == 0);
  gradkit::rt::setSocOverride(p.soc);
  const bool paged = p.kv == Kv::Paged, tndK = p.kv == Kv::Tnd;
  const int64_t bs = p.blockSize > 0 ? p.blockSize : 1;
  const int64_t columns = std::max<int64_t>(1, (Problem::max(p.s2) + bs - 1) / bs);
  const int64_t blocks = p.batch * columns + in.u8() % 2;
  const int64_t t1 = p.tokens(), k = std::max<int64_t>(0, p.topk);
  const std::vector<int64_t> kShape = paged  ? std::vector<int64_t>{blocks, p.blockSize, 1, p.d}
                                      : tndK ? std::vector<int64_t>{Problem::sum(p.s2), 1, p.d}
                                             : std::vector<int64_t>{p.batch, Problem::max(p.s2), 1, p.d};
  const bool main = op == 0 || op == 2;

  Arg q, key, w, indices, l1Norm;
  if (main) {
    q = fuzz::sparse::make(world, in, p.dtype, p.with({p.n1, p.d}));
    key = fuzz::sparse::make(world, in, p.dtype, kShape);
    w = fuzz::sparse::make(world, in, ACL_FLOAT, p.with({p.n1}));
  }
  if (op == 2) {
    indices = fuzz::sparse::make(world, in, ACL_INT32, p.with({1, k}));
    l1Norm = fuzz::sparse::make(world, in, ACL_FLOAT, p.with({1, k}));
  }
  const Arg cuQ = fuzz::sparse::make(world, in, ACL_INT32, {p.batch + 1}, presence(in, p.tndQ));
  const Arg cuK = fuzz::sparse::make(world, in, ACL_INT32, {p.batch + 1}, presence(in, tndK));
  const Arg seqQ = fuzz::sparse::make(world, in, ACL_INT32, {p.batch}, in.oneIn(3));
  const Arg seqK = fuzz::sparse::make(world, in, ACL_INT32, {p.batch}, presence(in, paged || in.oneIn(3)));
  const Arg residual = fuzz::sparse::make(world, in, ACL_INT32, {p.batch}, presence(in, p.maskMode == 3 && p.cr != 1));
  const Arg table = fuzz::sparse::make(world, in, ACL_INT32, {p.batch, columns}, op == 0 && presence(in, paged));
  const Arg offsets = fuzz::sparse::make(world, in, ACL_INT32, p.with({1}), op == 0 && p.offsets);
  const Arg metadata =
      fuzz::sparse::make(world, in, ACL_INT32, {op >= 2 ? 64 : 1024}, !main || presence(in, p.soc == Soc::Ascend950));
  Arg outIdx, outValues, dq, dk, dw, softmaxOut;
  if (op == 0) {
    outIdx = fuzz::sparse::make(world, in, ACL_INT32, p.with({1, k}));
    outValues = fuzz::sparse::make(world, in, ACL_FLOAT, p.returnValue == 0 ? std::vector<int64_t>{0} : p.with({1, k}));
  } else if (op == 2) {
    dq = fuzz::sparse::make(world, in, p.dtype, p.with({p.n1, p.d}));
    dk = fuzz::sparse::make(world, in, p.dtype, kShape);
    dw = fuzz::sparse::make(world, in, ACL_FLOAT, p.with({p.n1}));
    softmaxOut = fuzz::sparse::make(world, in, ACL_FLOAT, p.with({1, k}));
  }

  for (const Arg* a : {&q, &key, &w, &l1Norm}) fuzz::sparse::fillFloat(world, in, *a);
  fuzz::sparse::writeInt32(world, cuQ, fuzz::sparse::prefixSums(in, p.s1));
  fuzz::sparse::writeInt32(world, cuK, fuzz::sparse::prefixSums(in, p.s2));
  fuzz::sparse::writeInt32(world, seqQ, fuzz::sparse::usedLengths(in, p.s1));
  fuzz::sparse::writeInt32(world, seqK, fuzz::sparse::usedLengths(in, p.s2));
  {
    std::vector<int64_t> res, offs, lists;
    for (int64_t b = 0; b < p.batch; ++b) {
      res.push_back(fuzz::sparse::hostileInt32(in, in.u8() % std::max<int64_t>(1, p.cr)));
    }
    for (int64_t i = 0; i < std::min<int64_t>(t1, 16); ++i) offs.push_back(fuzz::sparse::hostileInt32(in, in.u8()));
    for (int64_t i = 0; i < std::min<int64_t>(t1 * k, 96); ++i) {
      lists.push_back(fuzz::sparse::indexEntry(in, Problem::max(p.s2)));
    }
    fuzz::sparse::writeInt32(world, residual, res);
    fuzz::sparse::writeInt32(world, offsets, offs);
    fuzz::sparse::writeInt32(world, indices, lists);
  }
  fuzz::sparse::writeInt32(world, table, blockTable(in, p.batch, columns, blocks));

  std::vector<std::vector<char>> texts;
  char* layoutQ = fuzz::sparse::layoutText(in, p.tndQ ? "TND" : "BSND", texts);
  char* layoutK = fuzz::sparse::layoutText(in, paged ? "PA_BBND" : tndK ? "TND" : "BSND", texts);
  const int64_t cr = fuzz::sparse::hostileAttr(in, p.cr);
  const int64_t maxQ = fuzz::sparse::hostileAttr(in, in.oneIn(2) ? -1 : Problem::max(p.s1));
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  const uint8_t nulls = in.u8();
  const bool nullSize = nulls == 0xF1, nullExecutor = nulls == 0xF2;
  uint64_t* sizeArg = nullSize ? nullptr : &workspaceSize;
  aclOpExecutor** executorArg = nullExecutor ? nullptr : &executor;
  bool mustFail = nullSize || nullExecutor || layoutQ == nullptr || layoutK == nullptr;
  std::vector<fuzz::View> outputs;
  aclnnStatus status;
  fuzz::RunFn run;
  world.snapshot();
  if (op == 0) {
    mustFail = mustFail || q.t == nullptr || key.t == nullptr || w.t == nullptr || outIdx.t == nullptr ||
               outValues.t == nullptr || (p.soc == Soc::Ascend950 && metadata.t == nullptr) || cr < 1 || cr > 128 ||
               (p.returnValue != 0 && p.returnValue != 1);
    if (outIdx.t != nullptr) outputs.push_back(outIdx.v);
    if (outValues.t != nullptr && p.returnValue == 1) outputs.push_back(outValues.v);
    status = aclnnLightningIndexerV2GetWorkspaceSize(q.t, key.t, w.t, cuQ.t, cuK.t, seqQ.t, seqK.t, residual.t, table.t,
                                                     offsets.t, metadata.t, p.topk, maxQ, layoutQ, layoutK, p.maskMode,
                                                     cr, p.returnValue, outIdx.t, outValues.t, sizeArg, executorArg);
    run = aclnnLightningIndexerV2;
  } else if (op == 2) {
    mustFail = mustFail || q.t == nullptr || key.t == nullptr || w.t == nullptr || indices.t == nullptr ||
               l1Norm.t == nullptr || dq.t == nullptr || dk.t == nullptr || dw.t == nullptr ||
               softmaxOut.t == nullptr || (p.soc == Soc::Ascend950 && metadata.t == nullptr) || cr < 1 || cr > 128;
    for (const Arg* a : {&dq, &dk, &dw, &softmaxOut}) {
      if (a->t != nullptr) outputs.push_back(a->v);
    }
    status = aclnnSparseLightningIndexerKLLossGradGetWorkspaceSize(
        q.t, key.t, w.t, indices.t, l1Norm.t, cuQ.t, cuK.t, seqQ.t, seqK.t, residual.t, metadata.t, layoutQ, layoutK,
        p.maskMode, cr, dq.t, dk.t, dw.t, softmaxOut.t, sizeArg, executorArg);
    run = aclnnSparseLightningIndexerKLLossGrad;
  } else {
    const int64_t n1 = fuzz::sparse::hostileAttr(in, p.n1), nk = fuzz::sparse::hostileAttr(in, 1);
    const int64_t d = fuzz::sparse::hostileAttr(in, p.d), topk = fuzz::sparse::hostileAttr(in, p.topk);
    const int64_t batch = fuzz::sparse::hostileAttr(in, p.batch),
                  maxK = fuzz::sparse::hostileAttr(in, Problem::max(p.s2));
    mustFail = mustFail || metadata.t == nullptr;
    if (metadata.t != nullptr) outputs.push_back(metadata.v);
    if (op == 1) {
      status = aclnnLightningIndexerV2MetadataGetWorkspaceSize(cuQ.t, cuK.t, seqQ.t, seqK.t, residual.t, n1, nk, d,
                                                               topk, batch, maxQ, maxK, layoutQ, layoutK, p.maskMode,
                                                               cr, metadata.t, sizeArg, executorArg);
      run = aclnnLightningIndexerV2Metadata;
    } else {
      status = aclnnSparseLightningIndexerKLLossGradMetadataGetWorkspaceSize(
          cuQ.t, cuK.t, seqQ.t, seqK.t, residual.t, batch, maxQ, maxK, n1, nk, d, topk, layoutQ, layoutK, p.maskMode,
          cr, metadata.t, sizeArg, executorArg);
      run = aclnnSparseLightningIndexerKLLossGradMetadata;
    }
  }
  fuzz::sparse::checkStatus(status);
  fuzz::finish(world, status, workspaceSize, executor, run, outputs, mustFail);
  if (!fuzz::sparse::ran(world, status, workspaceSize) || (op != 0 && op != 2)) return 0;
  bool finiteIn = true;
  for (const Arg* a : {&q, &key, &w, &l1Norm}) finiteIn = finiteIn && fuzz::sparse::allFinite(world, *a);
  if (op == 0) {
    const std::vector<int64_t> idx = fuzz::sparse::readInt32(world, outIdx);
    for (int64_t v : idx) FUZZ_REQUIRE(v >= -1, "sparseIndices holds an index below -1");
    if (finiteIn && p.returnValue == 1) {
      FUZZ_REQUIRE(fuzz::sparse::allFinite(world, outValues, true), "sparseValues NaN or +Inf for finite inputs");
      if (!p.offsets && outValues.v.numel == outIdx.v.numel && fuzz::sparse::writable(world, outValues)) {
        std::vector<double> values;
        const uint8_t* base = world.buffers[outValues.v.buffer].data;
        fuzz::sparse::forEachElement(
            outValues.v, [&](size_t at) { values.push_back(fuzz::sparse::readFloat(base + at, ACL_FLOAT)); });
        for (size_t i = 0; i < idx.size() && i < values.size(); ++i) {
          FUZZ_REQUIRE((idx[i] == -1) == (std::isinf(values[i]) && values[i] < 0),
                       "a slot's score is -inf where its index is not -1 (or the reverse)");
        }
      }
    }
  } else if (finiteIn) {
    for (const Arg* a : {&dq, &dk, &dw, &softmaxOut}) {
      FUZZ_REQUIRE(fuzz::sparse::allFinite(world, *a), "a KL loss gradient output is not finite for finite inputs");
    }
  }
  return 0;
}
