// A test fixture that runs HttpServer in-process on a loopback port over TickingEngine (an engine
// stand-in that emits tokens in time), with a client connected to it: what the HTTP and the
// graceful-shutdown tests share.
#pragma once
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <memory>
#include <thread>

#include "api/fake_tokenizer.h"
#include "server/http_server.h"
#include "server/ticking_engine.h"

namespace gs::server {

class InProcessServer : public ::testing::Test {
 protected:
  // Starts the server (port 0: any free one). `chat_template`: null serves /v1/completions only.
  void start(ServerOptions opts = {}, std::chrono::milliseconds tick = std::chrono::milliseconds(2),
             const char* chat_template = nullptr, int client_read_timeout_s = 10) {
    engine = std::make_unique<gs::testing::TickingEngine>(tick);
    auto tok = std::make_shared<gs::testing::FakeTokenizer>();
    GenerationConfig gen;
    gen.eos_token_ids = {1};
    auto tmpl = chat_template ? std::make_shared<ChatTemplate>(chat_template) : nullptr;
    auto model = std::make_shared<api::ServingModel>("demo", tok, tmpl, gen);
    service = std::make_unique<api::OpenAIService>(*engine, model, &metrics);
    opts.host = "127.0.0.1";
    opts.port = 0;
    server = std::make_unique<HttpServer>(*service, metrics, opts);
    port = server->bind();
    thread = std::thread([this] { server->run(); });
    client = std::make_unique<httplib::Client>("127.0.0.1", port);
    client->set_read_timeout(client_read_timeout_s, 0);
  }
  void TearDown() override {
    if (engine) engine->hold(false);
    if (server) server->stop();
    if (thread.joinable()) thread.join();
    if (engine) engine->stop();
  }
  // Waits (bounded) until pred() holds.
  template <class F>
  static bool eventually(F pred, std::chrono::milliseconds limit = std::chrono::milliseconds(10000)) {
    auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return pred();
  }

  ServerMetrics metrics;
  std::unique_ptr<gs::testing::TickingEngine> engine;
  std::unique_ptr<api::OpenAIService> service;
  std::unique_ptr<HttpServer> server;
  std::unique_ptr<httplib::Client> client;
  std::thread thread;
  int port = 0;
};

}  // namespace gs::server
