// The graceful stop in-process: HttpServer over an engine stand-in that emits tokens in time, drained
// by server::drain as `gemmaserve serve` does on SIGTERM. While draining, new work gets 503 and
// /health fails; admitted requests (streaming or not) finish normally; past the timeout they end
// with a 503 (a stream: an error event before [DONE]), never with finish_reason "abort".
#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "server/graceful_shutdown.h"
#include "server/in_process_server.h"

namespace gs::server {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

class GracefulShutdownTest : public InProcessServer {
 protected:
  void SetUp() override { start({}, 2ms, nullptr, 20); }

  // A completion on its own connection, in the background; join `thread` for the answer. (A
  // jthread: a failed assertion that leaves early still joins it, bounded by the read timeout.)
  struct Call {
    std::jthread thread;
    int status = 0;
    std::string body;
  };
  void post(Call& c, int max_tokens, bool stream) {
    c.thread = std::jthread([this, &c, max_tokens, stream] {
      httplib::Client cl("127.0.0.1", port);
      cl.set_read_timeout(30, 0);
      json body = {{"prompt", "x"}, {"max_tokens", max_tokens}, {"stream", stream}};
      if (auto r = cl.Post("/v1/completions", body.dump(), "application/json")) {
        c.status = r->status;
        c.body = r->body;
      }
    });
  }
  // The data payloads of an SSE body, which must end with [DONE].
  static std::vector<std::string> events(const std::string& body) {
    std::vector<std::string> out;
    for (size_t pos = 0; pos < body.size();) {
      size_t end = body.find("\n\n", pos);
      if (end == std::string::npos) break;
      std::string ev = body.substr(pos, end - pos);
      pos = end + 2;
      if (ev.rfind("data: ", 0) == 0) out.push_back(ev.substr(6));
    }
    return out;
  }
  void expect_refused(const httplib::Result& r) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503) << r->body;
    json j = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << r->body;
    EXPECT_EQ(j["error"]["type"], "service_unavailable_error");
    EXPECT_NE(j["error"]["message"].get<std::string>().find("shutting down"), std::string::npos);
  }

};

TEST_F(GracefulShutdownTest, RunningRequestsFinishWhileNewOnesAreRefused) {
  auto h = client->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  engine->hold(true);  // the requests below stay unfinished until the checks are done
  Call streamed, plain;
  post(streamed, 20, true);
  post(plain, 20, false);
  ASSERT_TRUE(eventually([&] { return engine->active() == 2; }));

  DrainOutcome outcome;
  bool aborted = false;
  std::jthread drainer([&] { outcome = drain(*server, 60s, [&] { aborted = true; }); });
  // Destroyed first if an assertion below leaves early, so that nothing waits on the held engine.
  std::unique_ptr<gs::testing::TickingEngine, void (*)(gs::testing::TickingEngine*)> release(
      engine.get(), [](gs::testing::TickingEngine* e) { e->hold(false); });
  ASSERT_TRUE(eventually([&] { return server->draining(); }));

  expect_refused(client->Post("/v1/completions", R"({"prompt":"x","max_tokens":3})", "application/json"));
  expect_refused(client->Post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}],"stream":true})",
                              "application/json"));
  expect_refused(client->Get("/v1/models"));
  h = client->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 503);
  EXPECT_EQ(json::parse(h->body), (json{{"status", "draining"}}));
  auto m = client->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_NE(m->body.find("\ngemmaserve_server_draining 1\n"), std::string::npos) << m->body;
  EXPECT_EQ(server->in_flight(), 2);

  engine->hold(false);
  drainer.join();
  streamed.thread.join();
  plain.thread.join();
  EXPECT_FALSE(aborted);
  EXPECT_EQ(outcome.in_flight, 2);
  EXPECT_EQ(outcome.left_at_timeout, 0);
  EXPECT_EQ(engine->aborted(), 0);

  ASSERT_EQ(plain.status, 200) << plain.body;
  json p = json::parse(plain.body);
  EXPECT_EQ(p["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(p["usage"]["completion_tokens"], 20);

  ASSERT_EQ(streamed.status, 200);
  std::vector<std::string> ev = events(streamed.body);
  ASSERT_GE(ev.size(), 2u) << streamed.body;
  EXPECT_EQ(ev.back(), "[DONE]");
  EXPECT_EQ(json::parse(ev[ev.size() - 2])["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(streamed.body.find("\"error\""), std::string::npos) << streamed.body;
}

TEST_F(GracefulShutdownTest, RequestsLeftAtTheTimeoutEndWith503) {
  Call streamed, plain;
  post(streamed, 1000000, true);  // far longer than the drain lasts
  post(plain, 1000000, false);
  ASSERT_TRUE(eventually([&] { return engine->active() == 2; }));

  DrainOutcome outcome = drain(*server, 50ms, [&] { engine->stop(); });
  streamed.thread.join();
  plain.thread.join();
  EXPECT_EQ(outcome.in_flight, 2);
  EXPECT_EQ(outcome.left_at_timeout, 2);
  EXPECT_EQ(server->in_flight(), 0);

  EXPECT_EQ(plain.status, 503) << plain.body;
  json p = json::parse(plain.body, nullptr, false);
  ASSERT_TRUE(p.is_object() && p.contains("error")) << plain.body;
  EXPECT_EQ(p["error"]["type"], "service_unavailable_error");

  ASSERT_EQ(streamed.status, 200);
  std::vector<std::string> ev = events(streamed.body);
  ASSERT_GE(ev.size(), 2u) << streamed.body;
  EXPECT_EQ(ev.back(), "[DONE]");
  json err = json::parse(ev[ev.size() - 2]);
  ASSERT_TRUE(err.contains("error")) << ev[ev.size() - 2];
  EXPECT_EQ(err["error"]["code"], 503);
  EXPECT_NE(err["error"]["message"].get<std::string>().find("shutting down"), std::string::npos);
  EXPECT_EQ(streamed.body.find("\"abort\""), std::string::npos) << streamed.body;
}

TEST_F(GracefulShutdownTest, AnIdleServerDrainsAtOnce) {
  DrainOutcome idle = drain(*server, 0s, [&] { FAIL() << "nothing to abort"; });
  EXPECT_EQ(idle.in_flight, 0);
  EXPECT_EQ(idle.left_at_timeout, 0);
  EXPECT_TRUE(server->draining());
}

// A hard stop (HttpServer::stop without a drain, or a drain's handlers still streaming when it
// comes) ends open streams with the error event too, not a bare [DONE].
TEST_F(GracefulShutdownTest, StopEndsOpenStreamsWithAnErrorEvent) {
  Call streamed;
  post(streamed, 1000000, true);
  ASSERT_TRUE(eventually([&] { return engine->active() == 1; }));
  server->begin_shutdown();
  streamed.thread.join();
  EXPECT_TRUE(eventually([&] { return engine->active() == 0; }));
  EXPECT_EQ(engine->aborted(), 1);
  std::vector<std::string> ev = events(streamed.body);
  ASSERT_GE(ev.size(), 2u) << streamed.body;
  EXPECT_EQ(ev.back(), "[DONE]");
  EXPECT_EQ(json::parse(ev[ev.size() - 2])["error"]["code"], 503);
}

}  // namespace
}  // namespace gs::server
