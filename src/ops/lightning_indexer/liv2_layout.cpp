#include "ops/lightning_indexer/liv2_layout.h"

#include <cstring>

namespace gradkit::ops {

std::optional<LiV2Layout> liv2LayoutFromName(const char* name) {
  if (name == nullptr) return std::nullopt;
  if (std::strcmp(name, "BSND") == 0) return LiV2Layout::BSND;
  if (std::strcmp(name, "TND") == 0) return LiV2Layout::TND;
  if (std::strcmp(name, "PA_BBND") == 0) return LiV2Layout::PaBbnd;
  return std::nullopt;
}

const char* liv2LayoutName(LiV2Layout layout) {
  switch (layout) {
    case LiV2Layout::BSND:
      return "BSND";
    case LiV2Layout::TND:
      return "TND";
    case LiV2Layout::PaBbnd:
      return "PA_BBND";
  }
  return "?";
}

bool liv2TopkAllowed(int64_t topk, bool ascend950) {
  if (topk < 1 || topk > kLiV2MaxTopk) return false;
  if (ascend950 || topk <= 2048) return true;
  return topk % 1024 == 0 && topk >= 3072;
}

int64_t liv2QueryRank(LiV2Layout layoutQ) { return layoutQ == LiV2Layout::TND ? 3 : 4; }
int64_t liv2KeyRank(LiV2Layout layoutK) { return layoutK == LiV2Layout::TND ? 3 : 4; }

LiV2Dims liv2DimsOf(LiV2Layout layoutQ, LiV2Layout layoutK, const std::vector<int64_t>& q,
                    const std::vector<int64_t>& k, int64_t cuSeqlensQCount, int64_t tableColumns, int64_t topk) {
  LiV2Dims d;
  d.layoutQ = layoutQ;
  d.layoutK = layoutK;
  d.topk = topk;
  if (layoutQ == LiV2Layout::BSND) {
    d.batch = q[0];
    d.querySeq = q[1];
    d.queryRows = q[0] * q[1];
    d.heads = q[2];
  } else {
    d.batch = cuSeqlensQCount - 1;
    d.querySeq = q[0];
    d.queryRows = q[0];
    d.heads = q[1];
  }
  switch (layoutK) {
    case LiV2Layout::BSND:
      d.keySeq = k[1];
      d.keyRows = k[0] * k[1];
      break;
    case LiV2Layout::TND:
      d.keySeq = k[0];
      d.keyRows = k[0];
      break;
    case LiV2Layout::PaBbnd:
      d.blockNum = k[0];
      d.blockSize = k[1];
      d.tableColumns = tableColumns;
      d.keySeq = tableColumns * k[1];
      d.keyRows = k[0] * k[1];
      break;
  }
  return d;
}

std::vector<int64_t> liv2RowLead(const LiV2Dims& dims) {
  if (dims.layoutQ == LiV2Layout::BSND) return {dims.batch, dims.querySeq};
  return {dims.querySeq};
}

namespace {
std::vector<int64_t> withTail(std::vector<int64_t> lead, std::initializer_list<int64_t> tail) {
  lead.insert(lead.end(), tail);
  return lead;
}
}  // namespace

std::vector<int64_t> liv2WeightShape(const LiV2Dims& dims) { return withTail(liv2RowLead(dims), {dims.heads}); }
std::vector<int64_t> liv2OutputShape(const LiV2Dims& dims) {
  return withTail(liv2RowLead(dims), {kLiV2KeyHeads, dims.topk});
}
std::vector<int64_t> liv2OffsetShape(const LiV2Dims& dims) { return withTail(liv2RowLead(dims), {kLiV2KeyHeads}); }

std::string liv2Quoted(const char* text) {
  std::string quoted(1, '"');
  quoted.append(text);
  quoted.push_back('"');
  return quoted;
}

std::string liv2OutputShapeText(LiV2Layout layoutQ) {
  return layoutQ == LiV2Layout::BSND ? "[B, S1, 1, topk]" : "[T1, 1, topk]";
}

std::vector<LiV2Batch> liv2BatchesOf(const LiV2Dims& dims, const LiV2Values& v) {
  std::vector<LiV2Batch> batches(static_cast<size_t>(dims.batch));
  for (int64_t b = 0; b < dims.batch; ++b) {
    LiV2Batch& x = batches[static_cast<size_t>(b)];
    if (dims.layoutQ == LiV2Layout::BSND) {
      x.firstRow = b * dims.querySeq;
      x.rows = dims.querySeq;
    } else {
      x.firstRow = v.cuSeqlensQ[static_cast<size_t>(b)];
      x.rows = v.cuSeqlensQ[static_cast<size_t>(b + 1)] - x.firstRow;
    }
    x.usedRows = v.sequsedQ.empty() ? x.rows : v.sequsedQ[static_cast<size_t>(b)];
    switch (dims.layoutK) {
      case LiV2Layout::BSND:
        x.firstKey = b * dims.keySeq;
        x.keys = dims.keySeq;
        break;
      case LiV2Layout::TND:
        x.firstKey = v.cuSeqlensK[static_cast<size_t>(b)];
        x.keys = v.cuSeqlensK[static_cast<size_t>(b + 1)] - x.firstKey;
        break;
      case LiV2Layout::PaBbnd:
        x.keys = dims.keySeq;
        break;
    }
    x.usedKeys = v.sequsedK.empty() ? x.keys : v.sequsedK[static_cast<size_t>(b)];
    x.residual = v.cmpResidualK.empty() ? 0 : v.cmpResidualK[static_cast<size_t>(b)];
  }
  return batches;
}

}  // namespace gradkit::ops
