// The HTTP face of the OpenAI API: cpp-httplib routes, API-key check, body-size limit, SSE
// streaming with abort on client disconnect, /metrics, /health, and a graceful stop.
#pragma once
#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include "api/openai_service.h"
#include "server/server_metrics.h"

namespace httplib {
class Server;
}

namespace gs::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                           // 0: any free port (see HttpServer::bind)
  std::string api_key;                       // empty: no authentication
  size_t max_body_bytes = 16u << 20;         // larger bodies get 413
  int http_threads = 128;                    // connections served at once (each stream holds one)
};

class HttpServer {
 public:
  HttpServer(api::OpenAIService& service, ServerMetrics& metrics, ServerOptions opts);
  ~HttpServer();

  // Binds the listening socket and returns the port (useful with port 0). Throws gs::Error when
  // the address cannot be bound.
  int bind();
  // Serves until stop(); returns when every connection thread has finished.
  void run();
  // Stops accepting and ends open streams (their requests are aborted). Safe from any thread,
  // also before run() was called; idempotent.
  void begin_shutdown();
  void stop();
  bool shutting_down() const { return shutting_down_.load(); }

 private:
  void install_routes();

  api::OpenAIService& service_;
  ServerMetrics& metrics_;
  ServerOptions opts_;
  std::unique_ptr<httplib::Server> http_;
  std::atomic<bool> shutting_down_{false};
};

}  // namespace gs::server
