// Where serve's API key comes from: exactly one of --api-key, --api-key-file and
// $GEMMASERVE_API_KEY; the file's first line without trailing whitespace; an empty key or an
// unreadable file is an error, never a silently open server.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "core/error.h"
#include "server/api_key.h"

namespace gs::server {
namespace {

namespace fs = std::filesystem;
using std::nullopt;

ApiKeySources sources(std::optional<std::string> flag, std::optional<std::string> file, std::optional<std::string> env) {
  ApiKeySources s;
  s.flag = std::move(flag);
  s.file = std::move(file);
  s.env = std::move(env);
  return s;
}

class ApiKeyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("gs_api_key_test_" + std::to_string(::getpid()));
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) {
    std::string p = (dir / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  static std::string error_of(const ApiKeySources& s) {
    try {
      resolve_api_key(s);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir;
};

TEST_F(ApiKeyTest, NoSourceMeansNoKey) { EXPECT_EQ(resolve_api_key(sources(nullopt, nullopt, nullopt)), ""); }

TEST_F(ApiKeyTest, EachSourceAlone) {
  EXPECT_EQ(resolve_api_key(sources("k1", nullopt, nullopt)), "k1");
  EXPECT_EQ(resolve_api_key(sources(nullopt, nullopt, "k2")), "k2");
  EXPECT_EQ(resolve_api_key(sources(nullopt, write("key", "k3\n"), nullopt)), "k3");
}

TEST_F(ApiKeyTest, TheFilesFirstLineWithoutTrailingWhitespace) {
  EXPECT_EQ(read_api_key_file(write("a", "sk-abc \t\r\n")), "sk-abc");
  EXPECT_EQ(read_api_key_file(write("b", "sk-abc")), "sk-abc");
  EXPECT_EQ(read_api_key_file(write("c", "first\nsecond\n")), "first");
}

TEST_F(ApiKeyTest, BadFilesAreErrorsNamingThePath) {
  for (const std::string& p : {write("empty", ""), write("blank", " \n"), (dir / "missing").string(), dir.string()}) {
    std::string err = error_of(sources(nullopt, p, nullopt));
    EXPECT_NE(err.find(p), std::string::npos) << p << ": " << err;
  }
}

TEST_F(ApiKeyTest, MoreThanOneSourceIsAnError) {
  std::string key = write("key", "k\n");
  for (const ApiKeySources& s : {sources("a", key, nullopt), sources("a", nullopt, "b"), sources(nullopt, key, "b"),
                                 sources("a", key, "b")}) {
    std::string err = error_of(s);
    EXPECT_NE(err.find("more than once"), std::string::npos) << err;
  }
  EXPECT_NE(error_of(sources("a", nullopt, "b")).find("--api-key, $GEMMASERVE_API_KEY"), std::string::npos);
}

TEST_F(ApiKeyTest, AnEmptyKeyIsAnError) {
  EXPECT_NE(error_of(sources("", nullopt, nullopt)).find("--api-key is empty"), std::string::npos);
  EXPECT_NE(error_of(sources(nullopt, nullopt, "")).find("GEMMASERVE_API_KEY is set but empty"), std::string::npos);
}

}  // namespace
}  // namespace gs::server
