#include "harness/case_file.h"

#include <fstream>
#include <set>

#include "harness/error.h"

namespace gradkit::cli {
namespace {

using nlohmann::json;

// Replaces every string "$<var>" in `node` by `value`.
void substitute(json& node, const std::string& token, int64_t value) {
  if (node.is_string()) {
    if (node.get<std::string>() == token) node = value;
  } else if (node.is_array() || node.is_object()) {
    for (auto& child : node) substitute(child, token, value);
  }
}

// Replaces "{key}" in `name` by `text`, or appends "_<text>" when the name has no such placeholder.
std::string nameWith(const std::string& name, const std::string& key, const std::string& text) {
  const std::string placeholder = "{" + key + "}";
  const size_t at = name.find(placeholder);
  if (at == std::string::npos) return name + "_" + text;
  std::string result = name;
  result.replace(at, placeholder.size(), text);
  return result;
}

std::vector<int64_t> sweepValues(const json& sweep, const std::string& caseName) {
  const std::string where = "case '" + caseName + "': 'sweep'";
  std::vector<int64_t> values;
  if (sweep.contains("values")) {
    if (!sweep["values"].is_array()) throw HarnessError(where + " 'values' must be a list of integers");
    for (const auto& v : sweep["values"]) {
      if (!v.is_number_integer()) throw HarnessError(where + " 'values' must hold integers, given " + v.dump());
      values.push_back(v.get<int64_t>());
    }
  } else if (sweep.contains("from") && sweep.contains("to")) {
    const auto from = sweep["from"].get<int64_t>();
    const auto to = sweep["to"].get<int64_t>();
    const auto step = sweep.value("step", int64_t{1});
    if (step <= 0 || to < from) {
      throw HarnessError(where + " needs from <= to and step >= 1, given " + sweep.dump());
    }
    for (int64_t v = from; v <= to; v += step) values.push_back(v);
  } else {
    throw HarnessError(where + " needs 'values' or 'from' and 'to', given " + sweep.dump());
  }
  return values;
}

std::vector<json> expandOne(const json& item) {
  if (!item.is_object() || !item.contains("name") || !item["name"].is_string()) {
    throw HarnessError("every case must be an object with a string 'name', given " + item.dump().substr(0, 200));
  }
  const std::string name = item["name"].get<std::string>();

  std::vector<json> byDtype;
  if (item.contains("dtype") && item["dtype"].is_array()) {
    if (item["dtype"].empty()) throw HarnessError("case '" + name + "': 'dtype' list is empty");
    for (const auto& dtype : item["dtype"]) {
      if (!dtype.is_string()) throw HarnessError("case '" + name + "': dtypes must be strings");
      json one = item;
      one["dtype"] = dtype;
      one["name"] = nameWith(one["name"].get<std::string>(), "dtype", dtype.get<std::string>());
      byDtype.push_back(std::move(one));
    }
  } else {
    byDtype.push_back(item);
  }

  std::vector<json> expanded;
  for (json& one : byDtype) {
    if (!one.contains("sweep")) {
      expanded.push_back(std::move(one));
      continue;
    }
    const json sweep = one["sweep"];
    if (!sweep.is_object() || !sweep.contains("var") || !sweep["var"].is_string()) {
      throw HarnessError("case '" + name + "': 'sweep' must be an object with a string 'var'");
    }
    const std::string var = sweep["var"].get<std::string>();
    one.erase("sweep");
    for (int64_t value : sweepValues(sweep, name)) {
      json concrete = one;
      substitute(concrete, "$" + var, value);
      concrete["name"] = nameWith(one["name"].get<std::string>(), var, std::to_string(value));
      expanded.push_back(std::move(concrete));
    }
  }
  return expanded;
}

}  // namespace

std::vector<json> expandCases(const json& cases) {
  if (!cases.is_array()) throw HarnessError("cases must be a list");
  std::vector<json> expanded;
  std::set<std::string> names;
  for (const auto& item : cases) {
    for (json& one : expandOne(item)) {
      const std::string name = one["name"].get<std::string>();
      if (!names.insert(name).second) throw HarnessError("duplicate case name '" + name + "'");
      expanded.push_back(std::move(one));
    }
  }
  return expanded;
}

CaseFile parseCaseFile(const json& file, const std::string& source) {
  try {
    if (!file.is_object() || !file.contains("op") || !file["op"].is_string()) {
      throw HarnessError("expected an object with a string 'op'");
    }
    CaseFile result;
    result.op = file["op"].get<std::string>();
    if (file.contains("cases")) result.cases = expandCases(file["cases"]);
    if (file.contains("bench")) result.bench = expandCases(file["bench"]);
    return result;
  } catch (const HarnessError& error) {
    throw HarnessError(source + ": " + error.what());
  } catch (const json::exception& error) {
    throw HarnessError(source + ": " + error.what());
  }
}

CaseFile loadCaseFile(const std::filesystem::path& path) {
  std::ifstream stream(path);
  if (!stream) throw HarnessError("cannot read case file " + path.string());
  json file;
  try {
    file = json::parse(stream, nullptr, true, /*ignore_comments=*/true);
  } catch (const json::parse_error& error) {
    throw HarnessError(path.string() + ": " + error.what());
  }
  return parseCaseFile(file, path.string());
}

}  // namespace gradkit::cli
