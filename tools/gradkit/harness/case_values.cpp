// Moves values between case tensors and double vectors (harness/case_values.h).
#include "harness/case_values.h"

#include "harness/error.h"
#include "harness/gather.h"

namespace gradkit::cli {

namespace {

std::vector<double> widen(const std::vector<unsigned char>& bytes, aclDataType dtype, int64_t count) {
  std::vector<double> values(static_cast<size_t>(count));
  for (size_t i = 0; i < values.size(); ++i) values[i] = loadAsDouble(dtype, bytes.data(), static_cast<int64_t>(i));
  return values;
}

}  // namespace

std::vector<double> denseValues(OpCase& c, const std::string& key) {
  return widen(c.dense(key), c.spec(key).dtype, c.spec(key).numel());
}

std::vector<double> writtenValues(OpCase& c, const std::string& key) {
  return widen(c.tensor(key).dense(), c.spec(key).dtype, c.spec(key).numel());
}

void writeView(OpCase& c, const std::string& key, const std::vector<double>& values) {
  HostTensor& tensor = c.tensor(key);
  if (static_cast<int64_t>(values.size()) != tensor.spec().numel()) {
    throw HarnessError("writeView: '" + key + "' size mismatch");
  }
  size_t next = 0;
  forEachStorageIndex(tensor.geometry(), [&](int64_t at) {
    storeFromDouble(tensor.spec().dtype, tensor.host().data(), at, values[next++]);
  });
  tensor.upload();
}

void writeInts(OpCase& c, const std::string& key, const std::vector<int64_t>& values) {
  std::vector<double> dense(static_cast<size_t>(c.spec(key).numel()), 0.0);
  for (size_t i = 0; i < dense.size() && i < values.size(); ++i) dense[i] = static_cast<double>(values[i]);
  writeView(c, key, dense);
}

void storeGoldenAt(OpCase& c, const std::string& key, const std::vector<int64_t>& index,
                   const std::vector<double>& values) {
  std::vector<unsigned char>& golden = c.golden(key);
  const TensorSpec& spec = c.spec(key);
  for (size_t k = 0; k < index.size(); ++k) {
    if (index[k] < spec.numel()) storeFromDouble(spec.dtype, golden.data(), index[k], values[k]);
  }
}

}  // namespace gradkit::cli
