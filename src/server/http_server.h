// The HTTP face of the OpenAI API: cpp-httplib routes (405 with Allow for a known path's wrong
// method), API-key check, body-size limit, SSE streaming, abort on client disconnect (streaming or
// not), /metrics, /health, and a graceful stop (a drain: see graceful_shutdown.h). Sockets and
// threads: http_listener.h.
#pragma once
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "api/openai_service.h"
#include "server/listen_socket.h"
#include "server/request_gate.h"
#include "server/server_metrics.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}

namespace gs::server {

class HttpListener;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                           // 0: any free port (see HttpServer::bind)
  std::string api_key;                       // empty: no authentication
  size_t max_body_bytes = 16u << 20;         // larger bodies get 413
  // Connections served at once: each open stream and each kept-alive connection holds a thread
  // (started when needed); connections beyond this wait for one to close, while probes
  // (/health, /metrics, /v1/models) among them are still answered (connection_threads.h).
  int http_threads = 1024;
  int listen_backlog = 4096;                 // connections the kernel queues before accept (capped by somaxconn)
};

class HttpServer {
 public:
  HttpServer(api::OpenAIService& service, ServerMetrics& metrics, ServerOptions opts);
  ~HttpServer();

  // Binds the listening socket and returns the port (useful with port 0). Throws gs::Error when
  // the address cannot be bound (naming host:port and why, e.g. the port is taken).
  int bind();
  // Serves on a socket opened beforehand (`serve` binds before loading the model, so that a taken
  // port fails at once); returns its port.
  int bind(ListenSocket socket);
  // Serves until stop(); returns when every connection thread has finished.
  void run();

  // Draining: new generation requests, and every route but /health and /metrics, get 503; /health
  // answers 503 {"status": "draining"} (readiness fails, so load balancers stop sending); requests
  // already admitted run on. Returns how many are in flight. Safe from any thread; idempotent.
  int begin_drain();
  bool draining() const { return gate_.closed(); }
  // Generation requests admitted and not yet answered in full (a stream: its last event written).
  int in_flight() const { return gate_.in_flight(); }
  // Waits until in_flight() is 0 or `deadline` passes; returns whether it is 0.
  bool wait_drained(std::chrono::steady_clock::time_point deadline) const { return gate_.wait_empty(deadline); }

  // Drains, and ends open streams now: their requests are aborted and each stream ends with an
  // error event (503). Safe from any thread, also before run() was called; idempotent.
  void begin_shutdown();
  // begin_shutdown(), then closes the listener: run() returns once every connection has ended.
  void stop();
  bool shutting_down() const { return shutting_down_.load(); }

 private:
  void install_routes();
  // Registers a handler and remembers the method for 405's Allow header.
  void route(const std::string& method, const std::string& pattern, std::function<void(const httplib::Request&, httplib::Response&)> handler);
  // "GET, HEAD", "POST"...: the methods `path` answers to (empty: no such route).
  std::string allowed_methods(const std::string& path) const;
  // A non-streaming generation, aborted when its client disconnects (see connection_watch.h).
  void complete(const httplib::Request& req, httplib::Response& res, api::PreparedRequest prepared);

  api::OpenAIService& service_;
  ServerMetrics& metrics_;
  ServerOptions opts_;
  std::unique_ptr<HttpListener> http_;
  std::vector<std::pair<std::regex, std::string>> routes_;  // path pattern, method
  RequestGate gate_;
  std::atomic<bool> shutting_down_{false};
};

}  // namespace gs::server
