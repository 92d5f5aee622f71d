// The client side of streaming: SSE framing across arbitrary splits, the chunk timing rules, and
// a whole benchmark against an in-process fake OpenAI server (httplib) that streams known chunks.
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>
#include <thread>

#include "bench/benchmark.h"
#include "bench/sse_parser.h"
#include "bench/stream_request.h"
#include "core/error.h"

namespace gs::bench {
namespace {

TEST(Sse, PayloadsSurviveAnySplit) {
  const std::string stream =
      ": keep-alive\n\ndata: {\"a\":1}\n\ndata:{\"b\":2}\r\n\r\nevent: x\ndata: [DONE]\n\n";
  const std::vector<std::string> want = {"{\"a\":1}", "{\"b\":2}", "[DONE]"};
  std::mt19937_64 rng(std::random_device{}());
  for (int trial = 0; trial < 200; ++trial) {
    SseParser p;
    std::vector<std::string> got;
    size_t at = 0;
    while (at < stream.size()) {
      const size_t n = 1 + rng() % 7;
      for (auto& s : p.feed(std::string_view(stream).substr(at, n))) got.push_back(s);
      at += n;
    }
    for (auto& s : p.finish()) got.push_back(s);
    EXPECT_EQ(got, want);
  }
  SseParser p;
  EXPECT_TRUE(p.feed("data: {\"x\":1}").empty());
  EXPECT_EQ(p.finish(), std::vector<std::string>{"{\"x\":1}"});  // no final newline
}

TEST(StreamTimer, ChatSkipsRoleAndUsageChunksAndGivesOneGapPerChunk) {
  RequestResult r;
  StreamTimer t(ApiEndpoint::ChatCompletions);
  t.on_payload(R"({"choices":[{"delta":{"role":"assistant","content":""}}]})", 0.05, r);
  t.on_payload(R"({"choices":[{"delta":{"content":"Hel"}}]})", 0.20, r);
  t.on_payload(R"({"choices":[{"delta":{"content":"lo, wor"}}]})", 0.25, r);  // several tokens: one gap
  t.on_payload(R"({"choices":[{"delta":{"reasoning_content":"hmm"}}]})", 0.32, r);
  t.on_payload(R"({"choices":[{"delta":{},"finish_reason":"stop"}]})", 0.40, r);
  t.on_payload(R"({"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":5}})", 0.41, r);
  t.on_payload("[DONE]", 0.42, r);
  EXPECT_TRUE(t.done());
  EXPECT_DOUBLE_EQ(r.ttft, 0.20);
  ASSERT_EQ(r.itl.size(), 2u);
  EXPECT_NEAR(r.itl[0], 0.05, 1e-12);
  EXPECT_NEAR(r.itl[1], 0.07, 1e-12);
  EXPECT_DOUBLE_EQ(r.latency, 0.32);  // the last chunk that carried text
  EXPECT_EQ(r.generated_text, "Hello, worhmm");
  EXPECT_EQ(r.output_tokens, 5);
  EXPECT_TRUE(r.output_tokens_from_usage);
  EXPECT_EQ(r.prompt_len, 7);  // taken from usage only when the dataset did not know it
}

TEST(StreamTimer, ChatTokensWithoutTextStillCount) {
  // A server that sends one chunk per token, "" for tokens with no text yet (vLLM does).
  RequestResult r;
  StreamTimer t(ApiEndpoint::ChatCompletions);
  t.on_payload(R"({"choices":[{"delta":{"role":"assistant"}}]})", 0.01, r);
  t.on_payload(R"({"choices":[{"delta":{"content":""}}]})", 0.10, r);
  t.on_payload(R"({"choices":[{"delta":{"content":"\u00e9"}}]})", 0.11, r);
  t.on_payload(R"({"choices":[{"delta":{"content":""},"finish_reason":"length"}]})", 0.13, r);
  t.on_payload(R"({"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":3}})", 0.14, r);
  EXPECT_DOUBLE_EQ(r.ttft, 0.10);
  ASSERT_EQ(r.itl.size(), 2u);  // completion_tokens - 1
  EXPECT_DOUBLE_EQ(r.latency, 0.13);
  EXPECT_EQ(r.generated_text, "\xC3\xA9");
  EXPECT_EQ(r.output_tokens, 3);
}

TEST(StreamTimer, ChatRoleChunkWithTextIsAToken) {
  RequestResult r;
  StreamTimer t(ApiEndpoint::ChatCompletions);
  t.on_payload(R"({"choices":[{"delta":{"role":"assistant","content":"Hi"}}]})", 0.2, r);
  EXPECT_DOUBLE_EQ(r.ttft, 0.2);
  EXPECT_EQ(r.generated_text, "Hi");
  EXPECT_TRUE(t.any_tokens());
}

TEST(StreamTimer, CompletionsTextAndErrors) {
  RequestResult r;
  r.prompt_len = 3;
  StreamTimer t(ApiEndpoint::Completions);
  t.on_payload(R"({"choices":[{"text":""}]})", 0.1, r);  // a token with no text yet: counts (vLLM)
  t.on_payload(R"({"choices":[{"text":"a"}],"usage":null})", 0.2, r);
  t.on_payload(R"({"choices":[{"text":"b"}],"usage":{"prompt_tokens":9,"completion_tokens":3}})", 0.3, r);
  t.on_payload(R"({"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3}})", 0.4, r);
  EXPECT_DOUBLE_EQ(r.ttft, 0.1);
  EXPECT_EQ(r.itl.size(), 2u);
  EXPECT_DOUBLE_EQ(r.latency, 0.3);
  EXPECT_EQ(r.prompt_len, 3);
  EXPECT_EQ(r.output_tokens, 3);
  EXPECT_THROW(t.on_payload("{not json", 0.4, r), Error);
  EXPECT_THROW(t.on_payload(R"({"error":{"message":"boom"}})", 0.4, r), Error);
}

TEST(RequestBody, EndpointsIgnoreEosAndExtraBody) {
  RequestSettings s;
  s.model = "m";
  s.ignore_eos = true;
  s.extra_body = {{"top_k", 5}, {"temperature", 0.7}};
  const nlohmann::json c = request_body(s, {"hi", 1, 9});
  EXPECT_EQ(c["prompt"], "hi");
  EXPECT_EQ(c["max_tokens"], 9);
  EXPECT_EQ(c["ignore_eos"], true);
  EXPECT_EQ(c["top_k"], 5);
  EXPECT_EQ(c["temperature"], 0.7);  // extra body wins
  EXPECT_EQ(c["stream_options"]["include_usage"], true);
  s.endpoint = ApiEndpoint::ChatCompletions;
  const nlohmann::json m = request_body(s, {"hi", 1, 9});
  EXPECT_EQ(m["messages"][0]["content"], "hi");
  EXPECT_FALSE(m.contains("prompt"));
  EXPECT_THROW(parse_api_endpoint("/v1/embeddings"), Error);
  EXPECT_THROW(parse_base_url("127.0.0.1:8000"), Error);
  EXPECT_EQ(parse_base_url("http://h:1/pre/").path_prefix, "/pre");
}

// A fake OpenAI server: /v1/completions streams `max_tokens` one-letter chunks (a usage chunk
// at the end unless the prompt is "nousage"); the prompt "fail" gets a 400, "cut" drops the
// connection after two chunks, "nodone" ends the stream cleanly without [DONE]; /metrics exposes
// vLLM's speculative decoding counters, which grow by 3 drafts / 6 accepted per request.
class FakeServer {
 public:
  FakeServer() {
    srv_.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
      const auto body = nlohmann::json::parse(req.body);
      const std::string prompt = body["prompt"];
      if (prompt == "fail") {
        res.status = 400;
        res.set_content(R"({"error":{"message":"bad prompt"}})", "application/json");
        return;
      }
      drafts_ += 3;
      accepted_ += 6;
      const int n = body["max_tokens"];
      const bool usage = prompt != "nousage";
      res.set_chunked_content_provider("text/event-stream", [n, usage, prompt](size_t, httplib::DataSink& sink) {
        for (int i = 0; i < n; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          const std::string c = "data: {\"choices\":[{\"text\":\"x\"}]}\n\n";
          sink.write(c.data(), c.size());
          if (prompt == "cut" && i == 1) return false;  // httplib closes without the last chunk
        }
        if (prompt == "nodone") {
          sink.done();
          return true;
        }
        std::string tail = usage ? "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":" +
                                       std::to_string(n) + "}}\n\n"
                                 : "";
        tail += "data: [DONE]\n\n";
        sink.write(tail.data(), tail.size());
        sink.done();
        return true;
      });
    });
    srv_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content("# HELP x\nvllm:spec_decode_num_drafts_total{model=\"m\"} " + std::to_string(drafts_.load()) +
                          "\nvllm:spec_decode_num_accepted_tokens_total{model=\"m\"} " +
                          std::to_string(accepted_.load()) + "\n",
                      "text/plain");
    });
    port_ = srv_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { srv_.listen_after_bind(); });
    while (!srv_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeServer() {
    srv_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server srv_;
  std::atomic<int> drafts_{0}, accepted_{0};
  int port_ = 0;
  std::thread thread_;
};

TEST(LoadRunner, RunsAgainstAFakeServerAndMeasuresEveryChunk) {
  FakeServer server;
  LoadOptions o;
  o.base_url = server.url();
  o.max_concurrency = 3;
  o.progress = false;
  o.warmup_requests = 2;
  o.timeout_s = 30;
  RequestSettings s;
  s.model = "m";
  std::vector<BenchRequest> ds;
  for (int i = 0; i < 8; ++i) ds.push_back({"p" + std::to_string(i), 4, 2 + i});
  ds.push_back({"fail", 4, 3});
  ds.push_back({"nousage", 4, 5});
  const BenchmarkRun b = run_benchmark(o, s, ds, nullptr, {});
  EXPECT_EQ(b.metrics.completed, 9);
  EXPECT_EQ(b.metrics.failed, 1);
  EXPECT_NE(b.run.results[8].error.find("HTTP 400"), std::string::npos);
  EXPECT_NE(b.run.results[8].error.find("bad prompt"), std::string::npos);
  for (int i = 0; i < 8; ++i) {
    const RequestResult& r = b.run.results[static_cast<size_t>(i)];
    ASSERT_TRUE(r.success) << r.error;
    EXPECT_EQ(r.output_tokens, 2 + i);
    EXPECT_TRUE(r.output_tokens_from_usage);
    EXPECT_EQ(r.itl.size(), static_cast<size_t>(1 + i));
    EXPECT_LE(r.ttft, r.latency);
    EXPECT_EQ(r.generated_text, std::string(static_cast<size_t>(2 + i), 'x'));
  }
  // No usage and no tokenizer: counted as chunks.
  EXPECT_EQ(b.run.results[9].output_tokens, 5);
  EXPECT_FALSE(b.run.results[9].output_tokens_from_usage);
  EXPECT_EQ(b.metrics.total_output, 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 5);
  // 9 requests after the warmup, 3 drafts and 6 accepted tokens each: 1 + 6/3.
  ASSERT_TRUE(b.spec_accept_length.has_value());
  EXPECT_DOUBLE_EQ(*b.spec_accept_length, 3.0);
}

TEST(LoadRunner, BrokenStreamsSayWhatHappened) {
  FakeServer server;
  LoadOptions o;
  o.base_url = server.url();
  o.progress = false;
  o.timeout_s = 30;
  RequestSettings s;
  s.model = "m";
  const BenchmarkRun b = run_benchmark(o, s, {{"cut", 4, 6}, {"nodone", 4, 3}, {"ok", 4, 3}}, nullptr, {});
  EXPECT_EQ(b.metrics.failed, 2);
  EXPECT_NE(b.run.results[0].error.find("closed or reset the connection after HTTP 200 and"), std::string::npos)
      << b.run.results[0].error;
  EXPECT_NE(b.run.results[0].error.find("[httplib: Read"), std::string::npos) << b.run.results[0].error;
  EXPECT_NE(b.run.results[1].error.find("without \"data: [DONE]\""), std::string::npos) << b.run.results[1].error;
  EXPECT_TRUE(b.run.results[2].success) << b.run.results[2].error;
}

TEST(HttpClient, FailuresAreDescribed) {
  TransferProgress none;
  EXPECT_EQ(describe_failure("http://h:1", httplib::Error::Read, none, 600),
            "the server closed or reset the connection before any response [httplib: Read]");
  TransferProgress quiet{200, 42, 5.0};
  EXPECT_EQ(describe_failure("http://h:1", httplib::Error::Read, quiet, 5),
            "no data from the server for 5 s (--timeout) [httplib: Read]");
  EXPECT_NE(describe_failure("http://h:1", httplib::Error::Write, none, 5).find("could not be sent"), std::string::npos);
}

TEST(LoadRunner, ConnectionFailuresAreFailedRequestsNotCrashes) {
  // A port that was free a moment ago and has no listener now: connecting is refused at once.
  int port = 0;
  {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
    port = ntohs(a.sin_port);
    ::close(fd);
  }
  LoadOptions o;
  o.base_url = "http://127.0.0.1:" + std::to_string(port);
  o.progress = false;
  o.timeout_s = 5;
  RequestSettings s;
  s.model = "m";
  const BenchmarkRun b = run_benchmark(o, s, {{"a", 1, 2}, {"b", 1, 2}}, nullptr, {});
  EXPECT_EQ(b.metrics.failed, 2);
  EXPECT_EQ(b.run.results[0].error.rfind("cannot connect to " + o.base_url + " [httplib: Connection", 0), 0u)
      << b.run.results[0].error;
  EXPECT_FALSE(b.spec_accept_length.has_value());
}

}  // namespace
}  // namespace gs::bench
