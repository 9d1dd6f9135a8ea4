#include "ops/flash_attention/fa_layout.h"

#include <algorithm>
#include <utility>

#include "base/saturating.h"

namespace gradkit::ops {
namespace {

// a / b when b divides a and b > 0, else 0 (a packed H that does not split).
int64_t exactQuotient(int64_t a, int64_t b) { return b > 0 && a % b == 0 ? a / b : 0; }

struct LayoutName {
  const char* name;
  FaLayout layout;
  const char* dims;
};
constexpr LayoutName kLayoutNames[] = {{"BNSD", FaLayout::BNSD, "[B, N, S, D]"},
                                       {"BSND", FaLayout::BSND, "[B, S, N, D]"},
                                       {"BSH", FaLayout::BSH, "[B, S, N*D]"},
                                       {"SBH", FaLayout::SBH, "[S, B, N*D]"},
                                       {"TND", FaLayout::TND, "[T, N, D]"}};

}  // namespace

const char* faLayoutName(FaLayout layout) {
  for (const LayoutName& known : kLayoutNames) {
    if (known.layout == layout) return known.name;
  }
  return "?";
}

const char* faLayoutDims(FaLayout layout) {
  for (const LayoutName& known : kLayoutNames) {
    if (known.layout == layout) return known.dims;
  }
  return "?";
}

std::optional<FaLayout> faLayoutFromName(std::string_view name) {
  for (const LayoutName& known : kLayoutNames) {
    if (name == known.name) return known.layout;
  }
  return std::nullopt;
}

int64_t faLayoutRank(FaLayout layout) { return layout == FaLayout::BNSD || layout == FaLayout::BSND ? 4 : 3; }

FaAxes faAxesOf(FaLayout layout, const std::vector<int64_t>& d) {
  switch (layout) {
    case FaLayout::BNSD:
      return {d[0], d[2], d[1], d[3]};
    case FaLayout::BSND:
      return {d[0], d[1], d[2], d[3]};
    case FaLayout::BSH:
      return {d[0], d[1], 0, d[2]};
    case FaLayout::SBH:
      return {d[1], d[0], 0, d[2]};
    case FaLayout::TND:
      return {0, d[0], d[1], d[2]};
  }
  return {};
}

FaSizes faSizesOf(FaLayout layout, const std::vector<int64_t>& query, const std::vector<int64_t>& key,
                  const std::vector<int64_t>& value, int64_t headNum) {
  const FaAxes q = faAxesOf(layout, query), k = faAxesOf(layout, key), v = faAxesOf(layout, value);
  FaSizes s;
  s.layout = layout;
  s.b = q.batch;
  if (s.tnd()) {
    s.t1 = q.rows, s.t2 = k.rows;
  } else {
    s.s1 = q.rows, s.s2 = k.rows;
  }
  if (faPackedHeads(layout)) {
    s.n1 = headNum;
    s.d = exactQuotient(q.width, headNum);
    s.n2 = exactQuotient(k.width, s.d);
    s.dv = exactQuotient(v.width, s.n2);
  } else {
    s.n1 = q.heads, s.d = q.width;
    s.n2 = k.heads, s.dv = v.width;
  }
  return s;
}

void faSetSequenceEnds(const std::vector<int64_t>& queryEnds, const std::vector<int64_t>& keyEnds, FaSizes* s) {
  const auto lengths = [](const std::vector<int64_t>& ends) {
    size_t computed = 0;  // batches after the last positive end are not computed
    for (size_t b = 0; b < ends.size(); ++b) {
      if (ends[b] > 0) computed = b + 1;
    }
    std::vector<int64_t> out(ends.size(), 0);
    int64_t previous = 0;
    for (size_t b = 0; b < computed; ++b) out[b] = ends[b] - previous, previous = ends[b];
    return out;
  };
  s->seqQ = lengths(queryEnds);
  s->seqKv = lengths(keyEnds);
  s->b = static_cast<int64_t>(s->seqQ.size());
  s->s1 = s->seqQ.empty() ? 0 : *std::max_element(s->seqQ.begin(), s->seqQ.end());
  s->s2 = s->seqKv.empty() ? 0 : *std::max_element(s->seqKv.begin(), s->seqKv.end());
}

int64_t faRopeDim(const FaSizes& s, int64_t lastDim) {
  return faPackedHeads(s.layout) ? exactQuotient(lastDim, s.n1) : lastDim;
}

std::vector<int64_t> faLayoutShape(const FaSizes& s, bool queryRows, int64_t heads, int64_t lastDim) {
  const int64_t rows = queryRows ? s.s1 : s.s2;
  switch (s.layout) {
    case FaLayout::BNSD:
      return {s.b, heads, rows, lastDim};
    case FaLayout::BSND:
      return {s.b, rows, heads, lastDim};
    case FaLayout::BSH:
      return {s.b, rows, heads * lastDim};
    case FaLayout::SBH:
      return {rows, s.b, heads * lastDim};
    case FaLayout::TND:
      return {queryRows ? s.t1 : s.t2, heads, lastDim};
  }
  return {};
}

std::vector<int64_t> faStatisticsShape(const FaSizes& s) {
  if (s.tnd()) return {s.t1, s.n1, 8};
  return {s.b, s.n1, s.s1, 8};
}

std::vector<int64_t> faMaskShape(const FaSizes& s, FaMaskForm form) {
  switch (form) {
    case FaMaskForm::SS:
      return {s.s1, s.s2};
    case FaMaskForm::OneOneSS:
      return {1, 1, s.s1, s.s2};
    case FaMaskForm::B1SS:
      return {s.b, 1, s.s1, s.s2};
    case FaMaskForm::BNSS:
      return {s.b, s.n1, s.s1, s.s2};
    case FaMaskForm::Template:
      return {kFaMaskTemplate, kFaMaskTemplate};
    case FaMaskForm::PrefixTemplate:
      return {kFaPrefixMaskRows, kFaMaskTemplate};
  }
  return {};
}

std::optional<FaMaskForm> faTemplateMaskOf(int64_t sparseMode) {
  if (sparseMode == 6) return FaMaskForm::PrefixTemplate;
  if (sparseMode == 2 || sparseMode == 3 || sparseMode == 4 || sparseMode == 7 || sparseMode == 8) {
    return FaMaskForm::Template;
  }
  return std::nullopt;
}

std::vector<int64_t> faPseShape(const FaSizes& s, FaPseForm form) {
  switch (form) {
    case FaPseForm::BNSS:
      return {s.b, s.n1, s.s1, s.s2};
    case FaPseForm::BN1S:
      return {s.b, s.n1, 1, s.s2};
    case FaPseForm::OneNSS:
      return {1, s.n1, s.s1, s.s2};
    case FaPseForm::BNHS:
      return {s.b, s.n1, kFaAlibiRows, s.s2};
    case FaPseForm::OneNHS:
      return {1, s.n1, kFaAlibiRows, s.s2};
    case FaPseForm::BN:
      return {s.b, s.n1};
    case FaPseForm::N:
      return {s.n1};
  }
  return {};
}

std::optional<FaMaskForm> faMaskFormFromName(std::string_view name) {
  if (name == "SS") return FaMaskForm::SS;
  if (name == "11SS") return FaMaskForm::OneOneSS;
  if (name == "B1SS") return FaMaskForm::B1SS;
  if (name == "BNSS") return FaMaskForm::BNSS;
  return std::nullopt;
}

std::optional<FaPseForm> faPseFormFromName(std::string_view name) {
  static constexpr std::pair<std::string_view, FaPseForm> kNames[] = {
      {"BNSS", FaPseForm::BNSS},   {"BN1S", FaPseForm::BN1S}, {"1NSS", FaPseForm::OneNSS}, {"BNHS", FaPseForm::BNHS},
      {"1NHS", FaPseForm::OneNHS}, {"BN", FaPseForm::BN},     {"N", FaPseForm::N}};
  for (const auto& [text, form] : kNames) {
    if (name == text) return form;
  }
  return std::nullopt;
}

FaAxisStrides faAxisStrides(FaLayout layout, const std::vector<int64_t>& st, int64_t headDim) {
  switch (layout) {
    case FaLayout::BNSD:
      return {st[0], st[1], st[2], st[3]};
    case FaLayout::BSND:
      return {st[0], st[2], st[1], st[3]};
    case FaLayout::BSH:  // H index n * D + d
      return {st[0], headDim * st[2], st[1], st[2]};
    case FaLayout::SBH:
      return {st[1], headDim * st[2], st[0], st[2]};
    case FaLayout::TND:
      return {0, st[1], st[0], st[2]};
  }
  return {};
}

uint64_t faDropoutElements(const FaSizes& s) {
  uint64_t elements = 0;
  if (s.tnd()) {
    for (size_t b = 0; b < s.seqQ.size(); ++b) {
      elements = satAdd(elements, satMul(static_cast<uint64_t>(s.seqQ[b]), static_cast<uint64_t>(s.seqKv[b])));
    }
    return satMul(elements, static_cast<uint64_t>(s.n1));
  }
  return satMul(satMul(static_cast<uint64_t>(s.b), static_cast<uint64_t>(s.n1)),
                satMul(static_cast<uint64_t>(s.s1), static_cast<uint64_t>(s.s2)));
}

}  // namespace gradkit::ops
