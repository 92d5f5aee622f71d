// Shared helpers of the tokenizer tests: test data paths, the Hugging Face reference (run through
// node), and the corpus of test strings.
#pragma once
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gs::testing {

inline std::string testdata(const std::string& rel) { return std::string(GS_TESTDATA_DIR) + "/" + rel; }
inline std::string source_path(const std::string& rel) { return std::string(GS_SOURCE_DIR) + "/" + rel; }

inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

// A fresh directory under the system temp dir, removed by the destructor.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("gs_tok_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
  static int& counter() {
    static int c = 0;
    return c;
  }
};

inline std::vector<std::string> corpus() {
  return nlohmann::json::parse(read_text(source_path("tests/tokenizer/data/tokenizer_corpus.json")))
      .get<std::vector<std::string>>();
}

struct Reference {
  std::vector<std::vector<int>> ids;
  std::vector<std::string> decoded;
};

// Runs tests/node/tokenize_reference.js (Hugging Face `tokenizers`) on `strings`. Fails the test
// (returns false) with instructions when node or the package is missing.
inline bool hf_reference(const std::string& tokenizer_json, const std::vector<std::string>& strings, Reference* out) {
  const std::string node_modules = source_path("tests/node/node_modules/tokenizers");
  if (!std::filesystem::exists(node_modules)) {
    ADD_FAILURE() << "The Hugging Face reference is not installed: run `npm ci` in " << source_path("tests/node");
    return false;
  }
  TempDir dir;
  const std::string in = dir.file("strings.json"), res = dir.file("reference.json");
  write_text(in, nlohmann::json(strings).dump());
  const std::string cmd = "node '" + source_path("tests/node/tokenize_reference.js") + "' '" + tokenizer_json + "' '" +
                          in + "' '" + res + "'";
  const int rc = std::system(cmd.c_str());
  if (rc != 0) {
    ADD_FAILURE() << "reference command failed (exit " << rc << "): " << cmd
                  << "\n(is node installed, and was `npm ci` run in tests/node?)";
    return false;
  }
  const auto j = nlohmann::json::parse(read_text(res));
  out->ids = j.at("ids").get<std::vector<std::vector<int>>>();
  out->decoded = j.at("decoded").get<std::vector<std::string>>();
  return true;
}

}  // namespace gs::testing
