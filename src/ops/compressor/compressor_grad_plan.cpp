#include "ops/compressor/compressor_grad_plan.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/kernel_select.h"
#include "core/parallel.h"
#include "core/tile_path.h"

namespace gradkit::ops {
namespace {

// A rows per chunk: the dW GEMM's K per call (its fp32 accumulator is re-read once per chunk) and the M of the dX
// GEMM (two 512-row tiles); the chunk buffers stay at a few MB (H = 4096: A 8 MB for coff 2, x / dX 16 MB).
constexpr int64_t kChunkRows = 1024;
// Channels per vector-pass piece: 64 lanes (8 AVX2 vectors); D = 128 gives 2 pieces, D = 512 gives 8.
constexpr int64_t kPieceWidth = 64;
// Bound on pieceWidth (the column sums of two blocks live on the stack).
constexpr int64_t kMaxPieceWidth = 512;
// Padding of every GEMM operand's rows (floats): leading dims off the powers of two (2*coff*D, H) keep rows from
// sharing cache sets; oneDNN's sgemm runs 3-8% faster on this machine with them (measured, single thread).
constexpr int64_t kRowPadding = 16;

// Units (one per block) and segments (routed token runs) of the problem, in output-row order.
void mapBlocks(CompressorGradPlan& plan) {
  const CompressorProblem& p = plan.problem;
  const int64_t cr = p.cmpRatio;
  const int64_t bshRows = p.th ? 0 : compressorBatchRows(p.seqLen, cr);
  int64_t packed = 0, compact = 0;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t n = p.blocks(b);
    if (n == 0) continue;
    const int64_t sp = p.start(b), q0 = sp / cr;
    const int64_t firstRow = p.th ? packed : b * bshRows;
    plan.segments.push_back({compact, p.firstToken(b), (q0 + n) * cr - sp});
    for (int64_t j = 0; j < n; ++j) {
      CompressorGradUnit unit;
      unit.outputRow = firstRow + j;
      unit.compactRow = compact;
      unit.firstR = j == 0 ? sp % cr : 0;
      unit.count = cr - unit.firstR;
      unit.hasNext = j + 1 < n;
      plan.units.push_back(unit);
      compact += unit.count;
    }
    packed += n;
  }
  plan.rows = compact;
}

// The GEMMs of the chunks (see the header) and their shared scratch.
void planGemms(CompressorGradPlan& plan) {
  const CompressorProblem& p = plan.problem;
  const int64_t wide = 2 * p.channels(), hidden = p.hidden, ldA = plan.ldA, ldH = plan.ldH;
  const int64_t chunks = ceilDiv(plan.rows, plan.chunkRows);
  const int64_t lastRows = plan.rows - (chunks - 1) * plan.chunkRows;
  const auto add = [&plan](const GemmShape& shape) {
    plan.gemms.push_back(std::make_unique<Gemm>(shape));
    return static_cast<int>(plan.gemms.size() - 1);
  };
  const aclDataType type = plan.bf16Products ? ACL_BF16 : ACL_FLOAT;
  const auto dx = [&](int64_t m) {  // rowChunk[m, H] = aChunk[m, 2C] . weights[2C, H]
    GemmShape s;
    s.m = m, s.n = hidden, s.k = wide, s.lda = ldA, s.ldb = ldH, s.ldc = ldH, s.inputType = type;
    return add(s);
  };
  const auto dw = [&](int64_t k, float beta) {  // dwAccumulator[2C, H] (+)= aChunk[k, 2C]^T . x chunk[k, H]
    GemmShape s;
    s.m = wide, s.n = hidden, s.k = k, s.transA = true, s.lda = ldA, s.ldb = ldH, s.ldc = ldH, s.beta = beta;
    s.inputType = type;
    return add(s);
  };
  plan.dxFull = dx(plan.chunkRows);
  plan.dxLast = lastRows == plan.chunkRows ? plan.dxFull : dx(lastRows);
  plan.dwFirst = dw(plan.chunkRows, 0.0f);
  if (chunks > 1) {
    if (chunks > 2 || lastRows == plan.chunkRows) plan.dwFull = dw(plan.chunkRows, 1.0f);
    plan.dwLast = lastRows == plan.chunkRows ? plan.dwFull : dw(lastRows, 1.0f);
  }
  uint64_t scratch = 0;
  for (const auto& gemm : plan.gemms) scratch = std::max<uint64_t>(scratch, gemm->scratchBytes());
  plan.gemmScratch = plan.workspace.book("GEMM scratch", scratch);
}

// The dense inputs and outputs of a run.
struct Buffers {
  const uint16_t* x;
  const uint16_t* wkv;
  const uint16_t* wgate;
  const uint16_t* dCmpKv;
  const float* softmaxScore;
  const float* kv;
  uint16_t* dX;
  uint16_t* dWkv;
  uint16_t* dWgate;
  float* dApe;
};

// The x row of A row `row`.
int64_t tokenOf(const CompressorGradPlan& plan, int64_t row) {
  const auto after =
      std::upper_bound(plan.segments.begin(), plan.segments.end(), row,
                       [](int64_t value, const CompressorGradSegment& s) { return value < s.compactRow; });
  const CompressorGradSegment& s = *(after - 1);
  return s.tokenRow + (row - s.compactRow);
}

// dX rows no block routes to: zeros.
void zeroUnroutedRows(const CompressorGradPlan& plan, uint16_t* dX) {
  const int64_t hidden = plan.problem.hidden;
  const auto zero = [&](int64_t first, int64_t last) {
    parallelFor(last - first, 64, [&](int64_t begin, int64_t end) {
      std::memset(dX + (first + begin) * hidden, 0, static_cast<size_t>((end - begin) * hidden) * sizeof(uint16_t));
    });
  };
  int64_t next = 0;
  for (const CompressorGradSegment& s : plan.segments) {
    if (s.tokenRow > next) zero(next, s.tokenRow);
    next = s.tokenRow + s.count;
  }
  if (plan.problem.tokens > next) zero(next, plan.problem.tokens);
}

// Step 1 for A rows [k0, k1) (chunk `chunk`): channel pieces in parallel, blocks in order within each.
void vectorPass(const CompressorGradPlan& plan, const Buffers& io, float* a, float* apeSum, float* apeComp,
                int64_t chunk, int64_t k0, int64_t k1) {
  const CompressorProblem& p = plan.problem;
  const int64_t d = p.headDim, c = p.channels(), n = p.blockRows(), coff = p.coff, ldA = plan.ldA;
  const int64_t pieces = ceilDiv(d, plan.pieceWidth);
  const auto block = [&](int64_t row, int64_t d0, int64_t width) {
    kernels::CompressorGradBlock b;
    b.s = io.softmaxScore + row * n * d + d0;
    b.k = io.kv + row * n * d + d0;
    b.rows = n, b.ld = d, b.width = width;
    return b;
  };
  parallelFor(pieces, 1, [&](int64_t begin, int64_t end) {
    float first[2 * kMaxPieceWidth], second[2 * kMaxPieceWidth];  // wHi then wLo
    for (int64_t piece = begin; piece < end; ++piece) {
      const int64_t d0 = piece * plan.pieceWidth, width = std::min(plan.pieceWidth, d - d0);
      float* own = first;
      float* next = second;
      int64_t nextRow = -1;  // the output row whose sums `next` holds
      for (auto u = static_cast<size_t>(plan.chunkFirstUnit[chunk]);
           u < plan.units.size() && plan.units[u].compactRow < k1; ++u) {
        const CompressorGradUnit& unit = plan.units[u];
        const int64_t i0 = std::max<int64_t>(0, k0 - unit.compactRow);
        const int64_t i1 = std::min(unit.count, k1 - unit.compactRow);
        const int64_t aRow = unit.compactRow + i0 - k0;
        if (nextRow == unit.outputRow) {
          std::swap(own, next);  // the sums of this block were made for the previous unit's prev half
        } else {
          plan.kernels->columnSums(block(unit.outputRow, d0, width), own, own + kMaxPieceWidth);
        }
        kernels::CompressorGradRoute route;
        route.half = plan.half;
        route.coff = coff;
        route.r0 = unit.firstR + i0;
        route.count = i1 - i0;
        route.ldA = ldA;
        route.ldApe = c;
        const auto routeHalf = [&](int64_t row, const float* w, int64_t h) {
          route.block = block(row, d0, width);
          route.dC = io.dCmpKv + row * d + d0;
          route.wHi = w;
          route.wLo = w + kMaxPieceWidth;
          route.h = h;
          route.aKv = a + aRow * ldA + h * d + d0;
          route.aScore = route.aKv + c;
          route.apeSum = apeSum + h * d + d0;
          route.apeComp = apeComp + h * d + d0;
          plan.kernels->route(route);
        };
        routeHalf(unit.outputRow, own, coff - 1);  // the cur half: this block's own tokens
        if (coff == 2) {
          if (unit.hasNext) {  // the next block's prev half reads these tokens too
            plan.kernels->columnSums(block(unit.outputRow + 1, d0, width), next, next + kMaxPieceWidth);
            nextRow = unit.outputRow + 1;
            routeHalf(unit.outputRow + 1, next, 0);
          } else {  // the batch's last block: no block reads these tokens through the prev projection
            for (int64_t i = 0; i < route.count; ++i) {
              float* row = a + (aRow + i) * ldA + d0;
              std::fill_n(row, width, 0.0f);
              std::fill_n(row + c, width, 0.0f);
            }
          }
        }
      }
    }
  });
}

// A row of `count` values of x's dtype as a GEMM operand at `to`: its bf16 bits (bf16 path) or widened to fp32.
void operandRow(const CompressorGradPlan& plan, const uint16_t* from, void* to, int64_t count) {
  if (plan.bf16Products) {
    std::memcpy(to, from, static_cast<size_t>(count) * sizeof(uint16_t));
  } else {
    plan.kernels->widen(plan.half, from, static_cast<float*>(to), count);
  }
}

// Row `row` of an operand buffer whose rows lie `ld` elements apart (bf16 or fp32 elements, as operandRow writes).
void* operandRowAt(const CompressorGradPlan& plan, void* base, int64_t row, int64_t ld) {
  const size_t element = plan.bf16Products ? sizeof(uint16_t) : sizeof(float);
  return static_cast<char*>(base) + static_cast<size_t>(row * ld) * element;
}

// The GEMM operands of a chunk: A (fp32 as made; on the bf16 path also rounded into aBf16), x rows (in rowChunk
// widened, or in xBf16), the weights; rowChunk also takes the fp32 dX rows.
struct ChunkOperands {
  float* a;
  uint16_t* aBf16;  // bf16 path only
  float* rowChunk;
  void* x;  // rowChunk, or xBf16 on the bf16 path
  const void* weights;
};

// Steps 2 and 3 for A rows [k0, k1).
void matmulPass(const CompressorGradPlan& plan, const Buffers& io, const ChunkOperands& ops, float* dw, void* scratch,
                int64_t chunk, int64_t k0, int64_t k1) {
  const int64_t hidden = plan.problem.hidden, ldH = plan.ldH, ldA = plan.ldA, rows = k1 - k0;
  const int64_t wide = 2 * plan.problem.channels();
  const bool last = k1 == plan.rows;
  const void* a = ops.a;
  if (plan.bf16Products) {
    parallelFor(rows, 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) plan.kernels->narrow(plan.half, ops.a + i * ldA, ops.aBf16 + i * ldA, wide);
    });
    a = ops.aBf16;
  }
  plan.gemms[static_cast<size_t>(last ? plan.dxLast : plan.dxFull)]->run(a, ops.weights, ops.rowChunk, scratch);
  parallelFor(rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      plan.kernels->narrow(plan.half, ops.rowChunk + i * ldH, io.dX + tokenOf(plan, k0 + i) * hidden, hidden);
    }
  });
  parallelFor(rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      operandRow(plan, io.x + tokenOf(plan, k0 + i) * hidden, operandRowAt(plan, ops.x, i, ldH), hidden);
    }
  });
  const int gemm = chunk == 0 ? plan.dwFirst : last ? plan.dwLast : plan.dwFull;
  plan.gemms[static_cast<size_t>(gemm)]->run(a, ops.x, dw, scratch);
}

void runChunks(const CompressorGradPlan& plan, const Buffers& io, void* memory) {
  const CompressorProblem& p = plan.problem;
  const int64_t c = p.channels(), hidden = p.hidden, ldH = plan.ldH, apeElements = p.cmpRatio * c;
  float* a = plan.aChunk.in<float>(memory);
  float* rowChunk = plan.rowChunk.in<float>(memory);
  void* weights = plan.weights.in(memory);
  const ChunkOperands ops{a, plan.bf16Products ? plan.aBf16.in<uint16_t>(memory) : nullptr, rowChunk,
                          plan.bf16Products ? static_cast<void*>(plan.xBf16.in(memory)) : rowChunk, weights};
  float* dw = plan.dwAccumulator.in<float>(memory);
  float* apeSum = plan.apeSum.in<float>(memory);
  float* apeComp = plan.apeComp.in<float>(memory);
  void* scratch = plan.gemmScratch.booked() ? plan.gemmScratch.in(memory) : nullptr;

  parallelFor(2 * c, 16, [&](int64_t begin, int64_t end) {  // [wkv; wgate] as the GEMM operand
    for (int64_t row = begin; row < end; ++row) {
      const uint16_t* from = row < c ? io.wkv + row * hidden : io.wgate + (row - c) * hidden;
      operandRow(plan, from, operandRowAt(plan, weights, row, ldH), hidden);
    }
  });
  std::fill_n(apeSum, apeElements, 0.0f);
  std::fill_n(apeComp, apeElements, 0.0f);
  zeroUnroutedRows(plan, io.dX);

  const int64_t chunks = ceilDiv(plan.rows, plan.chunkRows);
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const int64_t k0 = chunk * plan.chunkRows, k1 = std::min(plan.rows, k0 + plan.chunkRows);
    vectorPass(plan, io, a, apeSum, apeComp, chunk, k0, k1);
    matmulPass(plan, io, ops, dw, scratch, chunk, k0, k1);
  }

  parallelFor(2 * c, 16, [&](int64_t begin, int64_t end) {  // [dWkv; dWgate] rounded once
    for (int64_t row = begin; row < end; ++row) {
      uint16_t* to = row < c ? io.dWkv + row * hidden : io.dWgate + (row - c) * hidden;
      plan.kernels->narrow(plan.half, dw + row * ldH, to, hidden);
    }
  });
  for (int64_t i = 0; i < apeElements; ++i) io.dApe[i] = apeSum[i] - apeComp[i];
}

// No block at all: every output is zero.
void zeroOutputs(const CompressorGradPlan& plan, const Buffers& io) {
  const CompressorProblem& p = plan.problem;
  const auto weightElements = static_cast<size_t>(p.channels() * p.hidden);
  zeroUnroutedRows(plan, io.dX);
  std::memset(io.dWkv, 0, weightElements * sizeof(uint16_t));
  std::memset(io.dWgate, 0, weightElements * sizeof(uint16_t));
  std::fill_n(io.dApe, p.cmpRatio * p.channels(), 0.0f);
}

}  // namespace

CompressorGradPlan planCompressorGrad(const CompressorGradArgs& args) { return planCompressorGrad(args, {}); }

CompressorGradPlan planCompressorGrad(const CompressorGradArgs& args, const CompressorGradOptions& options) {
  CompressorGradPlan plan;
  plan.problem =
      compressorProblemOf(*args.x, *args.wkv, args.cuSeqlens, args.seqused, args.startPos, args.cmpRatio, args.coff);
  const CompressorProblem& p = plan.problem;
  plan.half = args.x->dtype == ACL_FLOAT16;
  const TilePath path = options.tilePath.value_or(chooseTilePath(ACL_BF16, ProductEngine::Gemm).path);
  plan.bf16Products = args.x->dtype == ACL_BF16 && path == TilePath::NativeBf16;

  WorkspaceBooking& booking = plan.workspace;
  const auto stage = [&booking](const aclTensor& view, const char* name) {
    return StagedTensor::planUnlessDense(view, name, booking);
  };
  plan.x = stage(*args.x, "x staging");
  plan.wkv = stage(*args.wkv, "wkv staging");
  plan.wgate = stage(*args.wgate, "wgate staging");
  plan.dCmpKv = stage(*args.dCmpKv, "dCmpKv staging");
  plan.softmaxScore = stage(*args.softmaxScore, "softmaxScore staging");
  plan.kv = stage(*args.kv, "kv staging");
  plan.dX = stage(*args.dX, "dX staging");
  plan.dWkv = stage(*args.dWkv, "dWkv staging");
  plan.dWgate = stage(*args.dWgate, "dWgate staging");
  plan.dApe = stage(*args.dApe, "dApe staging");

  mapBlocks(plan);
  plan.pieceWidth = std::clamp<int64_t>(options.pieceWidth > 0 ? options.pieceWidth : kPieceWidth, 1, kMaxPieceWidth);
  plan.kernels = &chooseKernels(kernels::kCompressorGradSimdKernels, kernels::kCompressorGradScalarKernels);
  if (plan.rows == 0) return plan;  // no block: the run writes zeros

  plan.chunkRows = std::min(plan.rows, options.chunkRows > 0 ? options.chunkRows : kChunkRows);
  const int64_t chunks = ceilDiv(plan.rows, plan.chunkRows);
  for (int64_t chunk = 0, u = 0; chunk < chunks; ++chunk) {
    const int64_t k0 = chunk * plan.chunkRows;
    while (plan.units[static_cast<size_t>(u)].compactRow + plan.units[static_cast<size_t>(u)].count <= k0) ++u;
    plan.chunkFirstUnit.push_back(u);
  }
  plan.ldA = 2 * p.channels() + kRowPadding;
  plan.ldH = p.hidden + kRowPadding;
  const auto wide = static_cast<uint64_t>(2 * p.channels()), ldA = static_cast<uint64_t>(plan.ldA);
  const auto ldH = static_cast<uint64_t>(plan.ldH), chunkRows = static_cast<uint64_t>(plan.chunkRows);
  const auto ape = static_cast<uint64_t>(p.cmpRatio * p.channels());
  const size_t operandBytes = plan.bf16Products ? sizeof(uint16_t) : sizeof(float);
  plan.weights = booking.bookArray("[wkv; wgate] as GEMM operand", wide * ldH, operandBytes);
  plan.aChunk = booking.bookArray("A chunk [dNewKv | dNewScore]", chunkRows * ldA, sizeof(float));
  plan.rowChunk = booking.bookArray("dX / x chunk in fp32", chunkRows * ldH, sizeof(float));
  if (plan.bf16Products) {
    plan.aBf16 = booking.bookArray("A chunk in bf16", chunkRows * ldA, sizeof(uint16_t));
    plan.xBf16 = booking.bookArray("x chunk in bf16", chunkRows * ldH, sizeof(uint16_t));
  }
  plan.dwAccumulator = booking.bookArray("[dWkv; dWgate] accumulator", wide * ldH, sizeof(float));
  plan.apeSum = booking.bookArray("dApe sums", ape, sizeof(float));
  plan.apeComp = booking.bookArray("dApe compensations", ape, sizeof(float));
  planGemms(plan);
  return plan;
}

aclnnStatus CompressorGradPlan::run(void* memory) const {
  Buffers io{};
  io.x = static_cast<const uint16_t*>(x.read(memory));
  io.wkv = static_cast<const uint16_t*>(wkv.read(memory));
  io.wgate = static_cast<const uint16_t*>(wgate.read(memory));
  io.dCmpKv = static_cast<const uint16_t*>(dCmpKv.read(memory));
  io.softmaxScore = static_cast<const float*>(softmaxScore.read(memory));
  io.kv = static_cast<const float*>(kv.read(memory));
  io.dX = static_cast<uint16_t*>(dX.target(memory));
  io.dWkv = static_cast<uint16_t*>(dWkv.target(memory));
  io.dWgate = static_cast<uint16_t*>(dWgate.target(memory));
  io.dApe = static_cast<float*>(dApe.target(memory));

  if (rows == 0) {
    zeroOutputs(*this, io);
  } else {
    runChunks(*this, io, memory);
  }

  dX.writeBack(memory);
  dWkv.writeBack(memory);
  dWgate.writeBack(memory);
  dApe.writeBack(memory);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
