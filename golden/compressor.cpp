#include "golden/compressor.h"

#include "gradkit/float_convert.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

// Every sum is a plain sequential loop in a fixed natural order (tokens ascending, block rows in their stored
// interleaved order, channels ascending), one operation per statement, so that the float instantiation is an honest
// naive fp32 computation (no compensation, no wider type).

namespace gradkit::golden {

int64_t CompressorLayout::totalTokens() const { return th ? tokens : batch * seqLen; }
int64_t CompressorLayout::channels() const { return coff * headDim; }
int64_t CompressorLayout::blockRows() const { return coff * cmpRatio; }

int64_t CompressorLayout::firstToken(int64_t b) const { return th ? cuSeqlens[b] : b * seqLen; }
int64_t CompressorLayout::length(int64_t b) const { return th ? cuSeqlens[b + 1] - cuSeqlens[b] : seqLen; }
int64_t CompressorLayout::used(int64_t b) const { return seqused.empty() ? length(b) : seqused[b]; }
int64_t CompressorLayout::start(int64_t b) const { return startPos.empty() ? 0 : startPos[b]; }

int64_t CompressorLayout::blocks(int64_t b) const {
  const int64_t sp = start(b);
  return std::max<int64_t>(0, (sp + used(b)) / cmpRatio - sp / cmpRatio);
}

int64_t CompressorLayout::outputRows() const {
  if (!th) return batch * ((seqLen + cmpRatio - 1) / cmpRatio);
  return std::min(tokens, tokens / cmpRatio + batch);
}

int64_t CompressorLayout::outputRow(int64_t b, int64_t j) const {
  if (!th) return b * ((seqLen + cmpRatio - 1) / cmpRatio) + j;
  int64_t row = 0;
  for (int64_t before = 0; before < b; ++before) row += blocks(before);
  return row + j;
}

void checkCompressorLayout(const CompressorLayout& layout) {
  const auto fail = [](const std::string& what) { throw std::invalid_argument("golden::compressor: " + what); };
  const CompressorLayout& l = layout;
  if (l.batch < 0 || l.hidden < 1 || l.headDim < 1) fail("batch must be >= 0, hidden and headDim positive");
  if (l.coff != 1 && l.coff != 2) fail("coff must be 1 or 2");
  if (l.cmpRatio < 1) fail("cmpRatio must be positive");
  if (l.th) {
    if (l.tokens < 0) fail("tokens must be >= 0");
    if (static_cast<int64_t>(l.cuSeqlens.size()) != l.batch + 1) fail("cuSeqlens must hold batch + 1 values");
    if (l.cuSeqlens[0] != 0) fail("cuSeqlens must start at 0");
    for (int64_t b = 0; b < l.batch; ++b)
      if (l.cuSeqlens[b + 1] < l.cuSeqlens[b]) fail("cuSeqlens must be non-decreasing");
    if (l.cuSeqlens[l.batch] > l.tokens) fail("cuSeqlens[B] must not exceed tokens");
  } else {
    if (l.seqLen < 0) fail("seqLen must be >= 0");
    if (!l.cuSeqlens.empty()) fail("cuSeqlens must be empty for BSH");
  }
  if (!l.seqused.empty() && static_cast<int64_t>(l.seqused.size()) != l.batch) fail("seqused must hold batch values");
  if (!l.startPos.empty() && static_cast<int64_t>(l.startPos.size()) != l.batch)
    fail("startPos must hold batch values");
  int64_t total = 0;
  for (int64_t b = 0; b < l.batch; ++b) {
    if (l.used(b) < 0 || l.used(b) > l.length(b)) fail("seqused[b] must lie in [0, len_b]");
    if (l.start(b) < 0) fail("startPos[b] must be >= 0");
    if (!l.th && l.blocks(b) > (l.seqLen + l.cmpRatio - 1) / l.cmpRatio) fail("too many blocks for the BSH rows");
    total += l.blocks(b);
  }
  if (total > l.outputRows()) fail("the compressed rows do not fit the output rows");
}

std::vector<CompressorRow> compressorRowMap(const CompressorLayout& layout) {
  checkCompressorLayout(layout);
  std::vector<CompressorRow> map(static_cast<size_t>(layout.outputRows()));
  int64_t packed = 0;  // TH: rows of the batches before b (outputRow's sum, kept running to stay linear)
  for (int64_t b = 0; b < layout.batch; ++b) {
    const int64_t first = layout.th ? packed : layout.outputRow(b, 0);
    for (int64_t j = 0; j < layout.blocks(b); ++j) map[first + j] = {b, j};
    packed += layout.blocks(b);
  }
  return map;
}

namespace {

// One of the N rows of block j of batch b: its half (0 = prev for coff 2, else cur), its absolute position, and the
// flat token row it comes from (-1 for a padding or cache row).
struct BlockRow {
  int64_t half;
  int64_t position;
  int64_t token;
  bool padding;  // position < 0
  bool cache;    // 0 <= position < sp_b
};

BlockRow blockRow(const CompressorLayout& l, int64_t b, int64_t j, int64_t n) {
  const int64_t cr = l.cmpRatio, coff = l.coff, sp = l.start(b);
  const int64_t r = n / coff, h = n % coff;
  const int64_t q = sp / cr + j;
  const int64_t sourceBlock = q - (coff - 1) + h;
  BlockRow row{h, sourceBlock * cr + r, -1, false, false};
  if (row.position < 0) {
    row.padding = true;
  } else if (row.position < sp) {
    row.cache = true;
  } else {
    const int64_t local = row.position - sp;
    if (local >= l.used(b)) throw std::logic_error("golden::compressor: a block reaches past seqused");
    row.token = l.firstToken(b) + local;
  }
  return row;
}

// dot(a, b) over n values, sequential.
template <class Real>
Real dot(const Real* a, const Real* b, int64_t n) {
  Real sum = 0;
  for (int64_t k = 0; k < n; ++k) {
    const Real product = a[k] * b[k];
    sum = sum + product;
  }
  return sum;
}

}  // namespace

template <class Real>
CompressorOutputs<Real> compressor(const CompressorInputs<Real>& in) {
  const CompressorLayout& l = in.layout;
  const std::vector<CompressorRow> map = compressorRowMap(l);
  const int64_t T = l.totalTokens(), H = l.hidden, D = l.headDim, C = l.channels(), cr = l.cmpRatio;
  const int64_t N = l.blockRows(), rows = l.outputRows();

  CompressorOutputs<Real> out;
  out.cmpKv.assign(static_cast<size_t>(rows * D), Real(0));
  out.softmaxScore.assign(static_cast<size_t>(rows * N * D), Real(0));
  out.kv.assign(static_cast<size_t>(rows * N * D), Real(0));

  // KV and G (with the APE of the token's position) for every used token.
  std::vector<Real> kvProj(static_cast<size_t>(T * C), Real(0)), gProj(static_cast<size_t>(T * C), Real(0));
  for (int64_t b = 0; b < l.batch; ++b) {
    for (int64_t i = 0; i < l.used(b); ++i) {
      const int64_t t = l.firstToken(b) + i;
      const Real* apeRow = in.ape + ((l.start(b) + i) % cr) * C;
      for (int64_t c = 0; c < C; ++c) {
        kvProj[t * C + c] = dot(in.x + t * H, in.wkv + c * H, H);
        const Real gate = dot(in.x + t * H, in.wgate + c * H, H);
        gProj[t * C + c] = gate + apeRow[c];
      }
    }
  }

  std::vector<Real> histKv(static_cast<size_t>(C)), histScore(static_cast<size_t>(C));
  std::vector<Real> z(static_cast<size_t>(N * D)), k(static_cast<size_t>(N * D)), e(static_cast<size_t>(N));
  for (int64_t row = 0; row < rows; ++row) {
    const CompressorRow owner = map[row];
    if (owner.batch < 0) continue;
    // Gather Z and K (interleaved rows) by the position rule of spec 3.4.
    for (int64_t n = 0; n < N; ++n) {
      const BlockRow src = blockRow(l, owner.batch, owner.block, n);
      const int64_t c0 = src.half * D;
      for (int64_t d = 0; d < D; ++d) {
        if (src.padding) {
          k[n * D + d] = 0;
          z[n * D + d] = -std::numeric_limits<Real>::infinity();
        } else if (!src.cache) {
          k[n * D + d] = kvProj[src.token * C + c0 + d];
          z[n * D + d] = gProj[src.token * C + c0 + d];
        }
      }
      if (src.cache) {
        if (!in.history) throw std::invalid_argument("golden::compressor: a block needs the state-cache history");
        in.history(owner.batch, src.position, histKv.data(), histScore.data());
        for (int64_t d = 0; d < D; ++d) {
          k[n * D + d] = histKv[c0 + d];
          z[n * D + d] = histScore[c0 + d];
        }
      }
    }
    // Softmax over the N rows per channel (max subtracted), then the weighted sum.
    Real* score = out.softmaxScore.data() + row * N * D;
    Real* kvOut = out.kv.data() + row * N * D;
    for (int64_t d = 0; d < D; ++d) {
      Real top = -std::numeric_limits<Real>::infinity();
      for (int64_t n = 0; n < N; ++n) top = std::max(top, z[n * D + d]);
      Real sum = 0;
      for (int64_t n = 0; n < N; ++n) {
        const Real shifted = z[n * D + d] - top;
        e[n] = std::exp(shifted);
        sum = sum + e[n];
      }
      Real pooled = 0;
      for (int64_t n = 0; n < N; ++n) {
        const Real s = e[n] / sum;
        score[n * D + d] = s;
        kvOut[n * D + d] = k[n * D + d];
        const Real product = s * k[n * D + d];
        pooled = pooled + product;
      }
      out.cmpKv[row * D + d] = pooled;
    }
  }
  return out;
}

template <class Real>
CompressorGradOutputs<Real> compressorGrad(const CompressorGradInputs<Real>& in) {
  const CompressorLayout& l = in.layout;
  const std::vector<CompressorRow> map = compressorRowMap(l);
  const int64_t T = l.totalTokens(), H = l.hidden, D = l.headDim, C = l.channels(), cr = l.cmpRatio;
  const int64_t N = l.blockRows(), rows = l.outputRows();

  CompressorGradOutputs<Real> out;
  out.dX.assign(static_cast<size_t>(T * H), Real(0));
  out.dWkv.assign(static_cast<size_t>(C * H), Real(0));
  out.dWgate.assign(static_cast<size_t>(C * H), Real(0));
  out.dApe.assign(static_cast<size_t>(cr * C), Real(0));

  // Steps 1-3 per block: dK, dZ, routed to the token of each x-sourced row and to dApe[p mod cr].
  std::vector<Real> dNewKv(static_cast<size_t>(T * C), Real(0)), dNewScore(static_cast<size_t>(T * C), Real(0));
  std::vector<char> routed(static_cast<size_t>(T), 0);
  std::vector<Real> columnSum(static_cast<size_t>(D));
  for (int64_t row = 0; row < rows; ++row) {
    const CompressorRow owner = map[row];
    if (owner.batch < 0) continue;
    const Real* s = in.softmaxScore + row * N * D;
    const Real* k = in.kv + row * N * D;
    const Real* dC = in.dCmpKv + row * D;
    // sum_k S_k * dS'_k with dS' = dC * K, over all N rows (cache and padding rows included).
    for (int64_t d = 0; d < D; ++d) {
      Real sum = 0;
      for (int64_t n = 0; n < N; ++n) {
        const Real dS = dC[d] * k[n * D + d];
        const Real product = s[n * D + d] * dS;
        sum = sum + product;
      }
      columnSum[d] = sum;
    }
    for (int64_t n = 0; n < N; ++n) {
      const BlockRow src = blockRow(l, owner.batch, owner.block, n);
      if (src.padding || src.cache) continue;  // gradient truncated at the call boundary
      routed[src.token] = 1;
      const int64_t c0 = src.half * D;
      Real* apeRow = out.dApe.data() + (src.position % cr) * C + c0;
      for (int64_t d = 0; d < D; ++d) {
        const Real sv = s[n * D + d];
        const Real dK = dC[d] * sv;
        const Real dS = dC[d] * k[n * D + d];
        const Real centered = dS - columnSum[d];
        const Real dZ = sv * centered;
        Real& newKv = dNewKv[src.token * C + c0 + d];
        newKv = newKv + dK;
        Real& newScore = dNewScore[src.token * C + c0 + d];
        newScore = newScore + dZ;
        apeRow[d] = apeRow[d] + dZ;
      }
    }
  }

  if (in.roundRoutedToBf16) {
    for (std::vector<Real>* routedGrad : {&dNewKv, &dNewScore}) {
      for (Real& value : *routedGrad) value = static_cast<Real>(bf16ToFloat(doubleToBf16(value)));
    }
  }

  // Step 4, the matmuls, over routed tokens only (others keep dX = 0 and never touch x). Each element's sum runs in
  // a fixed order: channels ascending (kv then gate) for dX, tokens ascending for dW.
  for (int64_t t = 0; t < T; ++t) {
    if (!routed[t]) continue;
    Real* dx = out.dX.data() + t * H;
    const Real* x = in.x + t * H;
    for (int64_t c = 0; c < C; ++c) {
      const Real gk = dNewKv[t * C + c];
      for (int64_t h = 0; h < H; ++h) {
        const Real product = gk * in.wkv[c * H + h];
        dx[h] = dx[h] + product;
      }
    }
    for (int64_t c = 0; c < C; ++c) {
      const Real gs = dNewScore[t * C + c];
      for (int64_t h = 0; h < H; ++h) {
        const Real product = gs * in.wgate[c * H + h];
        dx[h] = dx[h] + product;
      }
    }
    for (int64_t c = 0; c < C; ++c) {
      const Real gk = dNewKv[t * C + c], gs = dNewScore[t * C + c];
      for (int64_t h = 0; h < H; ++h) {
        const Real kvProduct = gk * x[h];
        out.dWkv[c * H + h] = out.dWkv[c * H + h] + kvProduct;
        const Real gateProduct = gs * x[h];
        out.dWgate[c * H + h] = out.dWgate[c * H + h] + gateProduct;
      }
    }
  }
  return out;
}

template CompressorOutputs<double> compressor(const CompressorInputs<double>&);
template CompressorOutputs<float> compressor(const CompressorInputs<float>&);
template CompressorGradOutputs<double> compressorGrad(const CompressorGradInputs<double>&);
template CompressorGradOutputs<float> compressorGrad(const CompressorGradInputs<float>&);

}  // namespace gradkit::golden
