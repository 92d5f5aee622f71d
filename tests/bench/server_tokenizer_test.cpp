// The server's tokenizer as bench uses it when --tokenizer is not given, against an in-process
// server that answers POST /tokenize and /detokenize the way gemmaserve does (400 for an id
// outside the vocabulary, skip_special_tokens) with the demo tokenizer: the same exact prompt
// lengths as the local tokenizer, no special tokens in the pool, and a clear error for a server
// that does not tokenize. (tests/e2e/bench_demo.sh runs bench this way against gemmaserve itself.)
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "bench/bench_tokenizer.h"
#include "bench/dataset.h"
#include "core/error.h"
#include "tokenizer/demo_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace gs::bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class TokenizingServer {
 public:
  TokenizingServer(std::shared_ptr<const Tokenizer> tok, bool tokenizes) : tok_(std::move(tok)) {
    if (tokenizes) {
      srv_.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
        const json j = json::parse(req.body);
        const std::vector<int> ids = tok_->encode(j.at("prompt").get<std::string>(), j.value("add_special_tokens", true));
        res.set_content(json{{"tokens", ids}, {"count", ids.size()}}.dump(), "application/json");
      });
      srv_.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
        const json j = json::parse(req.body);
        const std::vector<int> ids = j.at("tokens").get<std::vector<int>>();
        for (int id : ids) {
          if (id < 0 || id >= tok_->vocab_size()) {
            res.status = 400;
            res.set_content(R"({"error":{"message":"not a token id"}})", "application/json");
            return;
          }
        }
        const std::string text = tok_->decode(ids, j.value("skip_special_tokens", false));
        res.set_content(json{{"prompt", text}}.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
      });
    }
    srv_.set_tcp_nodelay(true);  // as gemmaserve: no 40 ms delayed-ACK stall per small answer
    port_ = srv_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { srv_.listen_after_bind(); });
    while (!srv_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~TokenizingServer() {
    srv_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  std::shared_ptr<const Tokenizer> tok_;
  httplib::Server srv_;
  int port_ = 0;
  std::thread thread_;
};

class ServerTokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gs_bench_stok_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    write_demo_tokenizer(dir_.string());
    tok_ = Tokenizer::load(dir_.string());
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::shared_ptr<const Tokenizer> tok_;
};

TEST_F(ServerTokenizerTest, SameTextsAndCountsAsTheLocalTokenizer) {
  TokenizingServer server(tok_, true);
  auto remote = server_bench_tokenizer(server.url(), "", "demo", 10);
  auto local = local_bench_tokenizer(tok_, "demo");
  EXPECT_EQ(remote->description(), server.url() + "/tokenize");
  const std::string text = "Hello world, the sea is calm tonight.";
  EXPECT_EQ(remote->encode(text), local->encode(text));
  EXPECT_EQ(remote->decode(local->encode(text)), text);

  // The probed pool: ordinary tokens only, most of the local pool (the demo vocabulary is small
  // enough to probe whole).
  const std::vector<int> pool = remote->prompt_token_pool(1);
  const std::vector<int> local_pool = local->prompt_token_pool(1);
  for (int id : pool) EXPECT_FALSE(tok_->is_special(id)) << id;
  EXPECT_GT(pool.size(), local_pool.size() / 2);

  RandomDatasetOptions o;
  o.num_prompts = 8;
  o.input_len = 40;
  o.range_ratio = 0.5;
  o.prefix_len = 6;
  o.seed = 5;
  for (const auto& r : random_dataset(*remote, o)) {
    EXPECT_EQ(static_cast<int>(tok_->encode(r.prompt).size()), r.prompt_len);
    EXPECT_GE(r.prompt_len, 6 + 20);
    EXPECT_LE(r.prompt_len, 6 + 60);
  }
}

TEST_F(ServerTokenizerTest, AServerThatDoesNotTokenizeIsAClearError) {
  TokenizingServer server(tok_, false);
  try {
    server_bench_tokenizer(server.url(), "", "demo", 10);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not tokenize"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("HTTP 404"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gs::bench
