#include "server/api_key.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/error.h"

namespace gs::server {

namespace {

void strip_trailing_space(std::string& s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) s.pop_back();
}

}  // namespace

std::string read_api_key_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error("--api-key-file {}: is a directory, not a file", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("--api-key-file {}: cannot be read ({})", path, std::strerror(errno));
  std::string key;
  std::getline(in, key);
  if (in.bad()) throw Error("--api-key-file {}: cannot be read ({})", path, std::strerror(errno));
  strip_trailing_space(key);
  if (key.empty()) throw Error("--api-key-file {}: the first line is empty (the file must hold the key)", path);
  return key;
}

std::string resolve_api_key(const ApiKeySources& sources) {
  std::vector<std::string> given;
  if (sources.flag) given.push_back("--api-key");
  if (sources.file) given.push_back("--api-key-file");
  if (sources.env) given.push_back(std::string("$") + kApiKeyEnv);
  if (given.size() > 1) {
    std::string list;
    for (const auto& g : given) list += (list.empty() ? "" : ", ") + g;
    throw Error("the API key is given more than once ({}): give it one way only", list);
  }
  if (sources.flag) {
    if (sources.flag->empty()) throw Error("--api-key is empty: leave it out to serve without a key");
    return *sources.flag;
  }
  if (sources.file) return read_api_key_file(*sources.file);
  if (sources.env) {
    if (sources.env->empty()) throw Error("${} is set but empty: unset it to serve without a key", kApiKeyEnv);
    return *sources.env;
  }
  return "";
}

}  // namespace gs::server
