// gradkit's tile GEMM (core/tile_gemm.h, an internal building block of flash attention, not an aclnn op):
// verify against an fp64 triple loop, and bench single-thread tiles as a ratio of the big-GEMM peak measured
// in the same run. Run the bench with GRADKIT_NUM_THREADS=1 so the peak is the single-thread peak too.
//
// Case keys (besides name and dtype "fp32" | "bf16"):
//   "m", "n", "k":           the tile shape
//   "transA", "transB":      operand layouts (A stored [K, M], B stored [N, K]); default false
//   "alpha", "beta":         default 1 and 0 (verify only; bench uses 1 and 0)
//   "sums":                  "sequential" (default) or "bf16_pairs" (GemmSums::Bf16Pairs: bf16 only; the AVX512-BF16
//                            kernel where the CPU has it, else the scalar emulation)
//   "kernel" (bench only):   "tile" (TileGemm, the kept kernel) or "onednn" (candidate: a oneDNN matmul
//                            primitive created once, run with pre-built stream and memory objects on one thread;
//                            bf16 is widened to fp32 first where oneDNN 2.6 has only its reference bf16 kernel)
#include <omp.h>

#include <cmath>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/tile_gemm.h"
#include "gradkit/float_convert.h"
#include "harness/error.h"
#include "harness/op_suite.h"
#include "harness/tensor_spec.h"
#include "harness/timing.h"

namespace gradkit::cli {
namespace {

using nlohmann::json;

/** Operands of one case, values in [-1, 1] (bf16: the rounded values, and their bits). */
struct Operands {
  TileGemmShape shape;
  std::vector<float> a, b, c;
  std::vector<uint16_t> aBits, bBits;
  const void* aData() const { return shape.inputType == ACL_BF16 ? static_cast<const void*>(aBits.data()) : a.data(); }
  const void* bData() const { return shape.inputType == ACL_BF16 ? static_cast<const void*>(bBits.data()) : b.data(); }
};

TileGemmShape parseShape(const json& testCase) {
  TileGemmShape s;
  s.m = testCase.at("m").get<int64_t>();
  s.n = testCase.at("n").get<int64_t>();
  s.k = testCase.at("k").get<int64_t>();
  s.transA = testCase.value("transA", false);
  s.transB = testCase.value("transB", false);
  s.alpha = testCase.value("alpha", 1.0f);
  s.beta = testCase.value("beta", 0.0f);
  const std::string dtype = testCase.value("dtype", std::string("fp32"));
  s.inputType = parseDtypeOrThrow(dtype, "dtype");
  if (s.inputType != ACL_FLOAT && s.inputType != ACL_BF16) throw HarnessError("tile_gemm dtypes: fp32, bf16");
  const std::string sums = testCase.value("sums", std::string("sequential"));
  if (sums != "sequential" && sums != "bf16_pairs") {
    throw HarnessError("sums: expected \"sequential\" or \"bf16_pairs\", given \"" + sums + "\"");
  }
  if (sums == "bf16_pairs") s.sums = GemmSums::Bf16Pairs;
  return s;
}

Operands makeOperands(const TileGemmShape& given, uint32_t seed) {
  Operands o;
  o.shape = TileGemm(given).shape();
  const TileGemmShape& s = o.shape;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  o.a.resize(static_cast<size_t>(s.transA ? (s.k - 1) * s.lda + s.m : (s.m - 1) * s.lda + s.k));
  o.b.resize(static_cast<size_t>(s.transB ? (s.n - 1) * s.ldb + s.k : (s.k - 1) * s.ldb + s.n));
  o.c.resize(static_cast<size_t>((s.m - 1) * s.ldc + s.n));
  for (float& x : o.a) x = dist(rng);
  for (float& x : o.b) x = dist(rng);
  for (float& x : o.c) x = dist(rng);
  if (s.inputType == ACL_BF16) {
    for (float& x : o.a) x = bf16ToFloat(o.aBits.emplace_back(floatToBf16(x)));
    for (float& x : o.b) x = bf16ToFloat(o.bBits.emplace_back(floatToBf16(x)));
  }
  return o;
}

/** Largest |got - fp64| over C, each divided by the bound (K + 3) u (|alpha| sum|ab| + |beta c|); <= 1 passes. */
double worstBoundFraction(const Operands& o, const std::vector<float>& got, double& maxAbs, double& maxRel) {
  const TileGemmShape& s = o.shape;
  const double u = std::ldexp(1.0, -24);
  double worst = 0.0;
  maxAbs = maxRel = 0.0;
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      double sum = 0.0, sumAbs = 0.0;
      for (int64_t k = 0; k < s.k; ++k) {
        const double av = o.a[static_cast<size_t>(s.transA ? k * s.lda + i : i * s.lda + k)];
        const double bv = o.b[static_cast<size_t>(s.transB ? j * s.ldb + k : k * s.ldb + j)];
        sum += av * bv;
        sumAbs += std::fabs(av * bv);
      }
      const size_t at = static_cast<size_t>(i * s.ldc + j);
      const double cOld = s.beta == 0.0f ? 0.0 : o.c[at];
      const double expected = s.alpha * sum + s.beta * cOld;
      const double err = std::fabs(got[at] - expected);
      const double bound = (s.k + 3) * u * (std::fabs(s.alpha) * sumAbs + std::fabs(s.beta * cOld)) + 1e-30;
      if (!std::isfinite(got[at])) return INFINITY;
      worst = std::max(worst, err / bound);
      maxAbs = std::max(maxAbs, err);
      if (expected != 0.0) maxRel = std::max(maxRel, err / std::fabs(expected));
    }
  }
  return worst;
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

/** The oneDNN candidate: one matmul primitive per shape, stream and memory objects built once. */
class OneDnnTile {
 public:
  explicit OneDnnTile(const TileGemmShape& s) : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    using dnnl::memory;
    const auto desc = [](int64_t outer, int64_t inner, bool transposed, int64_t ld, memory::data_type type) {
      return memory::desc({outer, inner}, type, transposed ? memory::dims{1, ld} : memory::dims{ld, 1});
    };
    const auto make = [&](memory::data_type type) {
      const memory::desc a = desc(s.m, s.k, s.transA, s.lda, type);
      const memory::desc b = desc(s.k, s.n, s.transB, s.ldb, type);
      const memory::desc c({s.m, s.n}, memory::data_type::f32, memory::dims{s.ldc, 1});
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), engine_);
      return std::make_pair(pd, std::string(pd.impl_info_str()));
    };
    dnnl::matmul::primitive_desc pd;
    if (s.inputType == ACL_BF16) {
      try {
        std::tie(pd, impl_) = make(memory::data_type::bf16);
        widen_ = impl_.rfind("ref", 0) == 0;  // only the reference loop: widen instead
      } catch (const dnnl::error&) {
        widen_ = true;  // no bf16 matmul below AVX-512 in oneDNN 2.6
      }
    }
    if (s.inputType == ACL_FLOAT || widen_) std::tie(pd, impl_) = make(memory::data_type::f32);
    primitive_ = dnnl::matmul(pd);
    aMem_ = memory(pd.src_desc(), engine_, DNNL_MEMORY_NONE);
    bMem_ = memory(pd.weights_desc(), engine_, DNNL_MEMORY_NONE);
    cMem_ = memory(pd.dst_desc(), engine_, DNNL_MEMORY_NONE);
  }

  /** Points the memory objects at the operands; bf16 widened into `wideA`/`wideB` (sized here, not timed). */
  void bind(const Operands& o, float* c) {
    if (widen_) {
      wideA_.resize(o.aBits.size());
      wideB_.resize(o.bBits.size());
      aMem_.set_data_handle(wideA_.data());
      bMem_.set_data_handle(wideB_.data());
    } else {
      aMem_.set_data_handle(const_cast<void*>(o.aData()));
      bMem_.set_data_handle(const_cast<void*>(o.bData()));
    }
    cMem_.set_data_handle(c);
    operands_ = &o;
  }

  void run() {
    if (widen_) {  // part of the timed work: the tile's bf16 bits must become fp32
      for (size_t i = 0; i < wideA_.size(); ++i) wideA_[i] = bf16ToFloat(operands_->aBits[i]);
      for (size_t i = 0; i < wideB_.size(); ++i) wideB_[i] = bf16ToFloat(operands_->bBits[i]);
    }
    primitive_.execute(stream_, {{DNNL_ARG_SRC, aMem_}, {DNNL_ARG_WEIGHTS, bMem_}, {DNNL_ARG_DST, cMem_}});
    stream_.wait();
  }

  std::string note() const { return "onednn " + impl_ + (widen_ ? " (bf16 widened to fp32)" : ""); }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::matmul primitive_;
  dnnl::memory aMem_, bMem_, cMem_;
  std::vector<float> wideA_, wideB_;
  const Operands* operands_ = nullptr;
  bool widen_ = false;
  std::string impl_;
};

/** Sizes of the operands' storage (A, B, C) of a case, from the shape TileGemm settles (leading dims). */
std::tuple<int64_t, int64_t, int64_t> storageSizes(const json& testCase) {
  const TileGemmShape s = TileGemm(parseShape(testCase)).shape();
  return {s.transA ? (s.k - 1) * s.lda + s.m : (s.m - 1) * s.lda + s.k,
          s.transB ? (s.n - 1) * s.ldb + s.k : (s.k - 1) * s.ldb + s.n, (s.m - 1) * s.ldc + s.n};
}

std::function<TensorDefaults(const CaseInfo&)> operand(int which) {
  return [which](const CaseInfo& info) {
    const auto [a, b, c] = storageSizes(info.json);
    const aclDataType type = which == 2 ? ACL_FLOAT : parseShape(info.json).inputType;
    return TensorDefaults{type, {which == 0 ? a : which == 1 ? b : c}, info.seed, ValueSpec{}};
  };
}

// Writes the operands (generated by makeOperands, which tests and benches share) into the case's tensors.
void store(HostTensor& tensor, const void* data) {
  std::memcpy(tensor.host().data(), data, tensor.host().size());
  tensor.upload();
}

OpDescriptor tileGemm() {
  OpDescriptor d;
  d.name = "tile_gemm";
  d.api = "TileGemm::run";
  d.needsShape = false;
  // A and B stored flat with their leading dims; C is read (beta) and written.
  d.tensors = {inputRule("a", operand(0)), inputRule("b", operand(1)), inOutRule("c", operand(2))};
  d.bind = [](OpCase& c) {
    const TileGemmShape given = parseShape(c.json());
    auto o = std::make_shared<const Operands>(makeOperands(given, c.bench() ? 7 : c.json().value("seed", 1u)));
    store(c.tensor("a"), o->aData());
    store(c.tensor("b"), o->bData());
    store(c.tensor("c"), o->c.data());
    auto gemm = std::make_shared<const TileGemm>(given);
    auto scratch = std::make_shared<std::vector<unsigned char>>(gemm->scratchBytes() + 64);
    OpCall call;
    call.direct = [&c, gemm, scratch] {
      gemm->run(c.tensor("a").deviceData(), c.tensor("b").deviceData(), static_cast<float*>(c.tensor("c").deviceData()),
                scratch->data());
    };
    // alpha A B + beta C in fp64, rounded to fp32 (for --dump; the judge measures against the fp64 values itself).
    call.golden = [&c, o] {
      const TileGemmShape& g = o->shape;
      std::vector<float> expected = o->c;
      for (int64_t i = 0; i < g.m; ++i) {
        for (int64_t j = 0; j < g.n; ++j) {
          double sum = 0.0;
          for (int64_t k = 0; k < g.k; ++k) {
            sum += static_cast<double>(o->a[static_cast<size_t>(g.transA ? k * g.lda + i : i * g.lda + k)]) *
                   o->b[static_cast<size_t>(g.transB ? j * g.ldb + k : k * g.ldb + j)];
          }
          const size_t at = static_cast<size_t>(i * g.ldc + j);
          expected[at] = static_cast<float>(g.alpha * sum + (g.beta == 0.0f ? 0.0 : g.beta * o->c[at]));
        }
      }
      std::memcpy(c.golden("c").data(), expected.data(), expected.size() * sizeof(float));
    };
    // Passes within the fp32 bound of worstBoundFraction and, in verify, with the same bits as the scalar reference
    // kernel (the kernels' common contract; a bench candidate such as oneDNN need not have them).
    call.judge = [&c, o, gemm](VerifyRow& row) {
      const auto* data = reinterpret_cast<const float*>(c.tensor("c").host().data());
      const std::vector<float> got(data, data + o->c.size());
      const double worst = worstBoundFraction(*o, got, row.maxAbsErr, row.maxRelErr);
      row.passed = worst <= 1.0;
      std::vector<float> reference = o->c;
      tile_gemm_detail::runScalar(o->shape, o->aData(), o->bData(), reference.data());
      row.bitExact = std::memcmp(reference.data(), got.data(), got.size() * sizeof(float)) == 0;
      if (!row.bitExact && !c.bench()) {
        row.passed = false;
        row.note = "differs from the scalar reference";
      } else if (!row.passed) {
        row.note = "error " + std::to_string(worst) + " x the fp32 bound";
      }
      row.note += (row.note.empty() ? "" : "; ") + std::string("kernel ") + gemm->kernelName();
    };
    const TileGemmShape& s = o->shape;
    const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
    call.work = [flops, o] { return Work{0.0, flops, o->shape.inputType == ACL_BF16}; };
    // One timed unit: enough tiles for about 0.4 ms at 50 GFLOP/s (short units: a busy machine spoils fewer), so the
    // clock's resolution does not matter; one OpenMP thread (oneDNN reads it).
    call.benchUnit = [&c, o, gemm, scratch, flops] {
      const std::string kernel = c.json().value("kernel", std::string("tile"));
      const int tiles = std::max(1, static_cast<int>(2e7 / flops));
      auto one = std::make_shared<ScopedOmpThreads>(1);
      auto* out = static_cast<float*>(c.tensor("c").deviceData());
      OpCall::BenchUnit unit;
      unit.runs = tiles;
      if (kernel == "tile") {
        void* aligned = scratch->data() + (64 - reinterpret_cast<uintptr_t>(scratch->data()) % 64) % 64;
        unit.run = [one, o, gemm, aligned, out, tiles] {
          for (int t = 0; t < tiles; ++t) gemm->run(o->aData(), o->bData(), out, aligned);
        };
        unit.note =
            std::string("kernel ") + gemm->kernelName() + ", scratch " + std::to_string(gemm->scratchBytes()) + " B";
      } else if (kernel == "onednn") {
        auto tile = std::make_shared<OneDnnTile>(o->shape);
        tile->bind(*o, out);
        unit.run = [one, o, tile, tiles] {
          for (int t = 0; t < tiles; ++t) tile->run();
        };
        unit.note = tile->note();
      } else {
        throw HarnessError("kernel: expected \"tile\" or \"onednn\", given \"" + kernel + "\"");
      }
      return unit;
    };
    call.benchNote = [](double, const BenchContext& context, BenchRow& row) {
      if (context.threads != 1) {
        row.note += "; peak is " + std::to_string(context.threads) + "-thread: use GRADKIT_NUM_THREADS=1";
      }
    };
    return call;
  };
  return d;
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(tileGemm)
}  // namespace gradkit::cli
