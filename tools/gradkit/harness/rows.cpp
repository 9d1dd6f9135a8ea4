#include "harness/rows.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "harness/error.h"

namespace gradkit::cli {
namespace {

// Left-aligned text columns, two spaces apart.
void printTable(std::ostream& out, const std::vector<std::vector<std::string>>& table) {
  std::vector<size_t> widths;
  for (const auto& row : table) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  for (const auto& row : table) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line.append(widths[c] - row[c].size() + 2, ' ');
    }
    out << line << '\n';
  }
}

// JSON has no NaN or Inf; nlohmann would write null anyway, this makes it explicit.
nlohmann::json number(double value) { return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(); }

}  // namespace

std::string formatNumber(double value) {
  if (value == 0.0) return "0";
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

std::string formatNumberAs(const char* printfFormat, double value) {
  char text[64];
  std::snprintf(text, sizeof text, printfFormat, value);
  return text;
}

void printVerifyTable(std::ostream& out, const std::vector<VerifyRow>& rows) {
  std::vector<std::vector<std::string>> table{
      {"op", "case", "dtype", "pass", "max_abs_err", "max_rel_err", "bitexact"}};
  const bool extra = std::any_of(rows.begin(), rows.end(), [](const VerifyRow& row) { return !row.extra.empty(); });
  if (extra) table[0].push_back("extra");
  for (const VerifyRow& row : rows) {
    const char* verdict = row.skipped ? "SKIP" : row.passed ? "PASS" : "FAIL";
    table.push_back({row.op, row.caseName, row.dtype, verdict, formatNumber(row.maxAbsErr), formatNumber(row.maxRelErr),
                     row.bitExact ? "yes" : "no"});
    if (extra) table.back().push_back(row.extra);
  }
  printTable(out, table);
  for (const VerifyRow& row : rows) {
    if (!row.passed && !row.skipped) out << "FAIL " << row.op << " " << row.caseName << ": " << row.note << '\n';
  }
}

void printBenchTable(std::ostream& out, const std::vector<BenchRow>& rows) {
  std::vector<std::vector<std::string>> table{
      {"op", "case", "dtype", "seconds", "GB/s", "GFLOP/s", "roofline", "peer_seconds", "peer/ours"}};
  for (const BenchRow& row : rows) {
    const bool peer = row.peerSeconds.has_value();
    auto cell = [](double value) { return std::isnan(value) ? std::string("-") : formatNumber(value); };
    table.push_back({row.op, row.caseName, row.dtype, cell(row.seconds), cell(row.gbps), cell(row.gflops),
                     cell(row.ratio), peer ? formatNumber(*row.peerSeconds) : "-",
                     peer && row.seconds > 0 ? formatNumber(*row.peerSeconds / row.seconds) : "-"});
  }
  printTable(out, table);
  for (const BenchRow& row : rows) {
    if (!row.note.empty()) out << "note " << row.op << " " << row.caseName << ": " << row.note << '\n';
  }
}

nlohmann::json verifyRowsToJson(const std::vector<VerifyRow>& rows) {
  nlohmann::json array = nlohmann::json::array();
  for (const VerifyRow& row : rows) {
    nlohmann::json object{{"op", row.op},
                          {"case", row.caseName},
                          {"dtype", row.dtype},
                          {"passed", row.passed},
                          {"skipped", row.skipped},
                          {"bitexact", row.bitExact},
                          {"max_abs_err", number(row.maxAbsErr)},
                          {"max_rel_err", number(row.maxRelErr)}};
    if (!row.note.empty()) object["note"] = row.note;
    if (!row.outputDigest.empty()) object["output_digest"] = row.outputDigest;
    if (!row.extra.empty()) object["extra"] = row.extra;
    array.push_back(std::move(object));
  }
  return array;
}

nlohmann::json benchRowsToJson(const std::vector<BenchRow>& rows) {
  nlohmann::json array = nlohmann::json::array();
  for (const BenchRow& row : rows) {
    nlohmann::json object{{"op", row.op},
                          {"case", row.caseName},
                          {"dtype", row.dtype},
                          {"seconds", number(row.seconds)},
                          {"gbps", number(row.gbps)},
                          {"gflops", number(row.gflops)},
                          {"ratio", number(row.ratio)}};
    if (row.peerSeconds) object["peer_seconds"] = number(*row.peerSeconds);
    if (!row.note.empty()) object["note"] = row.note;
    array.push_back(std::move(object));
  }
  return array;
}

void writeJsonFile(const std::string& path, const nlohmann::json& json) {
  std::ofstream file(path);
  file << json.dump(2) << '\n';
  if (!file) throw HarnessError("cannot write " + path);
}

}  // namespace gradkit::cli
