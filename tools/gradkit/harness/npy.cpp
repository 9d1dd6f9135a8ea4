#include "harness/npy.h"

#include <fstream>

#include "base/dtype.h"
#include "harness/error.h"

namespace gradkit::cli {

std::string npyDescr(aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT:
      return "<f4";
    case ACL_FLOAT16:
      return "<f2";
    case ACL_DOUBLE:
      return "<f8";
    case ACL_INT8:
      return "|i1";
    case ACL_UINT8:
    case ACL_FLOAT8_E4M3FN:
    case ACL_FLOAT8_E5M2:
      return "|u1";
    case ACL_INT16:
      return "<i2";
    case ACL_UINT16:
    case ACL_BF16:
      return "<u2";
    case ACL_INT32:
      return "<i4";
    case ACL_UINT32:
      return "<u4";
    case ACL_INT64:
      return "<i8";
    case ACL_UINT64:
      return "<u8";
    case ACL_BOOL:
      return "|b1";
    default:
      throw HarnessError("no .npy type for dtype " + dtypeName(dtype));
  }
}

std::string npyBytes(aclDataType dtype, const std::vector<int64_t>& shape, const void* data) {
  std::string shapeText = "(";
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    shapeText += std::to_string(shape[d]);
    if (d + 1 < shape.size() || shape.size() == 1) shapeText += ",";
    if (d + 1 < shape.size()) shapeText += " ";
    n *= shape[d];
  }
  shapeText += ")";
  std::string header = "{'descr': '" + npyDescr(dtype) + "', 'fortran_order': False, 'shape': " + shapeText + ", }";
  // magic (6) + version (2) + header length (2) + header, padded with spaces to a multiple of 64, ending in \n.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';

  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>((header.size() >> 8) & 0xff);
  bytes += header;
  if (n > 0) bytes.append(static_cast<const char*>(data), static_cast<size_t>(n) * dtypeSize(dtype));
  return bytes;
}

void writeNpy(const std::filesystem::path& path, aclDataType dtype, const std::vector<int64_t>& shape,
              const void* data) {
  std::error_code error;
  std::filesystem::create_directories(path.parent_path(), error);
  if (error) throw HarnessError("cannot create " + path.parent_path().string() + ": " + error.message());
  const std::string bytes = npyBytes(dtype, shape, data);
  std::ofstream file(path, std::ios::binary);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!file) throw HarnessError("cannot write " + path.string());
}

}  // namespace gradkit::cli
