// A case tensor's values as plain double vectors, in the dense row-major order of its view: what a golden reads
// from the inputs, writes into inputs it derives, and stores as an output's golden.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "harness/elements.h"
#include "harness/op_suite.h"

namespace gradkit::cli {

/** The tensor's view elements before the run, widened to double. */
std::vector<double> denseValues(OpCase& c, const std::string& key);

/** An output's view elements as the run left them (downloaded), widened to double. */
std::vector<double> writtenValues(OpCase& c, const std::string& key);

/** The same values as `Out` (exact for case values: every input dtype is at most fp32). */
template <class Out, class In>
std::vector<Out> as(const std::vector<In>& values) {
  return std::vector<Out>(values.begin(), values.end());
}

/** The case's tensors `keys`, widened to Real once and looked up by key: the inputs a golden reads. */
template <class Real>
class CaseInputs {
 public:
  CaseInputs(OpCase& c, const std::vector<std::string>& keys) {
    for (const std::string& key : keys) values_[key] = as<Real>(denseValues(c, key));
  }
  /** The dense values of `key`; nullptr for a key that was not given. */
  const Real* operator()(const std::string& key) const {
    const auto found = values_.find(key);
    return found == values_.end() ? nullptr : found->second.data();
  }

 private:
  std::map<std::string, std::vector<Real>> values_;
};

/** Writes `values` into the tensor's view (rounded to its dtype) and uploads its storage. */
void writeView(OpCase& c, const std::string& key, const std::vector<double>& values);

/** Writes integer `values` into the tensor's view (as many as it holds; the rest 0) and uploads its storage. */
void writeInts(OpCase& c, const std::string& key, const std::vector<int64_t>& values);

/** Stores `values` (rounded to the output's dtype) as the output's golden. */
template <class Real>
void storeGolden(OpCase& c, const std::string& key, const std::vector<Real>& values) {
  std::vector<unsigned char>& golden = c.golden(key);
  const aclDataType dtype = c.spec(key).dtype;
  for (size_t i = 0; i < values.size(); ++i) storeFromDouble(dtype, golden.data(), static_cast<int64_t>(i), values[i]);
}

/** Stores `values` (rounded to the output's dtype) as the output's golden at the dense elements `index` (those past
 *  the view are left out: the judge reports them). */
void storeGoldenAt(OpCase& c, const std::string& key, const std::vector<int64_t>& index,
                   const std::vector<double>& values);

}  // namespace gradkit::cli
