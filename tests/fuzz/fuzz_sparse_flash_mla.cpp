// libFuzzer target: aclnnSparseFlashMla and its companion metadata operators (tests/fuzz/README.md). The first byte
// picks aclnnSparseFlashMla, aclnnSparseFlashMlaMetadata, aclnnSparseFlashMlaGradMetadata or
// aclnnSparseFlashMlaSoftmaxL1NormMetadata; then one problem is decoded for all four: the SoC, q's layout (BSND /
// TND), the KV's (as q, PA_BBND, or the other one), B, N1, D, the per-batch query / ori / compressed lengths,
// cmpRatio, the mask modes and windows, listed (sparse) ori and cmp indices with their widths, topkValueMode,
// returnSoftmaxLse, the softmax scale, the block size; every tensor then gets fuzz_common.h's hostile descriptor and
// the INT32 ones their contents (prefix sums, used lengths, residuals, top-k lengths, block tables, index lists with
// -1, duplicates and out-of-range entries, each sometimes hostile), the float ones small finite values (sometimes a
// NaN / -Inf, sometimes raw bytes). Oracle: fuzz::finish (no crash, no sanitizer report, no write outside the
// outputs, a successful first phase runs), a documented status with a message, the nulls and attributes that must
// fail, and after a run with finite inputs a finite attnOut / softmaxLse.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "aclnnop/aclnn_sparse_flash_mla.h"
#include "aclnnop/aclnn_sparse_flash_mla_grad.h"
#include "aclnnop/aclnn_sparse_flash_mla_grad_metadata.h"
#include "aclnnop/aclnn_sparse_flash_mla_metadata.h"
#include "aclnnop/aclnn_sparse_flash_mla_softmax_l1_norm_metadata.h"
#include "fuzz_sparse_common.h"

namespace {

using fuzz::sparse::Arg;
using gradkit::rt::Soc;

enum class Kv { Bsnd, Tnd, Paged };

struct Problem {
  Soc soc = Soc::Ascend950;
  bool tndQ = false;
  Kv kv = Kv::Bsnd;
  int dtype = ACL_BF16;
  int64_t batch = 1, n1 = 1, d = 512, cr = 4, oriMode = 3, cmpMode = 3, winL = -1, winR = -1, k = 0, k2 = 0;
  int64_t blockSize = 1, topkValueMode = 1;
  bool hasCmp = true, oriListed = false, cmpListed = false, returnLse = true;
  double scale = 0.044194173824159216;
  std::vector<int64_t> s1, s2, c;  // per batch: query rows, ori rows, compressed rows
  int64_t sum(const std::vector<int64_t>& v) const {
    int64_t s = 0;
    for (int64_t x : v) s += x;
    return s;
  }
  int64_t max(const std::vector<int64_t>& v) const { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }
  int64_t tokens() const { return tndQ ? sum(s1) : batch * max(s1); }
};

template <size_t N>
int64_t pick(fuzz::Input& in, uint8_t common, const int64_t (&usual)[N], std::initializer_list<int64_t> odd) {
  const uint8_t m = in.u8();
  if (m < common) return usual[m % N];
  return odd.begin()[m % odd.size()];
}

int64_t pickWindow(fuzz::Input& in, bool band) {
  const uint8_t m = in.u8();
  if (m < 210) {
    static constexpr int64_t kBand[] = {-1, 0, 1, 2, 3, 127};
    return band ? kBand[m % 6] : -1;
  }
  static constexpr int64_t kOdd[] = {
      -2, std::numeric_limits<int32_t>::max(), int64_t{1} << 31, std::numeric_limits<int64_t>::min(), 5, 0};
  return kOdd[m % 6];
}

Problem decode(fuzz::Input& in, int op) {
  Problem p;
  p.soc = fuzz::sparse::pickSoc(in);
  p.tndQ = in.u8() % 2 == 1;
  const uint8_t kvm = in.u8();
  const Kv same = p.tndQ ? Kv::Tnd : Kv::Bsnd, other = p.tndQ ? Kv::Bsnd : Kv::Tnd;
  // PA_BBND: the forward and its metadata only (the gradient's and the L1 metadata take BSND / TND).
  p.kv = kvm < 150 ? same : kvm < 235 ? (op <= 1 ? Kv::Paged : same) : other;
  p.dtype = in.u8() % 2 ? ACL_FLOAT16 : ACL_BF16;
  static constexpr int64_t kBatches[] = {1, 2, 3};
  p.batch = pick(in, 230, kBatches, {0, 4, 1});
  static constexpr int64_t kHeads[] = {1, 2, 3, 4, 8, 1, 2, 16};
  p.n1 = pick(in, 220, kHeads, {64, 128, 0, 129, 6, 32});
  static constexpr int64_t kDims[] = {512};
  p.d = pick(in, 240, kDims, {511, 128, 0, 1024, 513});
  static constexpr int64_t kRatios[] = {4, 1, 2, 3, 128, 8};
  p.cr = pick(in, 210, kRatios, {0, 129, -1, 127, 16, 4});
  p.hasCmp = in.u8() % 4 != 3;
  static constexpr int64_t kCmpModes[] = {3, 3, 0};
  p.cmpMode = pick(in, 230, kCmpModes, {1, -1, 2, 4});
  static constexpr int64_t kOriModes[] = {4, 3, 0, 4};
  p.oriMode = pick(in, 230, kOriModes, {1, 2, -1, 5});
  p.winL = pickWindow(in, p.oriMode == 4);
  p.winR = pickWindow(in, p.oriMode == 4);
  p.oriListed = in.oneIn(4);
  p.cmpListed = p.hasCmp && in.u8() % 2 == 0;
  static constexpr int64_t kWidths[] = {1, 2, 3, 4, 5, 6, 8};
  p.k = p.oriListed ? pick(in, 230, kWidths, {0, 8193, 130}) : 0;
  p.k2 = p.cmpListed ? pick(in, 230, kWidths, {0, 8193, 130}) : 0;
  static constexpr int64_t kModes[] = {1};
  p.topkValueMode = pick(in, 245, kModes, {0, 2, -1});
  p.returnLse = in.u8() % 3 != 2;
  const uint8_t sm = in.u8();
  if (sm >= 220) {
    static constexpr double kScales[] = {
        0.0, -1.0, 1e3, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(), 1e30, 1.0};
    p.scale = kScales[sm % 7];
  }
  static constexpr int64_t kBlocks[] = {1, 2, 4, 16, 3};
  p.blockSize = pick(in, 220, kBlocks, {0, 1024, 1025, 8});
  for (int64_t b = 0; b < p.batch; ++b) {
    p.s1.push_back(in.u8() % 5);
    p.s2.push_back(in.u8() % 10);
    p.c.push_back(in.u8() % 5);
  }
  if (p.tokens() == 0 && p.batch > 0 && !in.oneIn(8)) p.s1[0] = 1;  // mostly a q with rows
  return p;
}

/** The per-token shape [B, S1, 1(, K)] / [T1, 1(, K)]. */
std::vector<int64_t> perToken(const Problem& p, int64_t k) {
  std::vector<int64_t> s = p.tndQ ? std::vector<int64_t>{p.tokens(), 1} : std::vector<int64_t>{p.batch, p.max(p.s1), 1};
  if (k >= 0) s.push_back(k);
  return s;
}

/** The KV of `rows` per batch in the KV layout; paged: `columns` per batch over `blocks`. */
std::vector<int64_t> kvShape(const Problem& p, const std::vector<int64_t>& rows, int64_t blocks) {
  if (p.kv == Kv::Paged) return {blocks, p.blockSize, 1, p.d};
  if (p.kv == Kv::Tnd) return {p.sum(rows), 1, p.d};
  return {p.batch, p.max(rows), 1, p.d};
}

int64_t columnsFor(const Problem& p, const std::vector<int64_t>& rows) {
  const int64_t bs = p.blockSize > 0 ? p.blockSize : 1;
  return std::max<int64_t>(1, (p.max(rows) + bs - 1) / bs);
}

/** A block table: a shuffled permutation of the pool's ids, one entry sometimes hostile. */
std::vector<int64_t> blockTable(fuzz::Input& in, int64_t batch, int64_t columns, int64_t blocks) {
  std::vector<int64_t> ids(static_cast<size_t>(std::max<int64_t>(0, batch * columns)));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = blocks > 0 ? static_cast<int64_t>(i) % blocks : 0;
  for (size_t i = ids.size(); i > 1; --i) std::swap(ids[i - 1], ids[in.u8() % i]);
  if (!ids.empty() && in.oneIn(8)) {
    const size_t at = in.u8() % ids.size();
    ids[at] = fuzz::sparse::hostileInt32(in, blocks);
  }
  return ids;
}

std::vector<int64_t> indexLists(fuzz::Input& in, int64_t count, int64_t visible) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < std::min<int64_t>(count, 96); ++i) v.push_back(fuzz::sparse::indexEntry(in, visible));
  return v;
}

/** Present mostly as the rule wants, sometimes the other way. */
bool presence(fuzz::Input& in, bool wanted) { return in.oneIn(16) ? !wanted : wanted; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  fuzz::World world;
  const int op = in.u8() % 5;  // 0 forward, 1 metadata, 2 grad metadata, 3 softmax-L1-norm metadata, 4 grad
  const Problem p = decode(in, op);
  gradkit::rt::setSocOverride(p.soc);
  const bool paged = p.kv == Kv::Paged, tndKv = p.kv == Kv::Tnd;
  const int64_t colsOri = columnsFor(p, p.s2), colsCmp = columnsFor(p, p.c);
  const int64_t blocksOri = p.batch * colsOri + in.u8() % 2, blocksCmp = p.batch * colsCmp + in.u8() % 2;
  const int64_t t1 = p.tokens();

  // The tensors, in the forward's argument order.
  Arg q, oriKv, cmpKv, attnOut, sinks, dOut, out, gradLse;
  const bool main = op == 0 || op == 4;
  const std::vector<int64_t> qShape =
      p.tndQ ? std::vector<int64_t>{t1, p.n1, p.d} : std::vector<int64_t>{p.batch, p.max(p.s1), p.n1, p.d};
  const std::vector<int64_t> lseShape =
      p.tndQ ? std::vector<int64_t>{1, t1, p.n1} : std::vector<int64_t>{p.batch, 1, p.max(p.s1), p.n1};
  if (main) {
    q = fuzz::sparse::make(world, in, p.dtype, qShape);
    oriKv = fuzz::sparse::make(world, in, p.dtype, kvShape(p, p.s2, blocksOri));
    cmpKv = fuzz::sparse::make(world, in, p.dtype, kvShape(p, p.c, blocksCmp), p.hasCmp);
    attnOut = fuzz::sparse::make(world, in, p.dtype, qShape);  // the gradient's dQueryOut
    sinks = fuzz::sparse::make(world, in, ACL_FLOAT, {p.n1}, op == 0 || !in.oneIn(4));
  }
  if (op == 4) {
    dOut = fuzz::sparse::make(world, in, p.dtype, qShape);
    out = fuzz::sparse::make(world, in, p.dtype, qShape);
    gradLse = fuzz::sparse::make(world, in, ACL_FLOAT, lseShape);
  }
  const Arg oriIdx = fuzz::sparse::make(world, in, ACL_INT32, perToken(p, p.k), main && p.oriListed);
  const Arg cmpIdx = fuzz::sparse::make(world, in, ACL_INT32, perToken(p, p.k2), main && p.cmpListed);
  const Arg oriTable = fuzz::sparse::make(world, in, ACL_INT32, {p.batch, colsOri}, op == 0 && paged);
  const Arg cmpTable = fuzz::sparse::make(world, in, ACL_INT32, {p.batch, colsCmp}, op == 0 && paged && p.hasCmp);
  const Arg cuQ = fuzz::sparse::make(world, in, ACL_INT32, {p.batch + 1}, presence(in, p.tndQ));
  const Arg cuOri = fuzz::sparse::make(world, in, ACL_INT32, {p.batch + 1}, op != 3 && presence(in, tndKv));
  const Arg cuCmp = fuzz::sparse::make(world, in, ACL_INT32, {p.batch + 1}, presence(in, tndKv && p.hasCmp));
  const Arg seqQ = fuzz::sparse::make(world, in, ACL_INT32, {p.batch}, in.oneIn(3));
  const Arg seqOri = fuzz::sparse::make(world, in, ACL_INT32, {p.batch}, op != 3 && presence(in, paged || in.oneIn(3)));
  const Arg seqCmp =
      fuzz::sparse::make(world, in, ACL_INT32, {p.batch}, presence(in, p.hasCmp && (paged || in.oneIn(3))));
  const Arg residual =
      fuzz::sparse::make(world, in, ACL_INT32, {p.batch}, presence(in, p.hasCmp && p.cmpMode == 3 && p.cr > 1));
  const Arg oriLen =
      fuzz::sparse::make(world, in, ACL_INT32, perToken(p, -1), op != 3 && presence(in, p.oriListed && p.oriMode == 0));
  const Arg cmpLen =
      fuzz::sparse::make(world, in, ACL_INT32, perToken(p, -1), presence(in, p.cmpListed && p.cmpMode == 0));
  const Arg metadata = fuzz::sparse::make(world, in, ACL_INT32, {op == 3 ? 64 : 1024});
  Arg lse, dOriKv, dCmpKv, dSinks, oriL1, cmpL1;
  if (op == 0) {
    if (p.returnLse) {
      lse = fuzz::sparse::make(world, in, ACL_FLOAT, lseShape);
    } else {
      lse = fuzz::sparse::make(world, in, ACL_FLOAT, {1}, !in.oneIn(3));  // a placeholder, or null
    }
  } else if (op == 4) {
    dOriKv = fuzz::sparse::make(world, in, p.dtype, kvShape(p, p.s2, blocksOri), !in.oneIn(4));
    dCmpKv = fuzz::sparse::make(world, in, p.dtype, kvShape(p, p.c, blocksCmp), presence(in, p.hasCmp));
    dSinks = fuzz::sparse::make(world, in, ACL_FLOAT, {p.n1}, presence(in, sinks.t != nullptr));
    oriL1 = fuzz::sparse::make(world, in, ACL_FLOAT, perToken(p, p.k), p.oriListed && !in.oneIn(4));
    cmpL1 = fuzz::sparse::make(world, in, ACL_FLOAT, perToken(p, p.k2), presence(in, p.cmpListed));
  }

  // Contents: float inputs, then the INT32 values as decoded (an alias may overwrite an earlier tensor's bytes).
  for (const Arg* a : {&q, &oriKv, &cmpKv, &sinks, &dOut, &out, &gradLse}) fuzz::sparse::fillFloat(world, in, *a);
  fuzz::sparse::writeInt32(world, cuQ, fuzz::sparse::prefixSums(in, p.s1));
  fuzz::sparse::writeInt32(world, cuOri, fuzz::sparse::prefixSums(in, p.s2));
  fuzz::sparse::writeInt32(world, cuCmp, fuzz::sparse::prefixSums(in, p.c));
  fuzz::sparse::writeInt32(world, seqQ, fuzz::sparse::usedLengths(in, p.s1));
  fuzz::sparse::writeInt32(world, seqOri, fuzz::sparse::usedLengths(in, p.s2));
  fuzz::sparse::writeInt32(world, seqCmp, fuzz::sparse::usedLengths(in, p.c));
  {
    std::vector<int64_t> res;
    for (int64_t b = 0; b < p.batch; ++b)
      res.push_back(fuzz::sparse::hostileInt32(in, in.u8() % std::max<int64_t>(1, p.cr)));
    fuzz::sparse::writeInt32(world, residual, res);
  }
  for (const auto& [len, width] : {std::pair{&oriLen, p.k}, std::pair{&cmpLen, p.k2}}) {
    std::vector<int64_t> lengths;
    for (int64_t i = 0; i < std::min<int64_t>(t1, 32); ++i) {
      lengths.push_back(fuzz::sparse::hostileInt32(in, in.u8() % (width + 2)));
    }
    fuzz::sparse::writeInt32(world, *len, lengths);
  }
  fuzz::sparse::writeInt32(world, oriIdx, indexLists(in, t1 * p.k, p.max(p.s2)));
  fuzz::sparse::writeInt32(world, cmpIdx, indexLists(in, t1 * p.k2, p.max(p.c)));
  fuzz::sparse::writeInt32(world, oriTable, blockTable(in, p.batch, colsOri, blocksOri));
  fuzz::sparse::writeInt32(world, cmpTable, blockTable(in, p.batch, colsCmp, blocksCmp));

  std::vector<std::vector<char>> texts;
  const char* qText = p.tndQ ? "TND" : "BSND";
  const char* kvText = paged ? "PA_BBND" : tndKv ? "TND" : "BSND";
  char* layoutQ = fuzz::sparse::layoutText(in, qText, texts);
  char* layoutKv = fuzz::sparse::layoutText(in, kvText, texts);
  const int64_t cr = fuzz::sparse::hostileAttr(in, p.cr);
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  const uint8_t nulls = in.u8();
  const bool nullSize = nulls == 0xF1, nullExecutor = nulls == 0xF2;
  uint64_t* sizeArg = nullSize ? nullptr : &workspaceSize;
  aclOpExecutor** executorArg = nullExecutor ? nullptr : &executor;
  bool mustFail = nullSize || nullExecutor || metadata.t == nullptr;
  std::vector<fuzz::View> outputs;
  if (metadata.t != nullptr && op != 0) outputs.push_back(metadata.v);
  aclnnStatus status;
  fuzz::RunFn run;
  world.snapshot();
  if (op == 0) {
    mustFail = mustFail || q.t == nullptr || oriKv.t == nullptr || sinks.t == nullptr || attnOut.t == nullptr ||
               !std::isfinite(p.scale) || cr < 1 || cr > 128 || p.topkValueMode != 1;
    if (attnOut.t != nullptr) outputs.push_back(attnOut.v);
    if (lse.t != nullptr && p.returnLse) outputs.push_back(lse.v);
    status = aclnnSparseFlashMlaGetWorkspaceSize(
        q.t, oriKv.t, cmpKv.t, oriIdx.t, cmpIdx.t, oriTable.t, cmpTable.t, cuQ.t, cuOri.t, cuCmp.t, seqQ.t, seqOri.t,
        seqCmp.t, residual.t, oriLen.t, cmpLen.t, sinks.t, metadata.t, p.scale, cr, p.oriMode, p.cmpMode, p.winL,
        p.winR, layoutQ, layoutKv, p.topkValueMode, p.returnLse, attnOut.t, lse.t, sizeArg, executorArg);
    run = aclnnSparseFlashMla;
  } else if (op == 4) {
    mustFail = mustFail || q.t == nullptr || dOut.t == nullptr || out.t == nullptr || gradLse.t == nullptr ||
               attnOut.t == nullptr || !std::isfinite(p.scale) || cr < 1 || cr > 128;
    for (const Arg* a : {&attnOut, &dOriKv, &dCmpKv, &dSinks, &oriL1, &cmpL1}) {
      if (a->t != nullptr) outputs.push_back(a->v);
    }
    status = aclnnSparseFlashMlaGradGetWorkspaceSize(
        q.t, dOut.t, out.t, gradLse.t, oriKv.t, cmpKv.t, oriIdx.t, cmpIdx.t, cuQ.t, cuOri.t, cuCmp.t, seqQ.t, seqOri.t,
        seqCmp.t, residual.t, oriLen.t, cmpLen.t, sinks.t, metadata.t, p.scale, cr, p.oriMode, p.cmpMode, p.winL,
        p.winR, layoutQ, layoutKv, attnOut.t, dOriKv.t, dCmpKv.t, dSinks.t, oriL1.t, cmpL1.t, sizeArg, executorArg);
    run = aclnnSparseFlashMlaGrad;
  } else if (op == 1 || op == 2) {
    const bool hasOri = !in.oneIn(16), hasCmp = presence(in, p.hasCmp);
    const int64_t n1 = fuzz::sparse::hostileAttr(in, p.n1), nkv = fuzz::sparse::hostileAttr(in, 1);
    const int64_t batch = fuzz::sparse::hostileAttr(in, p.batch), maxQ = fuzz::sparse::hostileAttr(in, p.max(p.s1));
    const int64_t maxOri = fuzz::sparse::hostileAttr(in, p.max(p.s2)),
                  maxCmp = fuzz::sparse::hostileAttr(in, p.max(p.c));
    const int64_t oriTopk = fuzz::sparse::hostileAttr(in, p.k), cmpTopk = fuzz::sparse::hostileAttr(in, p.k2);
    mustFail = mustFail || (op == 2 && p.soc != Soc::Ascend950);
    status = (op == 1 ? aclnnSparseFlashMlaMetadataGetWorkspaceSize : aclnnSparseFlashMlaGradMetadataGetWorkspaceSize)(
        cuQ.t, cuOri.t, cuCmp.t, seqQ.t, seqOri.t, seqCmp.t, residual.t, oriLen.t, cmpLen.t, n1, nkv,
        fuzz::sparse::hostileAttr(in, p.d), batch, maxQ, maxOri, maxCmp, oriTopk, cmpTopk, cr, p.oriMode, p.cmpMode,
        p.winL, p.winR, layoutQ, layoutKv, hasOri, hasCmp, metadata.t, sizeArg, executorArg);
    run = op == 1 ? aclnnSparseFlashMlaMetadata : aclnnSparseFlashMlaGradMetadata;
  } else {
    const int64_t batch = fuzz::sparse::hostileAttr(in, p.batch), maxQ = fuzz::sparse::hostileAttr(in, p.max(p.s1));
    const int64_t maxK = fuzz::sparse::hostileAttr(in, p.max(p.c)), n1 = fuzz::sparse::hostileAttr(in, p.n1);
    const int64_t nk = fuzz::sparse::hostileAttr(in, 1), topk = fuzz::sparse::hostileAttr(in, p.k2);
    mustFail = mustFail || p.soc != Soc::Ascend950;
    // The L1 operator's layouts are q's (BSND / TND) on both sides.
    char* layoutK = fuzz::sparse::layoutText(in, qText, texts);
    status = aclnnSparseFlashMlaSoftmaxL1NormMetadataGetWorkspaceSize(
        cuQ.t, cuCmp.t, seqQ.t, seqCmp.t, residual.t, cmpLen.t, batch, maxQ, maxK, n1, nk,
        fuzz::sparse::hostileAttr(in, p.d), topk, cr, p.cmpMode, layoutQ, layoutK, metadata.t, sizeArg, executorArg);
    run = aclnnSparseFlashMlaSoftmaxL1NormMetadata;
  }
  fuzz::sparse::checkStatus(status);
  fuzz::finish(world, status, workspaceSize, executor, run, outputs, mustFail);
  if (op == 0 && fuzz::sparse::ran(world, status, workspaceSize) && std::fabs(p.scale) <= 1e3) {
    bool finiteIn = true;
    for (const Arg* a : {&q, &oriKv, &cmpKv, &sinks}) finiteIn = finiteIn && fuzz::sparse::allFinite(world, *a);
    if (finiteIn) {
      FUZZ_REQUIRE(fuzz::sparse::allFinite(world, attnOut), "attnOut not finite for finite inputs");
      if (p.returnLse) FUZZ_REQUIRE(fuzz::sparse::allFinite(world, lse), "softmaxLse not finite for finite inputs");
    }
  }
  // The gradient recomputes P = exp(s - lse) from a given lse: finite when |s| + |lse| stays small (scale 0, small
  // values), not for every finite lse.
  if (op == 4 && fuzz::sparse::ran(world, status, workspaceSize)) {
    bool finiteIn = true;
    for (const Arg* a : {&q, &oriKv, &cmpKv, &sinks, &dOut, &out, &gradLse}) {
      finiteIn = finiteIn && fuzz::sparse::allFinite(world, *a);
    }
    const double bound = std::fabs(p.scale) * 512 * fuzz::sparse::maxAbs(world, q) *
                             std::max(fuzz::sparse::maxAbs(world, oriKv), fuzz::sparse::maxAbs(world, cmpKv)) +
                         std::max(fuzz::sparse::maxAbs(world, gradLse), fuzz::sparse::maxAbs(world, sinks));
    if (finiteIn && bound <= 20) {
      for (const Arg* a : {&attnOut, &dOriKv, &dCmpKv, &dSinks, &oriL1, &cmpL1}) {
        FUZZ_REQUIRE(fuzz::sparse::allFinite(world, *a), "a SparseFlashMlaGrad output is not finite for finite inputs");
      }
    }
  }
  return 0;
}
