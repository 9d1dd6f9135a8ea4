// The DropoutGenMask, DropoutGenMaskV2 and DropoutGenMaskV2Tensor suites: cases/dropout_gen_mask.json,
// cases/dropout_gen_mask_v2.json and cases/dropout_gen_mask_v2_tensor.json through the public API, the mask compared
// byte for byte with golden/dropout_gen_mask (its own Philox4x32-10; DECISIONS.md: bit-exact gate), and the generation
// bench.
//
// Case keys (besides name and shape):
//   "shape":         the data tensor's shape (the aclIntArray argument); [] is one element
//   "prob":          drop probability, a number or "nan", "inf", "-inf", "-0" (default 0.5)
//   "seed", "offset": int64 (default 0)
//   "probDataType":  V2 and V2Tensor, a dtype name (default "fp32")
//   V2Tensor only: "seed" is the value stored in "seedTensor" and "offsetTensorValue" (default 0) the value stored
//   in "offsetTensor" (tensor specs, defaults INT64 [1]); "offset" is the scalar added to it. Both tensors hold a
//   sentinel when GetWorkspaceSize runs and get their values only afterwards, before the run, so every case proves
//   that the values are read when the executor runs. "nullSeedTensor" / "nullOffsetTensor": pass nullptr.
//   "out":           tensor spec of the mask (default UINT8 [ceil(n/128)*16])
// Bench: the row counts the n/8 mask bytes written (its GB/s and roofline ratio are those of the mask bytes); the
// note gives G elements/s and the time of a parallel memset of the same bytes measured in the same run:
// "memset/ours" = memset time / our time, the fraction of pure store speed that mask generation reaches.
#include <cstdio>
#include <cstring>

#include "aclnnop/aclnn_dropout_gen_mask.h"
#include "core/parallel.h"
#include "golden/dropout_gen_mask.h"
#include "harness/op_suite.h"

namespace gradkit::cli {
namespace {

enum class Version { kV1, kV2, kV2Tensor };

constexpr unsigned char kScalarSentinel = 0x5A;  // seed/offset tensors' bytes until GetWorkspaceSize has returned

// Stores `value` in the first element of the tensor's view (an INT32 tensor gets the low 32 bits) and uploads it.
void put(HostTensor& tensor, int64_t value) {
  const size_t size = tensor.elementSize();
  if (tensor.storageElements() == 0 || (size != 4 && size != 8)) return;  // a rejected case: nothing to store
  unsigned char* at = tensor.host().data() + static_cast<size_t>(tensor.spec().offset) * size;
  if (size == 4) {
    const auto low = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(value)));
    std::memcpy(at, &low, 4);
  } else {
    std::memcpy(at, &value, 8);
  }
  tensor.upload();
}

// The bench note: elements/s, and a parallel memset of the same bytes (in chunks as the op's own fills).
void memsetNote(HostTensor& out, int64_t n, double seconds, const BenchContext& context, BenchRow& row) {
  auto* mask = static_cast<unsigned char*>(out.deviceData());
  const int64_t bytes = out.spec().numel();
  std::vector<unsigned char> keep(mask, mask + bytes);
  const double memsetSeconds = minSeconds(context.repeat, [&] {
    parallelFor(bytes, int64_t{1} << 18, [&](int64_t begin, int64_t end) {
      std::memset(mask + begin, begin & 0xFF, static_cast<size_t>(end - begin));
    });
  });
  std::memcpy(mask, keep.data(), static_cast<size_t>(bytes));
  const double perSecond = static_cast<double>(n) / seconds;
  char text[200];
  std::snprintf(text, sizeof text,
                "%.3g G elements/s (%.3g per thread, %d threads); memset of the same %lld bytes %.3g s, "
                "memset/ours = %.3g",
                perSecond / 1e9, perSecond / 1e9 / context.threads, context.threads, static_cast<long long>(bytes),
                memsetSeconds, memsetSeconds / seconds);
  row.note = text;
}

OpDescriptor genMask(Version version) {
  OpDescriptor d;
  const char* names[] = {"dropout_gen_mask", "dropout_gen_mask_v2", "dropout_gen_mask_v2_tensor"};
  const char* apis[] = {"aclnnDropoutGenMask", "aclnnDropoutGenMaskV2", "aclnnDropoutGenMaskV2Tensor"};
  const RunCall runs[] = {aclnnDropoutGenMask, aclnnDropoutGenMaskV2, aclnnDropoutGenMaskV2Tensor};
  d.name = names[static_cast<int>(version)];
  d.api = apis[static_cast<int>(version)];
  d.run = runs[static_cast<int>(version)];
  d.rowDtype = "uint8";
  TensorRule out = outputRule("out", [](const CaseInfo& info) {
    return TensorDefaults{ACL_UINT8, {maskBytesFor(info.numel < 0 ? 0 : info.numel)}, 0, ValueSpec{}};
  });
  out.dumpName = "mask";
  d.tensors = {out};
  if (version == Version::kV2Tensor) {
    auto scalar = [](const CaseInfo&) { return TensorDefaults{ACL_INT64, {1}, 0, ValueSpec{}}; };
    d.tensors.push_back(inputRule("seedTensor", scalar));
    d.tensors.push_back(inputRule("offsetTensor", scalar));
  }
  d.bind = [version](OpCase& c) {
    const double prob = c.number("prob", 0.5);
    const int64_t seed = c.integer("seed", 0), offset = c.integer("offset", 0);
    const int64_t offsetValue = c.integer("offsetTensorValue", 0);
    const aclDataType probDataType = c.dtypeAttr("probDataType", ACL_FLOAT);
    const aclIntArray* shape = c.intArray(c.info().shape);
    const int64_t n = c.info().numel;
    OpCall call;
    // The (seed, offset) the mask must come from.
    int64_t streamSeed = seed, streamOffset = offset;
    if (version == Version::kV2Tensor) {
      c.tensor("seedTensor").fillBytes(kScalarSentinel);
      c.tensor("offsetTensor").fillBytes(kScalarSentinel);
      const aclTensor* seedTensor = c.flag("nullSeedTensor", false) ? nullptr : c.acl("seedTensor");
      const aclTensor* offsetTensor = c.flag("nullOffsetTensor", false) ? nullptr : c.acl("offsetTensor");
      call.plan = [=, &c](uint64_t* workspaceSize, aclOpExecutor** executor) {
        return aclnnDropoutGenMaskV2TensorGetWorkspaceSize(shape, prob, seedTensor, offsetTensor, offset, probDataType,
                                                           c.acl("out"), workspaceSize, executor);
      };
      call.afterPlan = [=, &c] {  // only now: the run must read them
        put(c.tensor("seedTensor"), seed);
        put(c.tensor("offsetTensor"), offsetValue);
      };
      if (c.spec("seedTensor").dtype == ACL_INT32) {
        streamSeed = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(seed)));
      }
      streamOffset = golden::dropoutGenMaskTensorOffset(offsetValue, offset);
    } else if (version == Version::kV2) {
      call.plan = [=, &c](uint64_t* workspaceSize, aclOpExecutor** executor) {
        return aclnnDropoutGenMaskV2GetWorkspaceSize(shape, prob, seed, offset, probDataType, c.acl("out"),
                                                     workspaceSize, executor);
      };
    } else {
      call.plan = [=, &c](uint64_t* workspaceSize, aclOpExecutor** executor) {
        return aclnnDropoutGenMaskGetWorkspaceSize(shape, prob, seed, offset, c.acl("out"), workspaceSize, executor);
      };
    }
    call.golden = [=, &c] {
      const std::vector<uint8_t> mask = golden::dropoutGenMask(n, prob, streamSeed, streamOffset);
      c.golden("out").assign(mask.begin(), mask.end());
    };
    call.work = [&c] { return Work{static_cast<double>(c.bytes("out")), 0.0, false}; };
    call.benchNote = [&c, n](double seconds, const BenchContext& context, BenchRow& row) {
      memsetNote(c.tensor("out"), n, seconds, context, row);
    };
    return call;
  };
  return d;
}

OpDescriptor dropoutGenMask() { return genMask(Version::kV1); }
OpDescriptor dropoutGenMaskV2() { return genMask(Version::kV2); }
OpDescriptor dropoutGenMaskV2Tensor() { return genMask(Version::kV2Tensor); }

}  // namespace
GRADKIT_REGISTER_OP_SUITE(dropoutGenMask)
GRADKIT_REGISTER_OP_SUITE(dropoutGenMaskV2)
GRADKIT_REGISTER_OP_SUITE(dropoutGenMaskV2Tensor)
}  // namespace gradkit::cli
