#include "core/read_file.h"

#include <fstream>
#include <sstream>

#include "core/error.h"

namespace gs {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  GS_CHECK(f.good(), "{}: cannot open for reading", path);
  std::ostringstream ss;
  ss << f.rdbuf();
  GS_CHECK(!f.bad(), "{}: read error", path);
  return ss.str();
}

}  // namespace gs
