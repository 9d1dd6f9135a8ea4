// Helpers for the Compressor tests: a forward case (layout, sizes, options, memory layouts), its random inputs, the
// tensors of one aclnnCompressor call over host buffers (dense or strided), the state-cache addressing written out
// here independently of src/ (spec compressor.md 3.7), the fp64 / naive-fp32 golden of the outputs and of the cache
// after the call, and the precision measures the tests gate on.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/aclnn_base.h"
#include "aclnnop/aclnn_compressor.h"
#include "golden/compressor.h"
#include "gradkit/float_convert.h"
#include "ops/op_test_util.h"

namespace gradkit::test::compressor {

/** One forward case. Per-batch vectors left empty are passed as null tensors (seqused, startPos). */
struct FwdCase {
  bool th = false;
  int64_t batch = 1;
  int64_t seqLen = 0;              // BSH S
  int64_t tokens = 0;              // TH T (x rows; may exceed cuSeqlens[B])
  std::vector<int64_t> cuSeqlens;  // TH only
  std::vector<int64_t> seqused;    // empty: null
  std::vector<int64_t> startPos;   // empty: null
  int64_t hidden = 1024;
  int64_t headDim = 128;
  int64_t coff = 1;
  int64_t cmpRatio = 4;
  aclDataType dtype = ACL_BF16;
  int64_t cacheMode = 1;
  int64_t blockSize = 16;
  bool gradEnabled = true;
  bool stridedInputs = false;   // x, wkv, wgate, ape, the int32 tensors with gaps between rows / elements
  bool stridedOutputs = false;  // cmpKvOut, softmaxScoreOut, kvOut with gaps between rows
  // The cache's memory: gaps between blocks, and its channel stride (2: every other float). With blockPad > 0 and
  // passStrideOnly, the tensor is described densely and only stateCacheStrideDim0 carries the block stride.
  int64_t cacheBlockPad = 0;
  int64_t cacheChannelStride = 1;
  bool passStrideOnly = false;
  bool passStrideDim0 = true;  // stateCacheStrideDim0 = the block stride (else 0: the tensor's own stride)
  // Block table: empty = one fresh block per (batch, column) in cacheMode 1 (ids from 1), block b for batch b in 2.
  std::vector<int32_t> table;
  int64_t tableColumns = 0;  // cacheMode 1 with a given table
  int64_t blockNum = 0;      // with a given table
  uint32_t seed = 1;

  int64_t totalTokens() const { return th ? tokens : batch * seqLen; }
  int64_t channels() const { return coff * headDim; }
  int64_t width() const { return 2 * channels(); }
  int64_t blockRows() const { return coff * cmpRatio; }
  int64_t length(int64_t b) const { return th ? cuSeqlens[b + 1] - cuSeqlens[b] : seqLen; }
  int64_t used(int64_t b) const { return seqused.empty() ? length(b) : seqused[b]; }
  int64_t start(int64_t b) const { return startPos.empty() ? 0 : startPos[b]; }
  int64_t firstToken(int64_t b) const { return th ? cuSeqlens[b] : b * seqLen; }
  int64_t outputRows() const {
    return th ? std::min(tokens, tokens / cmpRatio + batch) : batch * ((seqLen + cmpRatio - 1) / cmpRatio);
  }
  std::vector<int64_t> outputLead() const {
    return th ? std::vector<int64_t>{outputRows()} : std::vector<int64_t>{batch, (seqLen + cmpRatio - 1) / cmpRatio};
  }
  golden::CompressorLayout layout() const {
    golden::CompressorLayout l;
    l.th = th;
    l.batch = batch;
    l.seqLen = seqLen;
    l.tokens = tokens;
    l.hidden = hidden;
    l.headDim = headDim;
    l.coff = coff;
    l.cmpRatio = cmpRatio;
    l.cuSeqlens = cuSeqlens;
    l.seqused = seqused;
    l.startPos = startPos;
    return l;
  }
};

inline float ioValue(aclDataType dtype, uint16_t bits) {
  return dtype == ACL_FLOAT16 ? halfToFloat(bits) : bf16ToFloat(bits);
}
inline uint16_t ioBits(aclDataType dtype, double value) {
  return dtype == ACL_FLOAT16 ? doubleToHalf(value) : doubleToBf16(value);
}

/** The positions batch b reads from the cache (its blocks' history) and writes into it (spec 3.4, 3.7). */
inline std::pair<int64_t, int64_t> historyRange(const FwdCase& c, int64_t b) {
  const int64_t sp = c.start(b), cr = c.cmpRatio;
  const int64_t blocks = std::max<int64_t>(0, (sp + c.used(b)) / cr - sp / cr);
  if (blocks == 0) return {sp, sp};
  return {std::max<int64_t>(0, (sp / cr - (c.coff - 1)) * cr), sp};
}
inline std::pair<int64_t, int64_t> writeRange(const FwdCase& c, int64_t b) {
  const int64_t sp = c.start(b), end = sp + c.used(b), cr = c.cmpRatio;
  if (c.cacheMode == 1) return {sp, end};
  return {std::max(sp, end / cr * cr - (c.coff - 1) * cr), end};
}

/** Inputs as the caller holds them (dense): x / wkv / wgate as io bits, the cache [blockNum, bs, 2C] as values. */
struct FwdData {
  std::vector<uint16_t> x, wkv, wgate;
  std::vector<float> ape, cache;
  std::vector<int32_t> table;
  int64_t tableColumns = 1, blockNum = 1;

  /** The cache block of position p of batch b (the test's own reading of the addressing rule). */
  int64_t blockOf(const FwdCase& c, int64_t b, int64_t p) const {
    return c.cacheMode == 1 ? table[b * tableColumns + p / c.blockSize] : table[b];
  }
  /** Index of channel `channel` of position p of batch b in the dense cache. */
  int64_t cacheIndex(const FwdCase& c, int64_t b, int64_t p, int64_t channel) const {
    return (blockOf(c, b, p) * c.blockSize + p % c.blockSize) * c.width() + channel;
  }
};

inline FwdData randomData(FwdCase& c) {
  std::mt19937 rng(c.seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  FwdData data;
  const int64_t t = c.totalTokens(), h = c.hidden, ch = c.channels();
  data.x.resize(static_cast<size_t>(t * h));
  for (auto& v : data.x) v = ioBits(c.dtype, normal(rng));
  const double scale = 1.5 / std::sqrt(static_cast<double>(h));  // projections of order 1
  data.wkv.resize(static_cast<size_t>(ch * h));
  data.wgate.resize(static_cast<size_t>(ch * h));
  for (auto& v : data.wkv) v = ioBits(c.dtype, scale * normal(rng));
  for (auto& v : data.wgate) v = ioBits(c.dtype, scale * normal(rng));
  data.ape.resize(static_cast<size_t>(c.cmpRatio * ch));
  for (auto& v : data.ape) v = static_cast<float>(0.5 * uniform(rng));
  if (!c.table.empty()) {
    data.table = c.table;
    data.tableColumns = c.cacheMode == 1 ? c.tableColumns : 1;
    data.blockNum = c.blockNum;
  } else if (c.cacheMode == 1) {
    int64_t reach = 1;
    for (int64_t b = 0; b < c.batch; ++b) reach = std::max(reach, c.start(b) + c.length(b));
    data.tableColumns = (reach + c.blockSize - 1) / c.blockSize;
    data.table.assign(static_cast<size_t>(c.batch * data.tableColumns), 0);
    int32_t next = 1;  // block 0 stays the "do not write" block
    for (auto& entry : data.table) entry = next++;
    data.blockNum = next;
  } else {
    for (int64_t b = 0; b < c.batch; ++b) data.table.push_back(static_cast<int32_t>(c.batch - 1 - b));
    data.blockNum = std::max<int64_t>(c.batch, 1) + 1;
  }
  data.cache.resize(static_cast<size_t>(data.blockNum * c.blockSize * c.width()));
  for (auto& v : data.cache) v = static_cast<float>(2.0 * uniform(rng));
  return data;
}

/** A tensor over an owned host buffer of `elements` values of T, with the given view. */
template <class T>
struct Buffer {
  std::vector<T> storage;
  TensorPtr tensor;
  std::vector<int64_t> shape, strides;
  int64_t offset = 0;

  Buffer() = default;
  Buffer(aclDataType dtype, std::vector<int64_t> dims, std::vector<int64_t> viewStrides, int64_t elements, T fill,
         int64_t viewOffset = 0)
      : storage(static_cast<size_t>(std::max<int64_t>(elements, 1)), fill),
        shape(std::move(dims)),
        strides(std::move(viewStrides)),
        offset(viewOffset) {
    tensor = makeView(storage.data(), dtype, shape, strides, offset, std::max<int64_t>(elements, 1));
  }
  /** Element `index` (row-major over the view) of the view. */
  T& at(const std::vector<int64_t>& index) { return storage[static_cast<size_t>(position(index))]; }
  int64_t position(const std::vector<int64_t>& index) const {
    int64_t at = offset;
    for (size_t d = 0; d < index.size(); ++d) at += index[d] * strides[d];
    return at;
  }
  /** The view's elements, row-major. */
  std::vector<T> dense() const {
    std::vector<T> out;
    const int64_t n = product(shape);
    out.reserve(static_cast<size_t>(n));
    std::vector<int64_t> index(shape.size(), 0);
    for (int64_t k = 0; k < n; ++k) {
      out.push_back(storage[static_cast<size_t>(position(index))]);
      for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
        if (++index[d] < shape[d]) break;
        index[d] = 0;
      }
    }
    return out;
  }
};

/** Strides of `shape` with every row (the last dim) `pad` elements longer, and every element `step` apart. */
inline std::vector<int64_t> paddedStrides(const std::vector<int64_t>& shape, int64_t pad, int64_t step = 1) {
  std::vector<int64_t> strides(shape.size(), step);
  if (shape.empty()) return strides;
  int64_t inner = shape.back() * step + pad;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d) {
    strides[d] = inner;
    inner *= shape[d];
  }
  return strides;
}

inline int64_t reach(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides, int64_t offset = 0) {
  int64_t last = offset;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return 0;
    last += (shape[d] - 1) * strides[d];
  }
  return last + 1;
}

/** A buffer holding `dense` in a view of `shape` (padded rows when `strided`), the rest of the storage `fill`. */
template <class T>
Buffer<T> input(aclDataType dtype, const std::vector<int64_t>& shape, const std::vector<T>& dense, bool strided,
                T fill = T(0)) {
  const std::vector<int64_t> strides =
      strided ? paddedStrides(shape, 3, shape.size() == 1 ? 2 : 1) : rowMajorStrides(shape);
  const int64_t offset = strided ? 5 : 0;
  Buffer<T> buffer(dtype, shape, strides, reach(shape, strides, offset), fill, offset);
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t k = 0; k < dense.size(); ++k) {
    buffer.storage[static_cast<size_t>(buffer.position(index))] = dense[k];
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return buffer;
}

/** The tensors of one aclnnCompressor call, built from a case and its data. */
struct FwdCall {
  const FwdCase& c;
  Buffer<uint16_t> x, wkv, wgate, cmpKv;
  Buffer<float> ape, cache, softmaxScore, kv;
  Buffer<int32_t> table, cuSeqlens, seqused, startPos;
  int64_t strideDim0 = 0;
  std::vector<int64_t> cacheStrides;
  static constexpr uint16_t kIoSentinel = 0x7E55;  // a NaN: an unwritten output element is caught
  static constexpr float kSentinel = -12345.0f;

  FwdCall(const FwdCase& fc, const FwdData& data) : c(fc) {
    const bool si = c.stridedInputs, so = c.stridedOutputs;
    const std::vector<int64_t> xShape =
        c.th ? std::vector<int64_t>{c.tokens, c.hidden} : std::vector<int64_t>{c.batch, c.seqLen, c.hidden};
    x = input<uint16_t>(c.dtype, xShape, data.x, si);
    wkv = input<uint16_t>(c.dtype, {c.channels(), c.hidden}, data.wkv, si);
    wgate = input<uint16_t>(c.dtype, {c.channels(), c.hidden}, data.wgate, si);
    ape = input<float>(ACL_FLOAT, {c.cmpRatio, c.channels()}, data.ape, si);
    std::vector<int64_t> tableShape =
        c.cacheMode == 1 ? std::vector<int64_t>{c.batch, data.tableColumns} : std::vector<int64_t>{c.batch};
    table = input<int32_t>(ACL_INT32, tableShape, data.table, si);
    const auto ints = [](const std::vector<int64_t>& v) { return std::vector<int32_t>(v.begin(), v.end()); };
    if (c.th) cuSeqlens = input<int32_t>(ACL_INT32, {c.batch + 1}, ints(c.cuSeqlens), si);
    if (!c.seqused.empty()) seqused = input<int32_t>(ACL_INT32, {c.batch}, ints(c.seqused), si);
    if (!c.startPos.empty()) startPos = input<int32_t>(ACL_INT32, {c.batch}, ints(c.startPos), si);

    // The cache: blocks `blockStride` apart, rows 2C * channelStride apart.
    const int64_t s2 = c.cacheChannelStride, s1 = c.width() * s2;
    const int64_t blockStride = c.blockSize * s1 + c.cacheBlockPad;
    const std::vector<int64_t> cacheShape = {data.blockNum, c.blockSize, c.width()};
    cacheStrides = {blockStride, s1, s2};
    const int64_t elements = reach(cacheShape, cacheStrides);
    std::vector<int64_t> described = cacheStrides;
    if (c.passStrideOnly) described[0] = c.blockSize * s1;
    cache = Buffer<float>(ACL_FLOAT, cacheShape, described, elements, kSentinel);
    cache.strides = cacheStrides;  // reads and writes below use the real layout
    for (int64_t blk = 0; blk < data.blockNum; ++blk) {
      for (int64_t row = 0; row < c.blockSize; ++row) {
        for (int64_t ch = 0; ch < c.width(); ++ch) {
          cache.at({blk, row, ch}) = data.cache[static_cast<size_t>((blk * c.blockSize + row) * c.width() + ch)];
        }
      }
    }
    strideDim0 = c.passStrideDim0 || c.passStrideOnly ? blockStride : 0;

    const std::vector<int64_t> lead = c.outputLead();
    std::vector<int64_t> cmpShape = lead, blockShape = lead;
    cmpShape.push_back(c.headDim);
    blockShape.push_back(c.blockRows());
    blockShape.push_back(c.headDim);
    const auto outStrides = [&](const std::vector<int64_t>& shape) {
      return so ? paddedStrides(shape, 7) : rowMajorStrides(shape);
    };
    cmpKv =
        Buffer<uint16_t>(c.dtype, cmpShape, outStrides(cmpShape), reach(cmpShape, outStrides(cmpShape)), kIoSentinel);
    softmaxScore = Buffer<float>(ACL_FLOAT, blockShape, outStrides(blockShape),
                                 reach(blockShape, outStrides(blockShape)), kSentinel);
    kv = Buffer<float>(ACL_FLOAT, blockShape, outStrides(blockShape), reach(blockShape, outStrides(blockShape)),
                       kSentinel);
  }

  /** The first phase; on success `*executor` holds the executor. */
  aclnnStatus plan(uint64_t* workspaceSize, aclOpExecutor** executor) const {
    return aclnnCompressorGetWorkspaceSize(x.tensor.get(), wkv.tensor.get(), wgate.tensor.get(), cache.tensor.get(),
                                           ape.tensor.get(), table.tensor.get(), cuSeqlens.tensor.get(),
                                           seqused.tensor.get(), startPos.tensor.get(), c.cmpRatio, c.coff, c.cacheMode,
                                           strideDim0, c.gradEnabled, cmpKv.tensor.get(), softmaxScore.tensor.get(),
                                           kv.tensor.get(), workspaceSize, executor);
  }

  /** Both phases on the default stream; returns the workspace size (asserting success). */
  uint64_t run() {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    const aclnnStatus status = plan(&size, &executor);
    EXPECT_EQ(status, ACLNN_SUCCESS) << recentError();
    if (status != ACLNN_SUCCESS) return 0;
    std::vector<unsigned char> workspace(static_cast<size_t>(size));
    EXPECT_EQ(aclnnCompressor(size > 0 ? workspace.data() : nullptr, size, executor, nullptr), ACLNN_SUCCESS)
        << recentError();
    EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << recentError();
    return size;
  }

  /** The cache's values, dense [blockNum, bs, 2C]. */
  std::vector<float> cacheValues() const { return cache.dense(); }
};

/** The fp64 (Real = double) or naive fp32 (Real = float) golden of a case: outputs, then the cache after the call. */
template <class Real>
struct FwdGolden {
  golden::CompressorOutputs<Real> out;
  std::vector<Real> cacheAfter;    // dense [blockNum, bs, 2C]
  std::vector<char> cacheWritten;  // 1 where the call writes
};

template <class Real>
FwdGolden<Real> fwdGolden(const FwdCase& c, const FwdData& data) {
  const int64_t t = c.totalTokens(), h = c.hidden, ch = c.channels();
  std::vector<Real> x(data.x.size()), wkv(data.wkv.size()), wgate(data.wgate.size()), ape(data.ape.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = ioValue(c.dtype, data.x[i]);
  for (size_t i = 0; i < wkv.size(); ++i) wkv[i] = ioValue(c.dtype, data.wkv[i]);
  for (size_t i = 0; i < wgate.size(); ++i) wgate[i] = ioValue(c.dtype, data.wgate[i]);
  for (size_t i = 0; i < ape.size(); ++i) ape[i] = data.ape[i];
  golden::CompressorInputs<Real> in;
  in.layout = c.layout();
  in.x = x.data();
  in.wkv = wkv.data();
  in.wgate = wgate.data();
  in.ape = ape.data();
  // History: the cache as it was before the call, through the test's own addressing.
  in.history = [&](int64_t b, int64_t p, Real* kvState, Real* scoreState) {
    for (int64_t k = 0; k < ch; ++k) {
      kvState[k] = data.cache[static_cast<size_t>(data.cacheIndex(c, b, p, k))];
      scoreState[k] = data.cache[static_cast<size_t>(data.cacheIndex(c, b, p, ch + k))];
    }
  };
  FwdGolden<Real> g;
  g.out = golden::compressor(in);
  // The cache after the call: writes in batch, then position order onto the cache as it was.
  g.cacheAfter.assign(data.cache.begin(), data.cache.end());
  g.cacheWritten.assign(data.cache.size(), 0);
  for (int64_t b = 0; b < c.batch; ++b) {
    const auto [first, end] = writeRange(c, b);
    for (int64_t p = first; p < end; ++p) {
      if (c.cacheMode == 1 && (data.blockOf(c, b, p) <= 0 || data.blockOf(c, b, p) >= data.blockNum)) continue;
      const int64_t token = c.firstToken(b) + p - c.start(b);
      for (int64_t k = 0; k < ch; ++k) {
        Real kvValue = 0, gate = 0;
        for (int64_t i = 0; i < h; ++i) {
          const Real kvProduct = x[token * h + i] * wkv[k * h + i];
          kvValue = kvValue + kvProduct;
          const Real gateProduct = x[token * h + i] * wgate[k * h + i];
          gate = gate + gateProduct;
        }
        const int64_t kvAt = data.cacheIndex(c, b, p, k), scoreAt = data.cacheIndex(c, b, p, ch + k);
        g.cacheAfter[kvAt] = kvValue;
        g.cacheAfter[scoreAt] = gate + ape[(p % c.cmpRatio) * ch + k];
        g.cacheWritten[kvAt] = g.cacheWritten[scoreAt] = 1;
      }
    }
  }
  (void)t;
  return g;
}

/** Errors of `ours` against the fp64 golden over the elements selected by `keep` (all when empty). */
struct ErrorStats {
  double maxAbs = 0, rms = 0;
  int64_t count = 0;
};

template <class A, class B>
ErrorStats errorsOf(const std::vector<A>& ours, const std::vector<B>& exact, const std::vector<char>& keep = {}) {
  ErrorStats s;
  double squares = 0;
  for (size_t i = 0; i < exact.size(); ++i) {
    if (!keep.empty() && !keep[i]) continue;
    const double e = std::fabs(static_cast<double>(ours[i]) - static_cast<double>(exact[i]));
    s.maxAbs = std::max(s.maxAbs, e);
    squares += e * e;
    ++s.count;
  }
  s.rms = s.count > 0 ? std::sqrt(squares / static_cast<double>(s.count)) : 0;
  return s;
}

/**
 * The double-benchmark gate: our error against fp64 no worse than `factor` times the naive fp32 computation's
 * (RMS and max), with an absolute floor `floor` for elements both compute exactly.
 */
inline ::testing::AssertionResult withinBenchmark(const ErrorStats& ours, const ErrorStats& naive, double factor = 2.0,
                                                  double floor = 1e-12) {
  if (ours.rms <= factor * naive.rms + floor && ours.maxAbs <= factor * naive.maxAbs + floor) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "ours: rms " << ours.rms << " max " << ours.maxAbs << "; naive fp32: rms "
                                       << naive.rms << " max " << naive.maxAbs << " (" << ours.count << " elements)";
}

/** One unit in the last place of the io dtype at `value` (the spacing of the binade |value| is in). */
inline double ioUlp(aclDataType dtype, double value) {
  const int mantissa = dtype == ACL_FLOAT16 ? 10 : 7;
  const int minExponent = dtype == ACL_FLOAT16 ? -14 : -126;
  const double magnitude = std::fabs(value);
  int exponent = magnitude > 0 ? static_cast<int>(std::floor(std::log2(magnitude))) : minExponent;
  exponent = std::max(exponent, minExponent);
  return std::ldexp(1.0, exponent - mantissa);
}

}  // namespace gradkit::test::compressor
