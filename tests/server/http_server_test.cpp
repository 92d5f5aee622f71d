// The HTTP server in-process on a loopback port, over an engine stand-in that emits tokens in
// time: routes, authentication, limits, error shapes, SSE framing, disconnects and shutdown.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <regex>
#include <thread>

#include "server/in_process_server.h"

namespace gs::server {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const char* kTemplate =
    "{{ bos_token }}{% for m in messages %}<|turn>{{ m.role }}\n{{ m.content }}<turn|>\n{% endfor %}<|turn>model\n";

// A raw TCP connection to the server (-1 on failure).
int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Reads what the server sends until it closes the connection (bounded by SO_RCVTIMEO).
std::string read_to_end(int fd) {
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

class HttpServerTest : public InProcessServer {
 protected:
  void start(ServerOptions opts = {}, std::chrono::milliseconds tick = 2ms) {
    InProcessServer::start(opts, tick, kTemplate);
  }
  static void expect_error_shape(const httplib::Result& r, int status) {
    ASSERT_TRUE(r) << "no response";
    EXPECT_EQ(r->status, status) << r->body;
    json j = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r->body;
    ASSERT_TRUE(j.contains("error")) << r->body;
    EXPECT_TRUE(j["error"]["message"].is_string());
    EXPECT_TRUE(j["error"]["type"].is_string());
    EXPECT_TRUE(j["error"].contains("param"));
    EXPECT_TRUE(j["error"].contains("code"));
  }

};

TEST_F(HttpServerTest, HealthModelsAndCompletion) {
  start();
  auto h = client->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto m = client->Get("/v1/models");
  ASSERT_TRUE(m);
  EXPECT_EQ(json::parse(m->body)["data"][0]["id"], "demo");
  auto r = client->Post("/v1/completions", R"({"prompt":"Hi","max_tokens":5})", "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["choices"][0]["text"], "HHHHH");  // token 50 of the fake vocabulary is "H"
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 5);
}

TEST_F(HttpServerTest, StreamingIsServerSentEvents) {
  start();
  auto r = client->Post("/v1/chat/completions",
                        R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":4,"stream":true,
                            "stream_options":{"include_usage":true}})",
                        "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_NE(r->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  const std::string& b = r->body;
  ASSERT_GE(b.size(), 14u);
  EXPECT_EQ(b.substr(b.size() - 14), "data: [DONE]\n\n");
  std::string content;
  int events = 0;
  json last;
  for (size_t pos = 0; pos < b.size();) {
    size_t end = b.find("\n\n", pos);
    ASSERT_NE(end, std::string::npos);
    std::string ev = b.substr(pos, end - pos);
    pos = end + 2;
    if (ev[0] == ':') continue;  // keep-alive comment
    ASSERT_EQ(ev.rfind("data: ", 0), 0u) << ev;
    if (ev == "data: [DONE]") break;
    last = json::parse(ev.substr(6));
    ++events;
    if (!last["choices"].empty() && last["choices"][0]["delta"].contains("content")) {
      content += last["choices"][0]["delta"]["content"].get<std::string>();
    }
  }
  EXPECT_EQ(content, "HHHH");
  EXPECT_EQ(last["usage"]["completion_tokens"], 4);
  EXPECT_GE(events, 3);
}

TEST_F(HttpServerTest, ErrorsHaveTheOpenAIShape) {
  ServerOptions o;
  o.max_body_bytes = 1000;
  start(o);
  expect_error_shape(client->Post("/v1/completions", "{not json", "application/json"), 400);
  expect_error_shape(client->Post("/v1/completions", R"({"prompt":"x","temperature":"hot"})", "application/json"), 400);
  expect_error_shape(client->Post("/v1/chat/completions", R"({"messages":[{"role":"robot","content":"x"}]})",
                                  "application/json"), 400);
  expect_error_shape(client->Post("/v1/completions", R"({"model":"other","prompt":"x"})", "application/json"), 404);
  expect_error_shape(client->Get("/v1/nothing"), 404);
  std::string big = json{{"prompt", std::string(5000, 'a')}}.dump();
  expect_error_shape(client->Post("/v1/completions", big, "application/json"), 413);
  // The server is still fine afterwards.
  auto r = client->Post("/v1/completions", R"({"prompt":"x","max_tokens":1})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpServerTest, ApiKey) {
  ServerOptions o;
  o.api_key = "sekret";
  start(o);
  expect_error_shape(client->Get("/v1/models"), 401);
  httplib::Headers wrong = {{"Authorization", "Bearer nope"}};
  expect_error_shape(client->Get("/v1/models", wrong), 401);
  httplib::Headers right = {{"Authorization", "Bearer sekret"}};
  auto r = client->Get("/v1/models", right);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  auto h = client->Get("/health");  // public
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

TEST_F(HttpServerTest, QueueFullIs429) {
  start();
  engine->queue_limit = 0;
  expect_error_shape(client->Post("/v1/completions", R"({"prompt":"x","max_tokens":3})", "application/json"), 429);
  expect_error_shape(client->Post("/v1/completions", R"({"prompt":"x","max_tokens":3,"stream":true})", "application/json"),
                     429);
  auto r = client->Post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}]})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
}

TEST_F(HttpServerTest, AWrongMethodOnAKnownPathIs405WithAllow) {
  start();
  auto r = client->Get("/v1/completions");
  expect_error_shape(r, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "POST");
  r = client->Post("/health", "", "application/json");
  expect_error_shape(r, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "GET, HEAD");
  r = client->Delete("/v1/models/demo");
  expect_error_shape(r, 405);
  EXPECT_EQ(r->get_header_value("Allow"), "GET, HEAD");
  int fd = connect_to(port);
  ASSERT_GE(fd, 0);
  const std::string put = "PUT /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(write(fd, put.data(), put.size()), static_cast<ssize_t>(put.size()));
  std::string answer = read_to_end(fd);
  close(fd);
  EXPECT_EQ(answer.rfind("HTTP/1.1 405", 0), 0u) << answer;
  EXPECT_NE(answer.find("Allow: POST\r\n"), std::string::npos) << answer;
  // Unknown paths stay 404, without Allow; a bad request on a known method stays 400.
  expect_error_shape(client->Post("/v1/completions", "{", "application/json"), 400);
  r = client->Post("/v1/nothing", "{}", "application/json");
  expect_error_shape(r, 404);
  EXPECT_FALSE(r->has_header("Allow"));
  auto m = client->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("gemmaserve_http_errors_total{status=\"405\"} 4"), std::string::npos) << m->body;
}

TEST_F(HttpServerTest, ModelsRetrieve) {
  start();
  auto r = client->Get("/v1/models/demo");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["id"], "demo");
  EXPECT_EQ(j["object"], "model");
  EXPECT_EQ(j, json::parse(client->Get("/v1/models")->body)["data"][0]);
  for (const char* path : {"/v1/models/other", "/v1/models/google/gemma-4", "/v1/models/demo%2Fx"}) {
    r = client->Get(path);
    expect_error_shape(r, 404);
    EXPECT_EQ(json::parse(r->body)["error"]["code"], "model_not_found") << path;
  }
}

// Sends a long request on a raw socket; returns the connected descriptor (-1 on failure).
int send_long_request(int port, bool stream) {
  int fd = connect_to(port);
  if (fd < 0) return -1;
  std::string body = std::string(R"({"prompt":"x","max_tokens":100000,"stream":)") + (stream ? "true}" : "false}");
  std::string req = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\n\r\n" + body;
  if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends a streaming request on a raw socket, reads a little of the answer and closes.
void stream_and_hang_up(int port) {
  int fd = send_long_request(port, true);
  ASSERT_GE(fd, 0);
  char buf[512];
  ASSERT_GT(read(fd, buf, sizeof buf), 0);
  close(fd);
}

TEST_F(HttpServerTest, ClientDisconnectAbortsTheRequest) {
  start();
  for (int i = 0; i < 3; ++i) stream_and_hang_up(port);
  EXPECT_TRUE(eventually([&] { return engine->active() == 0; })) << engine->active() << " requests still running";
  EXPECT_EQ(engine->aborted(), 3);
  auto m = client->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("gemmaserve_request_success_total{finished_reason=\"abort\"} 3"), std::string::npos) << m->body;
}

TEST_F(HttpServerTest, NonStreamingClientDisconnectAbortsTheRequest) {
  start();
  // Hang up on a plain request that would run "forever": nothing is ever written to this
  // connection before the end, so only watching the socket can notice.
  for (int i = 1; i <= 3; ++i) {
    int fd = send_long_request(port, false);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(eventually([&] { return engine->active() == 1; }));
    close(fd);
    EXPECT_TRUE(eventually([&] { return engine->active() == 0; })) << "request " << i << " still running";
    EXPECT_EQ(engine->aborted(), i);
  }
  // A client that keeps its connection open is not mistaken for one that left, even with
  // bytes of a pipelined request waiting in the socket.
  int fd = send_long_request(port, false);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(eventually([&] { return engine->active() == 1; }));
  const std::string more = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(write(fd, more.data(), more.size()), static_cast<ssize_t>(more.size()));
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(engine->active(), 1);
  EXPECT_EQ(engine->aborted(), 3);
  close(fd);
  EXPECT_TRUE(eventually([&] { return engine->active() == 0; }));
  // The handler thread counts its 499 after the engine has let the request go, so the metrics
  // may lag the engine by a moment (seen under ASan in CI): wait for both counters.
  std::string body;
  EXPECT_TRUE(eventually([&] {
    auto m = client->Get("/metrics");
    body = m ? m->body : "";
    return body.find("gemmaserve_request_success_total{finished_reason=\"abort\"} 4") != std::string::npos &&
           body.find("gemmaserve_http_errors_total{status=\"499\"} 4") != std::string::npos;
  })) << body;
}

TEST_F(HttpServerTest, ManySimultaneousStreamsAreAllServed) {
  // More clients than a fixed pool of 128 threads could serve, all connecting at once (a burst
  // that overflowed httplib's listen backlog of 5); each holds its stream open. Every one must
  // be running in the engine at the same time, and end cleanly at shutdown.
  ServerOptions o;
  o.http_threads = 512;
  start(o, 20ms);
  const int clients = 200;
  std::vector<std::thread> threads;
  std::atomic<int> answered{0};
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&] {
      httplib::Client c("127.0.0.1", port);
      c.set_read_timeout(30, 0);
      auto r = c.Post("/v1/completions", R"({"prompt":"x","max_tokens":100000,"stream":true})", "application/json");
      if (r && r->status == 200) ++answered;
    });
  }
  EXPECT_TRUE(eventually([&] { return engine->active() == clients; }, 10000ms))
      << engine->active() << " of " << clients << " streams running";
  server->begin_shutdown();
  for (auto& t : threads) t.join();
  EXPECT_EQ(answered, clients);
}

// Splits HTTP/1.1 responses with Content-Length bodies, in the order they were sent.
std::vector<std::pair<int, std::string>> split_responses(const std::string& s) {
  std::vector<std::pair<int, std::string>> out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t head_end = s.find("\r\n\r\n", pos);
    if (head_end == std::string::npos) break;
    std::string head = s.substr(pos, head_end - pos);
    int status = std::stoi(head.substr(9, 3));
    std::smatch m;
    size_t len = 0;
    if (std::regex_search(head, m, std::regex("Content-Length: ([0-9]+)", std::regex::icase))) len = std::stoul(m[1]);
    out.emplace_back(status, s.substr(head_end + 4, len));
    pos = head_end + 4 + len;
  }
  return out;
}

TEST_F(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  start();
  int fd = connect_to(port);
  ASSERT_GE(fd, 0);
  std::string body = R"({"prompt":"x","max_tokens":2})";
  // Four requests in one write; the last asks the server to close afterwards.
  std::string reqs = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
                     "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n" + body +
                     "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
                     "GET /v1/nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(write(fd, reqs.data(), reqs.size()), static_cast<ssize_t>(reqs.size()));
  auto responses = split_responses(read_to_end(fd));
  close(fd);
  ASSERT_EQ(responses.size(), 4u);
  EXPECT_EQ(responses[0].first, 200);
  EXPECT_EQ(json::parse(responses[0].second)["status"], "ok");
  EXPECT_EQ(responses[1].first, 200);
  EXPECT_EQ(json::parse(responses[1].second)["choices"][0]["text"], "HH");
  EXPECT_EQ(responses[2].first, 200);
  EXPECT_EQ(json::parse(responses[2].second)["object"], "list");
  EXPECT_EQ(responses[3].first, 404);
}

TEST_F(HttpServerTest, HealthAnswersWhileEveryConnectionThreadIsTaken) {
  ServerOptions o;
  o.http_threads = 4;
  start(o, 20ms);
  std::vector<int> streams;
  for (int i = 0; i < 4; ++i) streams.push_back(send_long_request(port, true));
  for (int fd : streams) ASSERT_GE(fd, 0);
  ASSERT_TRUE(eventually([&] { return engine->active() == 4; })) << engine->active() << " streams running";
  // Every thread is held by a stream that never ends: these connections wait in line, the first
  // with a request ready, the others silent.
  int queued_request = send_long_request(port, false);
  ASSERT_GE(queued_request, 0);
  std::vector<int> silent;
  for (int i = 0; i < 3; ++i) {
    silent.push_back(connect_to(port));
    ASSERT_GE(silent.back(), 0);
  }
  // Liveness and monitoring still answer (a generous client timeout; no timing is asserted).
  for (const char* path : {"/health", "/metrics", "/v1/models", "/health"}) {
    auto r = client->Get(path);
    ASSERT_TRUE(r) << path << ": no answer while the connection threads are taken";
    EXPECT_EQ(r->status, 200) << path;
  }
  EXPECT_EQ(engine->active(), 4) << "the waiting request must not have been started out of turn";
  // A stream ends: the first connection in line gets the thread and its request runs.
  close(streams[0]);
  EXPECT_TRUE(eventually([&] { return engine->active() == 4 && engine->aborted() == 1; }))
      << "the waiting request did not start after a thread came free";
  close(queued_request);
  for (int fd : silent) close(fd);
  for (size_t i = 1; i < streams.size(); ++i) close(streams[i]);
}

TEST_F(HttpServerTest, MetricsAreValidPrometheusText) {
  start();
  client->Post("/v1/completions", R"({"prompt":"x","max_tokens":3})", "application/json");
  client->Post("/v1/completions", R"({"prompt":"x","temperature":7})", "application/json");
  auto m = client->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->get_header_value("Content-Type").find("text/plain"), std::string::npos);
  std::regex sample(R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_]+="[^"]*"(,[a-zA-Z_]+="[^"]*")*\})? (-?[0-9.eE+-]+|NaN|\+Inf)$)");
  std::regex comment(R"(^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+$)");
  std::istringstream in(m->body);
  std::string line;
  int samples = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    EXPECT_TRUE(std::regex_match(line, line[0] == '#' ? comment : sample)) << "bad line: " << line;
    ++samples;
  }
  EXPECT_GT(samples, 40);
  for (const char* name : {"gemmaserve_requests_running ", "gemmaserve_kv_pages_used{pool=\"full\"} ",
                           "gemmaserve_time_to_first_token_seconds_count 1", "gemmaserve_inter_token_latency_seconds_count 2",
                           "gemmaserve_request_success_total{finished_reason=\"length\"} 1",
                           "gemmaserve_http_errors_total{status=\"400\"} 1", "gemmaserve_prefix_cache_hit_rate "}) {
    EXPECT_NE(m->body.find(name), std::string::npos) << name;
  }
}

TEST_F(HttpServerTest, ShutdownEndsOpenStreams) {
  start();
  std::thread t([&] {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(20, 0);
    c.Post("/v1/completions", R"({"prompt":"x","max_tokens":100000,"stream":true})", "application/json");
  });
  ASSERT_TRUE(eventually([&] { return engine->active() == 1; }));
  server->begin_shutdown();
  EXPECT_TRUE(eventually([&] { return engine->active() == 0; }));
  auto r = client->Get("/v1/models");
  if (r) EXPECT_EQ(r->status, 503);
  server->stop();
  t.join();
  thread.join();
}

}  // namespace
}  // namespace gs::server
