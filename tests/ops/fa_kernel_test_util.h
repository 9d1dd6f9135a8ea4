// Helpers for the flash attention kernel tests: a case (batches, heads, dims, dtypes, memory layout, mask / pse /
// dropout options), its FaProblem and tensors built by hand over host buffers, the kernels run with a given thread
// count and softmax table, and a direct fp64 reference written from fa_semantics.h's definitions (it calls faMasked,
// faKeep and faPse, the contract, and nothing else of the kernels).
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "core/parallel.h"
#include "gradkit/float_convert.h"
#include "ops/flash_attention/kernels/fa_kernel.h"
#include "ops/flash_attention/kernels/fa_run.h"
#include "ops/flash_attention/kernels/fa_semantics.h"

namespace gradkit::test::fa {

using kernels::FaBatch;
using kernels::FaDropoutKind;
using kernels::FaProblem;
using kernels::FaPseKind;
using kernels::FaView;

/** One case. Lengths are per batch (s1, s2). */
struct FaCase {
  std::vector<std::pair<int64_t, int64_t>> lengths = std::vector<std::pair<int64_t, int64_t>>(1, {40, 50});
  bool tnd = false;       // rows absolute (strideBatch 0), batch b's rows after batch b-1's; else padded to the max
  bool bsnd = false;      // padded rows as [b][s][n][d] (else [b][n][s][d])
  int64_t colStride = 1;  // > 1: gaps between the elements of a row (inputs and outputs)
  bool kvBatchStride0 = false;  // padded: k and v with batch stride 0 (every batch reads the same keys and values)
  int64_t n1 = 1, n2 = 1, d = 16, dRope = 0, dv = 16;
  aclDataType dtype = ACL_FLOAT, outDtype = ACL_FLOAT;
  float scale = 0.25f;
  float range = 1.0f;  // inputs uniform in [-range, range]
  bool band = false;
  int64_t bandLeft = kernels::kFaNoBand, bandRight = kernels::kFaNoBand, prefix = 0;
  bool maskTensor = false;
  bool maskBroadcast = false;  // one [maxS1][maxS2] mask for every batch and head (strides 0)
  double maskDensity = 0.3;
  int64_t maskedRowsFrom = -1, maskedRowsTo = -1;  // rows [from, to) of the mask fully masked
  FaPseKind pse = FaPseKind::None;
  bool pseBeforeScale = false;
  aclDataType pseDtype = ACL_FLOAT;
  int64_t alibiTableRows = 0;  // > 0: the compressed form with this many rows (pseRow0 = rows - s1, may be < 0)
  FaDropoutKind dropout = FaDropoutKind::None;
  float keepProb = 0.8f;
  uint32_t seed = 1;
  TilePath tilePath = TilePath::Highway;     // NativeBf16: bf16 operands, P and dS rounded (bf16 inputs)
  GemmSums tileSums = GemmSums::Sequential;  // of the native path's products (Bf16Pairs: VDPBF16PS's order)
};

inline float loadElement(const void* data, aclDataType dtype, int64_t index) {
  switch (dtype) {
    case ACL_FLOAT16:
      return halfToFloat(static_cast<const uint16_t*>(data)[index]);
    case ACL_BF16:
      return bf16ToFloat(static_cast<const uint16_t*>(data)[index]);
    default:
      return static_cast<const float*>(data)[index];
  }
}

inline size_t bytesOf(aclDataType dtype) { return dtype == ACL_FLOAT ? 4 : 2; }

/** A host tensor seen as [batch][head][row][col] through an FaView. */
struct HostTensor {
  std::vector<unsigned char> bytes;
  FaView view;

  int64_t index(int64_t b, int64_t n, int64_t r, int64_t c) const {
    return b * view.strideBatch + n * view.strideHead + r * view.strideRow + c * view.strideCol;
  }
  double at(int64_t b, int64_t n, int64_t r, int64_t c) const {
    return loadElement(view.data, view.dtype, index(b, n, r, c));
  }
  void set(int64_t b, int64_t n, int64_t r, int64_t c, double value) {
    unsigned char* at = bytes.data() + index(b, n, r, c) * static_cast<int64_t>(bytesOf(view.dtype));
    if (view.dtype == ACL_FLOAT) {
      const auto f = static_cast<float>(value);
      std::memcpy(at, &f, 4);
    } else {
      const uint16_t bits = view.dtype == ACL_BF16 ? doubleToBf16(value) : doubleToHalf(value);
      std::memcpy(at, &bits, 2);
    }
  }
};

/** The row geometry of a case: where batch b's rows start, and the padded maxima. */
struct Geometry {
  int64_t batches = 0, maxS1 = 0, maxS2 = 0, totalS1 = 0, totalS2 = 0;
  std::vector<int64_t> qFirst, kvFirst;
};

inline Geometry geometryOf(const FaCase& c) {
  Geometry g;
  g.batches = static_cast<int64_t>(c.lengths.size());
  for (const auto& [s1, s2] : c.lengths) {
    g.qFirst.push_back(c.tnd ? g.totalS1 : 0);
    g.kvFirst.push_back(c.tnd ? g.totalS2 : 0);
    g.maxS1 = std::max(g.maxS1, s1);
    g.maxS2 = std::max(g.maxS2, s2);
    g.totalS1 += s1;
    g.totalS2 += s2;
  }
  return g;
}

/** A tensor of `heads` x rows x cols in the case's layout (rows: the total for TND, else the padded maximum). */
inline HostTensor makeTensor(const FaCase& c, const Geometry& g, aclDataType dtype, int64_t heads, bool kv,
                             int64_t cols) {
  HostTensor t;
  const int64_t rows = c.tnd ? (kv ? g.totalS2 : g.totalS1) : (kv ? g.maxS2 : g.maxS1);
  const int64_t sc = c.colStride;
  FaView& v = t.view;
  v.dtype = dtype;
  v.strideCol = sc;
  if (c.tnd) {  // [T][N][D]
    v.strideBatch = 0;
    v.strideHead = cols * sc;
    v.strideRow = heads * cols * sc;
  } else if (c.bsnd) {
    v.strideHead = cols * sc;
    v.strideRow = heads * cols * sc;
    v.strideBatch = rows * heads * cols * sc;
  } else {
    v.strideRow = cols * sc;
    v.strideHead = rows * cols * sc;
    v.strideBatch = heads * rows * cols * sc;
  }
  const int64_t elements = (c.tnd ? 1 : g.batches) * heads * rows * cols * sc + 1;
  t.bytes.assign(static_cast<size_t>(elements) * bytesOf(dtype), 0);
  v.data = t.bytes.data();
  return t;
}

inline void fillRandom(HostTensor& t, const FaCase& c, const Geometry& g, int64_t heads, bool kv, int64_t cols,
                       double range, std::mt19937& rng) {
  std::uniform_real_distribution<double> uniform(-range, range);
  for (int64_t b = 0; b < g.batches; ++b) {
    const auto [s1, s2] = c.lengths[static_cast<size_t>(b)];
    const int64_t first = kv ? g.kvFirst[static_cast<size_t>(b)] : g.qFirst[static_cast<size_t>(b)];
    for (int64_t n = 0; n < heads; ++n) {
      for (int64_t r = 0; r < (kv ? s2 : s1); ++r) {
        for (int64_t col = 0; col < cols; ++col) t.set(c.tnd ? 0 : b, n, first + r, col, uniform(rng));
      }
    }
  }
}

/** Everything one case runs on. Pointers in problem / io point into the members: keep the object in place. */
struct FaData {
  FaCase c;
  Geometry g;
  FaProblem problem;
  HostTensor q, k, v, qRope, kRope, dy, attentionIn, out, dq, dk, dv, dqRope, dkRope;
  HostTensor pseTable;
  std::vector<uint8_t> mask, dropBits;
  std::vector<float> softmaxMax, softmaxSum;  // forward outputs
  std::vector<float> givenMax, givenSum;      // backward inputs (reference statistics, rounded to float)
  int64_t statsFloats = 0;
};

/** Batch index b as seen by the views (TND: 0). */
inline int64_t viewBatch(const FaCase& c, int64_t b) { return c.tnd ? 0 : b; }

inline std::unique_ptr<FaData> makeData(const FaCase& c) {
  auto data = std::make_unique<FaData>();
  FaData& x = *data;
  x.c = c;
  x.g = geometryOf(c);
  const Geometry& g = x.g;
  std::mt19937 rng(c.seed);
  FaProblem& p = x.problem;
  p.n1 = c.n1;
  p.n2 = c.n2;
  p.d = c.d;
  p.dRope = c.dRope;
  p.dv = c.dv;
  p.scale = c.scale;
  p.band = c.band;
  p.maskTensor = c.maskTensor;
  p.tilePath = c.tilePath;
  p.tileSums = c.tileSums;

  x.q = makeTensor(c, g, c.dtype, c.n1, false, c.d);
  x.k = makeTensor(c, g, c.dtype, c.n2, true, c.d);
  x.v = makeTensor(c, g, c.dtype, c.n2, true, c.dv);
  x.dy = makeTensor(c, g, c.dtype, c.n1, false, c.dv);
  x.attentionIn = makeTensor(c, g, c.dtype, c.n1, false, c.dv);
  x.out = makeTensor(c, g, c.outDtype, c.n1, false, c.dv);
  x.dq = makeTensor(c, g, c.outDtype, c.n1, false, c.d);
  x.dk = makeTensor(c, g, c.outDtype, c.n2, true, c.d);
  x.dv = makeTensor(c, g, c.outDtype, c.n2, true, c.dv);
  if (c.kvBatchStride0) {
    x.k.view.strideBatch = 0;
    x.v.view.strideBatch = 0;
  }
  fillRandom(x.q, c, g, c.n1, false, c.d, c.range, rng);
  fillRandom(x.k, c, g, c.n2, true, c.d, c.range, rng);
  fillRandom(x.v, c, g, c.n2, true, c.dv, 1.0, rng);
  fillRandom(x.dy, c, g, c.n1, false, c.dv, 1.0, rng);
  if (c.dRope > 0) {
    x.qRope = makeTensor(c, g, c.dtype, c.n1, false, c.dRope);
    x.kRope = makeTensor(c, g, c.dtype, c.n2, true, c.dRope);
    x.dqRope = makeTensor(c, g, c.outDtype, c.n1, false, c.dRope);
    x.dkRope = makeTensor(c, g, c.outDtype, c.n2, true, c.dRope);
    fillRandom(x.qRope, c, g, c.n1, false, c.dRope, c.range, rng);
    fillRandom(x.kRope, c, g, c.n2, true, c.dRope, c.range, rng);
  }

  // Statistics: per batch [n1][s1][8] blocks one after the other.
  int64_t statsAt = 0, dropAt = 0;
  for (int64_t b = 0; b < g.batches; ++b) {
    const auto [s1, s2] = c.lengths[static_cast<size_t>(b)];
    FaBatch batch;
    batch.qFirst = g.qFirst[static_cast<size_t>(b)];
    batch.kvFirst = g.kvFirst[static_cast<size_t>(b)];
    batch.s1 = s1;
    batch.s2 = s2;
    batch.bandLeft = c.bandLeft;
    batch.bandRight = c.bandRight;
    batch.prefix = c.prefix;
    batch.statsBase = statsAt;
    batch.statsHeadStride = s1 * 8;
    batch.statsRowStride = 8;
    statsAt += c.n1 * s1 * 8;
    batch.dropRowLength = c.dropout == FaDropoutKind::Philox ? (s2 + 15) / 16 * 16 : s2;
    batch.dropBase = dropAt;
    dropAt += c.n1 * s1 * batch.dropRowLength;
    if (c.alibiTableRows > 0) batch.pseRow0 = c.alibiTableRows - s1;
    p.batches.push_back(batch);
  }
  x.statsFloats = statsAt;

  if (c.maskTensor) {
    FaView& m = p.mask;
    m.dtype = ACL_UINT8;
    const int64_t heads = c.maskBroadcast ? 1 : c.n1, batches = c.maskBroadcast ? 1 : g.batches;
    x.mask.resize(static_cast<size_t>(batches * heads * g.maxS1 * g.maxS2));
    std::bernoulli_distribution masked(c.maskDensity);
    for (size_t e = 0; e < x.mask.size(); ++e) x.mask[e] = masked(rng) ? static_cast<uint8_t>(1 + e % 3) : 0;
    m.strideCol = 1;
    m.strideRow = g.maxS2;
    m.strideHead = c.maskBroadcast ? 0 : g.maxS1 * g.maxS2;
    m.strideBatch = c.maskBroadcast ? 0 : heads * g.maxS1 * g.maxS2;
    m.data = x.mask.data();
    for (int64_t bh = 0; bh < batches * heads; ++bh) {
      for (int64_t r = std::max<int64_t>(c.maskedRowsFrom, 0); r < std::min(c.maskedRowsTo, g.maxS1); ++r) {
        for (int64_t col = 0; col < g.maxS2; ++col) x.mask[static_cast<size_t>((bh * g.maxS1 + r) * g.maxS2 + col)] = 1;
      }
    }
  }

  if (c.pse != FaPseKind::None) {
    kernels::FaPse& pse = p.pse;
    pse.kind = c.pse;
    pse.beforeScale = c.pseBeforeScale;
    if (c.pse == FaPseKind::Table) {
      const int64_t rows = c.alibiTableRows > 0 ? c.alibiTableRows : g.maxS1;
      const int64_t cols = g.maxS2 + 3;  // wider than s2: the ALiBi diagonals read past s2
      HostTensor& t = x.pseTable;
      t.view.dtype = c.pseDtype;
      t.view.strideCol = 1;
      t.view.strideRow = cols;
      t.view.strideHead = rows * cols;
      t.view.strideBatch = c.n1 * rows * cols;
      t.bytes.assign(static_cast<size_t>(g.batches * c.n1 * rows * cols) * bytesOf(c.pseDtype), 0);
      t.view.data = t.bytes.data();
      std::uniform_real_distribution<double> uniform(-2.0, 2.0);
      for (int64_t b = 0; b < g.batches; ++b) {
        for (int64_t n = 0; n < c.n1; ++n) {
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t col = 0; col < cols; ++col) t.set(b, n, r, col, uniform(rng));
          }
        }
      }
      pse.table = t.view;
      pse.tableRows = rows;
      pse.tableCols = cols;
      pse.alibiRows = c.alibiTableRows > 0;
    } else {
      HostTensor& t = x.pseTable;  // FLOAT slopes [b][n1]
      t.view.dtype = ACL_FLOAT;
      t.view.strideHead = 1;
      t.view.strideBatch = c.n1;
      t.view.strideRow = t.view.strideCol = 0;
      t.bytes.assign(static_cast<size_t>(g.batches * c.n1) * 4, 0);
      t.view.data = t.bytes.data();
      std::uniform_real_distribution<float> slope(0.01f, 0.5f);
      for (int64_t e = 0; e < g.batches * c.n1; ++e) {
        const float value = slope(rng);
        std::memcpy(t.bytes.data() + e * 4, &value, 4);
      }
      pse.table = t.view;
      pse.qStartIdx = 3;
      pse.kvStartIdx = -2;
    }
  }

  if (c.dropout != FaDropoutKind::None) {
    kernels::FaDropout& drop = p.dropout;
    drop.kind = c.dropout;
    drop.keepProb = c.keepProb;
    drop.scale = 1.0f / c.keepProb;
    if (c.dropout == FaDropoutKind::Packed) {
      x.dropBits.resize(static_cast<size_t>(dropAt / 8 + 1));
      std::bernoulli_distribution kept(c.keepProb);
      for (uint8_t& byte : x.dropBits) {
        for (int bit = 0; bit < 8; ++bit) byte = static_cast<uint8_t>(byte | (kept(rng) ? 1u << bit : 0u));
      }
      drop.bits = x.dropBits.data();
    } else {
      drop.key[0] = 0x12345u + c.seed;
      drop.key[1] = 7u;
      drop.counterLow = (uint64_t{1} << 32) - 3;  // the counter carries into its second word inside the stream
      drop.threshold = static_cast<uint32_t>(c.keepProb * 255.0f);
    }
  }
  x.softmaxMax.assign(static_cast<size_t>(statsAt), 0.0f);
  x.softmaxSum.assign(static_cast<size_t>(statsAt), 0.0f);
  return data;
}

inline int64_t statsIndex(const FaBatch& batch, int64_t n1, int64_t i) {
  return batch.statsBase + n1 * batch.statsHeadStride + i * batch.statsRowStride;
}

/** fp64 reference of one case: out, the statistics, dq, dk, dv (rope parts in the columns after d). */
struct Reference {
  // [b][n1][i][c] flattened per batch; indexing helpers below.
  std::vector<std::vector<double>> out, dq, dk, dv;
  std::vector<std::vector<double>> rowMax, rowSum;  // [b][n1 * s1 + i]
};

/** The scores s(i, j) of one (b, n1) in fp64 (masked: NaN marks them). */
inline std::vector<double> referenceScores(const FaData& x, int64_t b, int64_t n1) {
  const FaCase& c = x.c;
  const FaProblem& p = x.problem;
  const FaBatch& batch = p.batches[static_cast<size_t>(b)];
  const int64_t vb = viewBatch(c, b), kvHead = n1 / (c.n1 / c.n2);
  std::vector<double> s(static_cast<size_t>(batch.s1 * batch.s2));
  for (int64_t i = 0; i < batch.s1; ++i) {
    for (int64_t j = 0; j < batch.s2; ++j) {
      double& out = s[static_cast<size_t>(i * batch.s2 + j)];
      if (kernels::faMasked(p, batch, b, n1, i, j)) {
        out = NAN;
        continue;
      }
      double dot = 0.0;
      for (int64_t e = 0; e < c.d; ++e)
        dot += x.q.at(vb, n1, batch.qFirst + i, e) * x.k.at(vb, kvHead, batch.kvFirst + j, e);
      for (int64_t e = 0; e < c.dRope; ++e) {
        dot += x.qRope.at(vb, n1, batch.qFirst + i, e) * x.kRope.at(vb, kvHead, batch.kvFirst + j, e);
      }
      const double pse = kernels::faPse(p.pse, batch, b, n1, i, j, loadElement);
      out = p.pse.beforeScale ? (dot + pse) * static_cast<double>(p.scale) : dot * p.scale + pse;
    }
  }
  return s;
}

inline Reference referenceForward(const FaData& x) {
  const FaCase& c = x.c;
  const FaProblem& p = x.problem;
  Reference ref;
  for (int64_t b = 0; b < x.g.batches; ++b) {
    const FaBatch& batch = p.batches[static_cast<size_t>(b)];
    const int64_t vb = viewBatch(c, b), kvHead0 = c.n1 / c.n2;
    std::vector<double> out(static_cast<size_t>(c.n1 * batch.s1 * c.dv)), mx(static_cast<size_t>(c.n1 * batch.s1)),
        sm(mx.size());
    for (int64_t n1 = 0; n1 < c.n1; ++n1) {
      const std::vector<double> s = referenceScores(x, b, n1);
      for (int64_t i = 0; i < batch.s1; ++i) {
        double m = -INFINITY;
        for (int64_t j = 0; j < batch.s2; ++j) {
          const double v = s[static_cast<size_t>(i * batch.s2 + j)];
          if (!std::isnan(v)) m = std::max(m, v);
        }
        const size_t row = static_cast<size_t>(n1 * batch.s1 + i);
        if (m == -INFINITY) {
          mx[row] = -FLT_MAX;
          sm[row] = FLT_MAX;
          continue;  // out row stays 0
        }
        double l = 0.0;
        for (int64_t j = 0; j < batch.s2; ++j) {
          const double v = s[static_cast<size_t>(i * batch.s2 + j)];
          if (!std::isnan(v)) l += std::exp(v - m);
        }
        mx[row] = m;
        sm[row] = l;
        for (int64_t j = 0; j < batch.s2; ++j) {
          const double v = s[static_cast<size_t>(i * batch.s2 + j)];
          if (std::isnan(v) || !kernels::faKeep(p.dropout, batch, n1, i, j)) continue;
          const double pd = std::exp(v - m) / l * (p.dropout.kind == FaDropoutKind::None ? 1.0 : p.dropout.scale);
          for (int64_t col = 0; col < c.dv; ++col) {
            out[static_cast<size_t>((n1 * batch.s1 + i) * c.dv + col)] +=
                pd * x.v.at(vb, n1 / kvHead0, batch.kvFirst + j, col);
          }
        }
      }
    }
    ref.out.push_back(out);
    ref.rowMax.push_back(mx);
    ref.rowSum.push_back(sm);
  }
  return ref;
}

/** The backward reference from the statistics given to the kernel (givenMax / givenSum) and its attentionIn. */
inline Reference referenceBackward(const FaData& x) {
  const FaCase& c = x.c;
  const FaProblem& p = x.problem;
  const int64_t dq = c.d + c.dRope, group = c.n1 / c.n2;
  Reference ref;
  for (int64_t b = 0; b < x.g.batches; ++b) {
    const FaBatch& batch = p.batches[static_cast<size_t>(b)];
    const int64_t vb = viewBatch(c, b), s1 = batch.s1, s2 = batch.s2;
    std::vector<double> gq(static_cast<size_t>(c.n1 * s1 * dq)), gk(static_cast<size_t>(c.n2 * s2 * dq)),
        gv(static_cast<size_t>(c.n2 * s2 * c.dv));
    const auto qAt = [&](int64_t n, int64_t i, int64_t e) {
      return e < c.d ? x.q.at(vb, n, batch.qFirst + i, e) : x.qRope.at(vb, n, batch.qFirst + i, e - c.d);
    };
    const auto kAt = [&](int64_t n, int64_t j, int64_t e) {
      return e < c.d ? x.k.at(vb, n, batch.kvFirst + j, e) : x.kRope.at(vb, n, batch.kvFirst + j, e - c.d);
    };
    for (int64_t n1 = 0; n1 < c.n1; ++n1) {
      const int64_t n2 = n1 / group;
      const std::vector<double> s = referenceScores(x, b, n1);
      for (int64_t i = 0; i < s1; ++i) {
        const int64_t at = statsIndex(batch, n1, i);
        const double m = x.givenMax[static_cast<size_t>(at)], l = x.givenSum[static_cast<size_t>(at)];
        double dRow = 0.0;
        for (int64_t col = 0; col < c.dv; ++col) {
          dRow += x.dy.at(vb, n1, batch.qFirst + i, col) * x.attentionIn.at(vb, n1, batch.qFirst + i, col);
        }
        for (int64_t j = 0; j < s2; ++j) {
          const double v = s[static_cast<size_t>(i * s2 + j)];
          if (std::isnan(v) || m == -FLT_MAX) continue;  // P = 0
          const double prob = std::exp(v - m) / l;
          const double keep = kernels::faKeep(p.dropout, batch, n1, i, j) ? 1.0 : 0.0;
          const double dropScale = p.dropout.kind == FaDropoutKind::None ? 1.0 : p.dropout.scale;
          double dProb = 0.0;
          for (int64_t col = 0; col < c.dv; ++col) {
            const double dy = x.dy.at(vb, n1, batch.qFirst + i, col);
            dProb += dy * x.v.at(vb, n2, batch.kvFirst + j, col);
            gv[static_cast<size_t>((n2 * s2 + j) * c.dv + col)] += prob * keep * dropScale * dy;
          }
          const double ds = prob * (dProb * keep * dropScale - dRow) * p.scale;
          for (int64_t e = 0; e < dq; ++e) {
            gq[static_cast<size_t>((n1 * s1 + i) * dq + e)] += ds * kAt(n2, j, e);
            gk[static_cast<size_t>((n2 * s2 + j) * dq + e)] += ds * qAt(n1, i, e);
          }
        }
      }
    }
    ref.dq.push_back(gq);
    ref.dk.push_back(gk);
    ref.dv.push_back(gv);
  }
  return ref;
}

/** Gives the backward the reference statistics (rounded to float) and the reference out (rounded to the dtype). */
inline void setBackwardInputs(FaData& x, const Reference& forward) {
  const FaCase& c = x.c;
  x.givenMax.assign(static_cast<size_t>(x.statsFloats), 0.0f);
  x.givenSum.assign(static_cast<size_t>(x.statsFloats), 0.0f);
  for (int64_t b = 0; b < x.g.batches; ++b) {
    const FaBatch& batch = x.problem.batches[static_cast<size_t>(b)];
    for (int64_t n1 = 0; n1 < c.n1; ++n1) {
      for (int64_t i = 0; i < batch.s1; ++i) {
        const size_t row = static_cast<size_t>(n1 * batch.s1 + i);
        const int64_t at = statsIndex(batch, n1, i);
        for (int64_t lane = 0; lane < 8; ++lane) {
          x.givenMax[static_cast<size_t>(at + lane)] = static_cast<float>(forward.rowMax[static_cast<size_t>(b)][row]);
          x.givenSum[static_cast<size_t>(at + lane)] = static_cast<float>(forward.rowSum[static_cast<size_t>(b)][row]);
        }
        for (int64_t col = 0; col < c.dv; ++col) {
          x.attentionIn.set(
              viewBatch(c, b), n1, batch.qFirst + i, col,
              forward.out[static_cast<size_t>(b)][row * static_cast<size_t>(c.dv) + static_cast<size_t>(col)]);
        }
      }
    }
  }
}

/** Runs the forward with `threads` workers (and as many pool threads) and the given table. */
inline void runForward(FaData& x, int threads, const kernels::FaKernelTable& table) {
  kernels::FaForwardIo io;
  io.q = x.q.view;
  io.k = x.k.view;
  io.v = x.v.view;
  io.qRope = x.qRope.view;
  io.kRope = x.kRope.view;
  io.out = x.out.view;
  io.softmaxMax = x.softmaxMax.data();
  io.softmaxSum = x.softmaxSum.data();
  kernels::FaSchedule schedule = kernels::faForwardSchedule(x.problem, threads);
  schedule.kernels = &table;
  const size_t bytes = kernels::faScratchBytes(schedule);
  std::vector<uint64_t> scratch(bytes / 8 + 16);
  void* aligned = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) / 64 * 64);
  setThreadCount(threads);
  kernels::faForward(x.problem, schedule, io, aligned);
  setThreadCount(0);
}

inline void runBackward(FaData& x, int threads, const kernels::FaKernelTable& table) {
  kernels::FaBackwardIo io;
  io.q = x.q.view;
  io.k = x.k.view;
  io.v = x.v.view;
  io.qRope = x.qRope.view;
  io.kRope = x.kRope.view;
  io.dy = x.dy.view;
  io.attentionIn = x.attentionIn.view;
  io.softmaxMax = x.givenMax.data();
  io.softmaxSum = x.givenSum.data();
  io.dq = x.dq.view;
  io.dk = x.dk.view;
  io.dv = x.dv.view;
  io.dqRope = x.dqRope.view;
  io.dkRope = x.dkRope.view;
  kernels::FaSchedule schedule = kernels::faBackwardSchedule(x.problem, threads);
  schedule.kernels = &table;
  const size_t bytes = kernels::faScratchBytes(schedule);
  std::vector<uint64_t> scratch(bytes / 8 + 16);
  void* aligned = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) / 64 * 64);
  setThreadCount(threads);
  kernels::faBackward(x.problem, schedule, io, aligned);
  setThreadCount(0);
}

}  // namespace gradkit::test::fa
