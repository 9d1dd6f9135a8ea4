// The GEMM wrapper on oneDNN matmul.
//
// Determinism: oneDNN's own threading splits the K reduction over threads when M x N is small, so
// its bits depend on the thread count. Instead, C is cut into output tiles whose sizes depend only
// on the shape; each tile is one single-threaded oneDNN matmul over the whole K, and the pool runs
// the tiles. Every element is then summed by the same kernel in the same order whatever the
// thread count. The primitives (one per distinct tile shape, at most four) are made in the
// constructor; run() only wraps pointers.
//
// bf16: oneDNN 2.6 has bf16 kernels only from AVX-512 on (elsewhere it refuses bf16 or offers its
// reference loop). There the operands are widened to fp32 (exact) and the fp32 kernel runs: the
// same exact products and fp32 accumulation, only faster.
#include "core/gemm.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <oneapi/dnnl/dnnl.hpp>
#include <stdexcept>
#include <string>

#include "core/parallel.h"
#include "gradkit/float_convert.h"

namespace gradkit {
namespace {

using dnnl::memory;

/** The CPU engine shared by every primitive (oneDNN engines are thread-safe). */
const dnnl::engine& cpuEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

/** Sets the OpenMP thread count of the calling thread for a scope (oneDNN reads it). */
class ScopedOmpThreads {
 public:
  explicit ScopedOmpThreads(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~ScopedOmpThreads() { omp_set_num_threads(saved_); }
  ScopedOmpThreads(const ScopedOmpThreads&) = delete;
  ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;

 private:
  int saved_;
};

[[noreturn]] void reject(const std::string& what) { throw std::runtime_error("gradkit::Gemm: " + what); }

/** `bytes` rounded up to the 64-byte alignment of every scratch region. */
size_t aligned(size_t bytes) { return (bytes + 63) / 64 * 64; }

/** Memory descriptor of op(X) as [outer, inner] where X is stored row-major, maybe transposed. */
memory::desc operandDesc(int64_t outer, int64_t inner, bool transposed, int64_t ld, memory::data_type type) {
  const memory::dims strides = transposed ? memory::dims{1, ld} : memory::dims{ld, 1};
  return memory::desc({outer, inner}, type, strides);
}

/** One single-threaded primitive for tiles of one shape. */
struct TileKernel {
  dnnl::matmul primitive;
  memory::desc a, b, c, scratch;
};

/**
 * Output tile sizes, from the shape only. oneDNN 2.6's single-threaded sgemm takes a slow,
 * alignment-sensitive path (no operand copy) for tiles below about 512 x 768 when the leading
 * dims are powers of two (measured on AVX2: 35-45 vs 75-85 GFLOP/s per core), so tiles cover at
 * least 512 x 1024 (or 1024 rows when the whole N is narrower). A tail shorter than half a tile
 * joins the previous tile.
 */
void chooseTiles(int64_t m, int64_t n, int64_t& tileM, int64_t& tileN) {
  constexpr int64_t kTileN = 1024;
  tileN = std::min(n, kTileN);
  tileM = std::min(m, n >= kTileN ? int64_t{512} : int64_t{1024});
}

/** Tiles along a dim of `size`: full tiles, the last one absorbing a remainder under half a tile. */
int64_t tileCount(int64_t size, int64_t tile) {
  const int64_t full = size / tile;
  const int64_t rest = size - full * tile;
  if (full == 0) return 1;
  return rest > 0 && 2 * rest >= tile ? full + 1 : full;
}

}  // namespace

struct Gemm::Impl {
  GemmShape shape;
  bool widenBf16 = false;  // bf16 inputs widened to fp32 before fp32 primitives
  int64_t aExtent = 0, bExtent = 0;
  int64_t tileM = 0, tileN = 0, tilesM = 0, tilesN = 0;
  TileKernel kernels[2][2];  // [tile is the M tail][tile is the N tail]
  // Scratch layout (run()'s caller provides it): widened A, widened B (bf16 on machines without a bf16 kernel),
  // then one oneDNN scratchpad per slot. Tiles are dealt to `slots` fixed slices, each with its own scratchpad,
  // so no two threads share one, whatever the pool does.
  int slots = 1;
  size_t wideABytes = 0, wideBBytes = 0, slotBytes = 0;
};

Gemm::Gemm(const GemmShape& shapeIn, int slots) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.shape = shapeIn;
  s.slots = std::max(slots, 1);
  GemmShape& g = s.shape;
  if (const std::string problem = completeGemmShape(g); !problem.empty()) reject(problem);
  if (g.sums != GemmSums::Sequential) reject("expected Sequential sums (Bf16Pairs is TileGemm's)");
  if (g.m == 0 || g.n == 0 || g.k == 0) return;  // handled in run() without oneDNN

  s.aExtent = gemmExtentA(g);
  s.bExtent = gemmExtentB(g);
  chooseTiles(g.m, g.n, s.tileM, s.tileN);
  s.tilesM = tileCount(g.m, s.tileM);
  s.tilesN = tileCount(g.n, s.tileN);

  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (g.alpha != 1.0f) attr.set_output_scales(0, {g.alpha});
  if (g.beta != 0.0f) {
    dnnl::post_ops ops;
    ops.append_sum(g.beta);
    attr.set_post_ops(ops);
  }

  const auto makeKernel = [&](int64_t rows, int64_t cols, memory::data_type type, TileKernel& kernel) {
    kernel.a = operandDesc(rows, g.k, g.transA, g.lda, type);
    kernel.b = operandDesc(g.k, cols, g.transB, g.ldb, type);
    kernel.c = memory::desc({rows, cols}, memory::data_type::f32, memory::dims{g.ldc, 1});
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(kernel.a, kernel.b, kernel.c), attr, cpuEngine());
    if (type == memory::data_type::bf16 && std::strncmp(pd.impl_info_str(), "ref", 3) == 0) {
      throw dnnl::error(dnnl_unimplemented, "only the reference bf16 kernel");
    }
    kernel.scratch = pd.scratchpad_desc();
    kernel.primitive = dnnl::matmul(pd);
  };
  const auto makeAll = [&](memory::data_type type) {
    const int64_t tailM = g.m - (s.tilesM - 1) * s.tileM;
    const int64_t tailN = g.n - (s.tilesN - 1) * s.tileN;
    for (int im = 0; im < 2; ++im) {
      for (int in = 0; in < 2; ++in) {
        // Tile kinds that occur: full tiles exist when there is more than one tile in that dim.
        const bool occursM = im == 1 || s.tilesM > 1;
        const bool occursN = in == 1 || s.tilesN > 1;
        if (occursM && occursN) makeKernel(im ? tailM : s.tileM, in ? tailN : s.tileN, type, s.kernels[im][in]);
      }
    }
  };

  ScopedOmpThreads scoped(1);  // every tile kernel is planned for, and run on, one thread
  try {
    if (g.inputType == ACL_BF16) {
      try {
        makeAll(memory::data_type::bf16);
      } catch (const dnnl::error&) {
        s.widenBf16 = true;
      }
    }
    if (g.inputType == ACL_FLOAT || s.widenBf16) makeAll(memory::data_type::f32);
  } catch (const dnnl::error& e) {
    reject(std::string("oneDNN rejected the shape: ") + e.what());
  }
  if (s.widenBf16) {
    s.wideABytes = aligned(static_cast<size_t>(s.aExtent) * sizeof(float));
    s.wideBBytes = aligned(static_cast<size_t>(s.bExtent) * sizeof(float));
  }
  s.slotBytes = 64;
  for (const auto& row : s.kernels) {
    for (const TileKernel& kernel : row) s.slotBytes = std::max(s.slotBytes, aligned(kernel.scratch.get_size()));
  }
}

size_t Gemm::scratchBytes() const {
  const Impl& s = *impl_;
  if (s.tilesM == 0) return 0;  // an empty product needs none
  return s.wideABytes + s.wideBBytes + static_cast<size_t>(s.slots) * s.slotBytes;
}

Gemm::~Gemm() = default;

const GemmShape& Gemm::shape() const { return impl_->shape; }

void Gemm::run(const void* a, const void* b, float* c, void* scratch) const {
  const Impl& s = *impl_;
  const GemmShape& g = s.shape;
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0) {  // empty sum: C = beta * C (beta == 0 writes zeros, as a plain write would)
    for (int64_t i = 0; i < g.m; ++i) {
      float* row = c + i * g.ldc;
      for (int64_t j = 0; j < g.n; ++j) row[j] = g.beta == 0.0f ? 0.0f : g.beta * row[j];
    }
    return;
  }

  auto* scratchBase = static_cast<char*>(scratch);
  const char* aBytes = static_cast<const char*>(a);
  const char* bBytes = static_cast<const char*>(b);
  size_t elementSize = g.inputType == ACL_BF16 ? 2 : 4;
  if (s.widenBf16) {
    const auto widen = [](const void* from, int64_t count, char* region) {
      const auto* bits = static_cast<const uint16_t*>(from);
      auto* out = reinterpret_cast<float*>(region);
      parallelFor(count, int64_t{1} << 16, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) out[i] = bf16ToFloat(bits[i]);
      });
      return static_cast<const char*>(static_cast<void*>(out));
    };
    aBytes = widen(a, s.aExtent, scratchBase);
    bBytes = widen(b, s.bExtent, scratchBase + s.wideABytes);
    elementSize = 4;
  }

  const int64_t tiles = s.tilesM * s.tilesN;
  const int64_t slots = std::min<int64_t>(s.slots, tiles);
  const auto runSlot = [&](int64_t slot) {
    ScopedOmpThreads scoped(1);
    const dnnl::engine& engine = cpuEngine();
    dnnl::stream stream(engine);
    char* pad = scratchBase + s.wideABytes + s.wideBBytes + static_cast<size_t>(slot) * s.slotBytes;
    for (int64_t tile = slot * tiles / slots; tile < (slot + 1) * tiles / slots; ++tile) {
      const int64_t tm = tile / s.tilesN, tn = tile % s.tilesN;
      const int64_t row = tm * s.tileM, col = tn * s.tileN;
      const TileKernel& kernel = s.kernels[tm == s.tilesM - 1 ? 1 : 0][tn == s.tilesN - 1 ? 1 : 0];
      // Tile origins: row `row` of op(A), column `col` of op(B) and C.
      const int64_t aOffset = g.transA ? row : row * g.lda;
      const int64_t bOffset = g.transB ? col * g.ldb : col;
      memory aMem(kernel.a, engine, const_cast<char*>(aBytes + aOffset * elementSize));
      memory bMem(kernel.b, engine, const_cast<char*>(bBytes + bOffset * elementSize));
      memory cMem(kernel.c, engine, c + row * g.ldc + col);
      memory scratchMem(kernel.scratch, engine, pad);
      kernel.primitive.execute(
          stream,
          {{DNNL_ARG_SRC, aMem}, {DNNL_ARG_WEIGHTS, bMem}, {DNNL_ARG_DST, cMem}, {DNNL_ARG_SCRATCHPAD, scratchMem}});
    }
    stream.wait();
  };
  parallelFor(slots, 1, [&](int64_t begin, int64_t end) {
    for (int64_t slot = begin; slot < end; ++slot) runSlot(slot);
  });
}

}  // namespace gradkit
