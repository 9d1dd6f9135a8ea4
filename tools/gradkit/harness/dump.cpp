#include "harness/dump.h"

#include <fstream>

#include "harness/error.h"
#include "harness/npy.h"

namespace gradkit::cli {

void dumpCase(const std::filesystem::path& dir, const std::string& op, const std::string& caseName,
              const nlohmann::json& testCase, const std::vector<DumpTensor>& tensors) {
  const std::filesystem::path caseDir = dir / op / caseName;
  for (const DumpTensor& tensor : tensors) {
    writeNpy(caseDir / (tensor.name + ".npy"), tensor.dtype, tensor.shape, tensor.data);
  }
  std::filesystem::create_directories(caseDir);
  std::ofstream file(caseDir / "case.json");
  file << testCase.dump(2) << '\n';
  if (!file) throw HarnessError("cannot write " + (caseDir / "case.json").string());
}

void writeDumpReadme(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream file(dir / "README.txt");
  file << "gradkit verify --dump: golden data for every verified case.\n"
          "\n"
          "Layout: <op>/<case>/\n"
          "  case.json         the expanded case (dtype, shapes, strides, storage offset, value ranges, seed,\n"
          "                    scalar attributes such as threshold)\n"
          "  <input>.npy       each input tensor, dense row-major: the logical values of the (possibly strided)\n"
          "                    view the operator was given, e.g. gradOutput.npy, self.npy\n"
          "  golden_<out>.npy  the fp64 golden result, in the output dtype\n"
          "  ours_<out>.npy    gradkit's result, dense row-major\n"
          "\n"
          "Types: fp32 '<f4', fp16 '<f2', int8 '|i1', uint8 '|u1', int32 '<i4', int64 '<i8', bool '|b1'.\n"
          "bf16 has no numpy type: bf16 tensors are stored as their raw 16-bit patterns, '<u2'. Check case.json\n"
          "for the dtype, then for example:\n"
          "  bits = numpy.load('self.npy')\n"
          "  values = (bits.astype(numpy.uint32) << 16).view(numpy.float32)   # exact\n"
          "  torch.from_numpy(bits.view(numpy.int16)).view(torch.bfloat16)    # as torch bf16\n"
          "fp8 tensors are stored likewise as their raw bytes, '|u1'.\n";
  if (!file) throw HarnessError("cannot write " + (dir / "README.txt").string());
}

}  // namespace gradkit::cli
