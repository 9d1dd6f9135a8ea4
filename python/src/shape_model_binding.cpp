// gradkit._C.fa_sizes, compressor_output_lead, dropout_mask_bytes, mhc_residual_tail: the library's size models
// (src/ops/flash_attention/fa_layout.h, src/ops/compressor/compressor_layout.h, the dropout mask format,
// src/ops/mhc/kernels/mhc_sizes.h; compiled into
// this module: they know nothing about aclTensor) for
// gradkit.ops' shape helpers, so Python reads shapes the way the checks and the plans do instead of describing them
// again.
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "ops/compressor/compressor_layout.h"
#include "ops/dropout/kernels/mask_format.h"
#include "ops/flash_attention/fa_layout.h"
#include "ops/mhc/kernels/mhc_sizes.h"

namespace py = pybind11;

namespace gradkit::python {
namespace {

using Dims = std::vector<int64_t>;

/** The sizes of query, key and value shapes in `layout` (TND: with the cumulative sequence ends), the shapes of
 * attention_out and the softmax statistics they imply, and the dropout bit count. */
py::dict faSizes(const std::string& layout, const Dims& query, const Dims& key, const Dims& value, int64_t headNum,
                 const std::optional<Dims>& seqQEnds, const std::optional<Dims>& seqKvEnds) {
  const std::optional<ops::FaLayout> parsed = ops::faLayoutFromName(layout);
  if (!parsed) throw py::value_error("input_layout must be BNSD, BSND, BSH, SBH or TND, given '" + layout + "'");
  const auto rank = static_cast<size_t>(ops::faLayoutRank(*parsed));
  for (const auto& [name, dims] : {std::pair{"query", &query}, {"key", &key}, {"value", &value}}) {
    if (dims->size() != rank) {
      std::string given;
      for (const int64_t dim : *dims) given += (given.empty() ? "" : ", ") + std::to_string(dim);
      throw py::value_error(std::string(name) + ": expected " + std::to_string(rank) + " dims for input_layout '" +
                            layout + "' (" + ops::faLayoutDims(*parsed) + "), given shape [" + given + "]");
    }
  }
  ops::FaSizes s = ops::faSizesOf(*parsed, query, key, value, headNum);
  if (s.tnd()) ops::faSetSequenceEnds(seqQEnds.value_or(Dims{s.t1}), seqKvEnds.value_or(Dims{s.t2}), &s);
  py::dict out;
  out["b"] = s.b, out["n1"] = s.n1, out["n2"] = s.n2, out["s1"] = s.s1, out["s2"] = s.s2;
  out["d"] = s.d, out["dv"] = s.dv, out["t1"] = s.t1, out["t2"] = s.t2;
  out["out_shape"] = ops::faLayoutShape(s, true, s.n1, s.dv);
  out["stats_shape"] = ops::faStatisticsShape(s);
  out["dropout_elements"] = ops::faDropoutElements(s);
  return out;
}

/** The compressed outputs' leading dims: BSH [B, ceil(S/cr)], TH [min(T, T/cr + B)]. */
Dims compressorOutputLead(bool th, int64_t batch, int64_t seqOrTokens, int64_t cmpRatio) {
  if (cmpRatio < 1) throw py::value_error("cmp_ratio must be >= 1, given " + std::to_string(cmpRatio));
  return ops::compressorOutputLead(th, batch, seqOrTokens, cmpRatio);
}

}  // namespace

void bindShapeModels(py::module_& module) {
  module.def(
      "fa_sizes", &faSizes, py::arg("input_layout"), py::arg("query"), py::arg("key"), py::arg("value"),
      py::arg("head_num"), py::arg("seq_q_ends") = py::none(), py::arg("seq_kv_ends") = py::none(),
      "The flash attention sizes of query / key / value shapes in input_layout: a dict of b, n1, n2, s1, s2, d, "
      "dv, t1, t2 (TND: b and the longest lengths s1 / s2 from the cumulative ends; without them one batch), "
      "out_shape (attention_out), stats_shape (softmax_max / softmax_sum) and dropout_elements (the keep bits of one "
      "call). A packed H (BSH / SBH) that does not split gives 0.");
  module.def("compressor_output_lead", &compressorOutputLead, py::arg("th"), py::arg("batch"), py::arg("seq_or_tokens"),
             py::arg("cmp_ratio"),
             "The leading dims of the compressor's compressed outputs: BSH x [B, S, H] (th False, seq_or_tokens S) "
             "[B, ceil(S/cmp_ratio)]; TH x [T, H] (th True, seq_or_tokens T) [min(T, T/cmp_ratio + B)].");
  module.def(
      "dropout_mask_bytes",
      [](int64_t numel) {
        if (numel < 0) throw py::value_error("numel must be >= 0, given " + std::to_string(numel));
        return ops::dropoutMaskBytes(numel);
      },
      py::arg("numel"), "Bytes of the packed dropout mask of a tensor with numel elements: ceil(numel / 128) * 16.");
  module.def(
      "mhc_residual_tail",
      [](int64_t n, int64_t phiRows) {
        const int64_t residual = kernels::mhcResidualWidth(phiRows, n);
        if (n < 1 || residual < 1) {
          throw py::value_error("phi of " + std::to_string(phiRows) +
                                " rows has no residual block for N = " + std::to_string(n) + " (2N + R rows, R >= 1)");
        }
        return kernels::mhcResidualTail(n, residual);
      },
      py::arg("n"), py::arg("phi_rows"),
      "The trailing dims of mHC's h_res / grad_h_res for N streams and phi of phi_rows = 2N + R rows: [N, N] when "
      "R = N*N, else [R] (the N! form).");
}

}  // namespace gradkit::python
