#include "harness/tensor_spec.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "base/dtype.h"
#include "harness/elements.h"
#include "harness/error.h"

namespace gradkit::cli {
namespace {

using nlohmann::json;

std::vector<int64_t> readDims(const json& value, std::string_view tensor, std::string_view key) {
  if (!value.is_array()) {
    throw HarnessError("tensor '" + std::string(tensor) + "': '" + std::string(key) + "' must be a list of integers");
  }
  std::vector<int64_t> dims;
  for (const auto& item : value) {
    if (!item.is_number_integer()) {
      throw HarnessError("tensor '" + std::string(tensor) + "': '" + std::string(key) + "' must hold integers, given " +
                         item.dump());
    }
    dims.push_back(item.get<int64_t>());
  }
  return dims;
}

ValueSpec parseValues(const json& object, const ValueSpec& defaults, std::string_view tensor) {
  ValueSpec values = defaults;
  const std::string where = "tensor '" + std::string(tensor) + "'";
  if (object.contains("range")) {
    const json& range = object["range"];
    if (!range.is_array() || range.size() != 2 || !range[0].is_number() || !range[1].is_number()) {
      throw HarnessError(where + ": 'range' must be [lo, hi], given " + range.dump());
    }
    values.lo = range[0].get<double>();
    values.hi = range[1].get<double>();
    values.constant = false;
    if (!(values.lo <= values.hi)) throw HarnessError(where + ": 'range' needs lo <= hi, given " + range.dump());
  }
  if (object.contains("value")) {
    values.lo = values.hi = parseSpecialValue(object["value"]);
    values.constant = true;
  }
  if (object.contains("special")) {
    const json& special = object["special"];
    if (!special.is_object() || !special.contains("values") || !special["values"].is_array() ||
        special["values"].empty()) {
      throw HarnessError(where + ": 'special' must be {\"values\": [...], \"fraction\": f}, given " + special.dump());
    }
    values.specials.clear();
    for (const auto& item : special["values"]) values.specials.push_back(parseSpecialValue(item));
    values.specialFraction = special.value("fraction", 0.1);
    if (!(values.specialFraction >= 0.0 && values.specialFraction <= 1.0)) {
      throw HarnessError(where + ": special 'fraction' must be in [0, 1], given " +
                         std::to_string(values.specialFraction));
    }
  }
  return values;
}

}  // namespace

int64_t TensorSpec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t TensorSpec::storageElements() const {
  if (numel() == 0) return 0;
  int64_t last = offset;
  for (size_t d = 0; d < shape.size(); ++d) last += (shape[d] - 1) * strides[d];
  return last + 1;
}

bool TensorSpec::isContiguous() const {
  if (offset != 0) return false;
  int64_t expected = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1 && strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t step = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = step;
    step *= std::max<int64_t>(shape[d], 1);
  }
  return strides;
}

std::vector<int64_t> permutedStrides(const std::vector<int64_t>& shape, const std::vector<int64_t>& permutation) {
  std::vector<int64_t> storageShape;
  for (int64_t axis : permutation) storageShape.push_back(shape[static_cast<size_t>(axis)]);
  const std::vector<int64_t> storageStrides = contiguousStrides(storageShape);
  std::vector<int64_t> strides(shape.size());
  for (size_t k = 0; k < permutation.size(); ++k) strides[static_cast<size_t>(permutation[k])] = storageStrides[k];
  return strides;
}

aclDataType parseDtypeOrThrow(const std::string& name, std::string_view what) {
  const auto dtype = parseDtype(name);
  if (!dtype) throw HarnessError(std::string(what) + ": unknown dtype '" + name + "'");
  return *dtype;
}

double parseSpecialValue(const json& value) {
  if (value.is_number()) return value.get<double>();
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (text == "-nan") return -std::numeric_limits<double>::quiet_NaN();
    if (text == "inf" || text == "+inf") return std::numeric_limits<double>::infinity();
    if (text == "-inf") return -std::numeric_limits<double>::infinity();
    if (text == "-0") return -0.0;
    if (text == "+0" || text == "0") return 0.0;
  }
  throw HarnessError("a value must be a number or one of nan, -nan, inf, -inf, -0, +0; given " + value.dump());
}

uint64_t hashName(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

TensorSpec parseTensorSpec(const json& object, std::string_view name, const TensorDefaults& defaults) {
  if (!object.is_null() && !object.is_object()) {
    throw HarnessError("tensor '" + std::string(name) + "' must be an object, given " + object.dump());
  }
  const json empty = json::object();
  const json& spec = object.is_null() ? empty : object;
  const std::string where = "tensor '" + std::string(name) + "'";

  TensorSpec tensor;
  tensor.name = std::string(name);
  tensor.dtype = spec.contains("dtype") ? parseDtypeOrThrow(spec["dtype"].get<std::string>(), where) : defaults.dtype;
  tensor.shape = spec.contains("shape") ? readDims(spec["shape"], name, "shape") : defaults.shape;
  for (int64_t d : tensor.shape) {
    if (d < 0) throw HarnessError(where + ": dims must be >= 0, given " + json(tensor.shape).dump());
  }
  const size_t rank = tensor.shape.size();

  if (spec.contains("strides")) {
    tensor.strides = readDims(spec["strides"], name, "strides");
    if (tensor.strides.size() != rank) {
      throw HarnessError(where + ": expected " + std::to_string(rank) + " strides, given " +
                         std::to_string(tensor.strides.size()));
    }
    for (int64_t s : tensor.strides) {
      if (s < 0) throw HarnessError(where + ": strides must be >= 0, given " + spec["strides"].dump());
    }
  } else {
    std::vector<int64_t> permutation(rank);
    std::iota(permutation.begin(), permutation.end(), int64_t{0});
    const std::string layout = spec.value("layout", std::string("contiguous"));
    if (layout == "transposed") {
      std::reverse(permutation.begin(), permutation.end());
    } else if (layout != "contiguous") {
      throw HarnessError(where + ": layout must be contiguous or transposed, given '" + layout + "'");
    }
    if (spec.contains("permute")) {
      permutation = readDims(spec["permute"], name, "permute");
      std::vector<int64_t> sorted = permutation;
      std::sort(sorted.begin(), sorted.end());
      bool valid = sorted.size() == rank;
      for (size_t k = 0; valid && k < sorted.size(); ++k) valid = sorted[k] == static_cast<int64_t>(k);
      if (!valid) {
        throw HarnessError(where + ": 'permute' must be a permutation of the " + std::to_string(rank) +
                           " axes, given " + spec["permute"].dump());
      }
    }
    tensor.strides = permutedStrides(tensor.shape, permutation);
  }
  tensor.offset = spec.value("offset", int64_t{0});
  if (tensor.offset < 0) throw HarnessError(where + ": offset must be >= 0, given " + std::to_string(tensor.offset));

  tensor.values = parseValues(spec, defaults.values, name);
  if (!holdsSpecialValues(tensor.dtype)) {
    for (double v : tensor.values.specials) {
      if (!std::isfinite(v)) {
        throw HarnessError(where + ": special values NaN/Inf need a floating dtype, given " +
                           dtypeShortName(tensor.dtype));
      }
    }
  }
  tensor.seed = spec.contains("seed") ? spec["seed"].get<uint64_t>() : (defaults.seed ^ hashName(name));
  return tensor;
}

}  // namespace gradkit::cli
