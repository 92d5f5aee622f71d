#include "server/http_server.h"

#include <httplib.h>

#include <csignal>

#include "api/api_error.h"
#include "core/log.h"
#include "server/connection_threads.h"
#include "server/connection_watch.h"

namespace gs::server {

using nlohmann::json;

namespace {

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

bool is_public_path(const std::string& path) { return path == "/health" || path == "/metrics"; }

constexpr const char* kDrainingRefusal =
    "the server is shutting down: it finishes the requests it has and accepts no new ones";
constexpr const char* kStoppedStream = "the server is shutting down: the request was stopped before it finished";

// How long a stream may stay silent (request queued, model slow) before a comment line is sent;
// the write is what notices a client that went away.
constexpr auto kStreamPing = std::chrono::seconds(1);
constexpr auto kStreamPoll = std::chrono::milliseconds(50);

// cpp-httplib 0.11 (as Debian builds it) listens with a backlog of 5: a burst of clients
// connecting at once (a benchmark starting 100 streams) overflows the accept queue, and the
// kernel drops their handshakes, to be retried only after a second or more. listen() again on
// the bound socket only raises the backlog; httplib keeps the descriptor protected, hence this
// subclass.
class Listener : public httplib::Server {
 public:
  bool raise_backlog(int backlog) { return svr_sock_ != INVALID_SOCKET && ::listen(svr_sock_, backlog) == 0; }
};

}  // namespace

HttpServer::HttpServer(api::OpenAIService& service, ServerMetrics& metrics, ServerOptions opts)
    : service_(service), metrics_(metrics), opts_(std::move(opts)), http_(std::make_unique<Listener>()) {
  // A client closing its socket must show up as a failed write, not kill the process.
  std::signal(SIGPIPE, SIG_IGN);
  size_t threads = static_cast<size_t>(std::max(4, opts_.http_threads));
  http_->new_task_queue = [threads] { return new ConnectionThreads(threads); };
  http_->set_payload_max_length(opts_.max_body_bytes);
  http_->set_keep_alive_max_count(1000);
  http_->set_keep_alive_timeout(5);
  http_->set_tcp_nodelay(true);
  install_routes();
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() {
  int port = opts_.port;
  if (port == 0) {
    port = http_->bind_to_any_port(opts_.host);
    if (port <= 0) throw Error("cannot listen on {}: no free port could be bound", opts_.host);
  } else if (!http_->bind_to_port(opts_.host, port)) {
    throw Error("cannot listen on {}:{}: the address is in use or not available", opts_.host, port);
  }
  if (!static_cast<Listener&>(*http_).raise_backlog(opts_.listen_backlog)) {
    log::warn("could not raise the listen backlog to {}: bursts of new connections may wait", opts_.listen_backlog);
  }
  return port;
}

void HttpServer::run() {
  if (!shutting_down_) http_->listen_after_bind();
}

int HttpServer::begin_drain() {
  metrics_.set_draining(true);
  return gate_.close();
}

void HttpServer::begin_shutdown() {
  begin_drain();
  shutting_down_ = true;
}

void HttpServer::stop() {
  begin_shutdown();
  if (http_) http_->stop();
}

void HttpServer::complete(const httplib::Request& req, httplib::Response& res, api::PreparedRequest prepared) {
  // A plain response is written only at the end, so nothing fails while the request runs:
  // watch the connection itself, so that a client that gave up does not keep its pages.
  auto watch = ConnectionWatch::find(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
  if (!watch) log::warn("{}: cannot find the connection from {}:{}; a disconnect will not abort this request", req.path,
                        req.remote_addr, req.remote_port);
  try {
    send_json(res, 200, service_.complete(std::move(prepared), [&] { return watch && watch->peer_closed(); }));
  } catch (const api::ClientGone& e) {
    // Nobody reads this answer; 499 ("client closed request", as nginx logs it) keeps the count.
    metrics_.on_http_error(499);
    send_json(res, 499, api::error_body(499, e.what()));
  }
}

void HttpServer::install_routes() {
  httplib::Server& s = *http_;

  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (draining() && !is_public_path(req.path)) {
      metrics_.on_http_error(503);
      send_json(res, 503, api::error_body(503, kDrainingRefusal));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!opts_.api_key.empty() && !is_public_path(req.path)) {
      std::string auth = req.get_header_value("Authorization");
      if (auth != "Bearer " + opts_.api_key) {
        metrics_.on_http_error(401);
        send_json(res, 401, api::error_body(401, auth.empty() ? "missing API key: send Authorization: Bearer <key>"
                                                              : "invalid API key", "", "invalid_api_key"));
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  // Statuses httplib produces itself (unknown route, body too large, unparsable request) get
  // the OpenAI error body too; responses that already have one are left alone.
  s.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty() || res.is_chunked_content_provider_) return httplib::Server::HandlerResponse::Unhandled;
    std::string msg;
    switch (res.status) {
      case 404: msg = "no route " + req.method + " " + req.path; break;
      case 405: msg = "method " + req.method + " is not allowed on " + req.path; break;
      case 413: msg = "request body larger than the server's limit of " + std::to_string(opts_.max_body_bytes) + " bytes"; break;
      default: msg = "the request could not be served (HTTP " + std::to_string(res.status) + ")"; break;
    }
    metrics_.on_http_error(res.status);
    send_json(res, res.status, api::error_body(res.status, msg));
    return httplib::Server::HandlerResponse::Handled;
  }));

  s.set_exception_handler([this](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string msg = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      msg = e.what();
    } catch (...) {
    }
    log::error("unhandled exception in an HTTP handler: {}", msg);
    metrics_.on_http_error(500);
    send_json(res, 500, api::error_body(500, msg));
  });

  auto generate = [this](api::Endpoint endpoint) {
    return [this, endpoint](const httplib::Request& req, httplib::Response& res) {
      // Held until the response is written (streams: by the content provider), so a drain waits
      // for it; refused once the drain began after this request passed the pre-routing check.
      std::shared_ptr<RequestGate::Pass> pass = gate_.admit();
      if (!pass) {
        metrics_.on_http_error(503);
        send_json(res, 503, api::error_body(503, kDrainingRefusal));
        return;
      }
      try {
        api::PreparedRequest prepared = service_.prepare(endpoint, req.body);
        if (!prepared.api.stream) {
          complete(req, res, std::move(prepared));
          return;
        }
        std::shared_ptr<api::SseStream> stream = service_.stream(std::move(prepared));
        res.set_header("Cache-Control", "no-cache");
        res.set_chunked_content_provider(
            "text/event-stream",
            [this, stream, pass](size_t, httplib::DataSink& sink) {
              std::string buf;
              auto last_write = std::chrono::steady_clock::now();
              while (true) {
                if (shutting_down_) stream->cancel(503, kStoppedStream);
                buf.clear();
                bool more = stream->next(buf, kStreamPoll);
                auto now = std::chrono::steady_clock::now();
                if (buf.empty() && more && now - last_write >= kStreamPing) buf = ": ping\n\n";
                if (!buf.empty()) {
                  if (!sink.write(buf.data(), buf.size())) {
                    stream->abort();  // the client went away: give its pages back now
                    return false;
                  }
                  last_write = now;
                }
                if (!more) {
                  sink.done();
                  return true;
                }
              }
            },
            [stream](bool success) {
              if (!success) stream->abort();
            });
      } catch (const api::ApiError& e) {
        metrics_.on_http_error(e.status());
        send_json(res, e.status(), e.to_json());
      } catch (const std::exception& e) {
        log::error("{} failed: {}", req.path, e.what());
        metrics_.on_http_error(500);
        send_json(res, 500, api::error_body(500, e.what()));
      }
    };
  };
  s.Post("/v1/chat/completions", generate(api::Endpoint::ChatCompletions));
  s.Post("/v1/completions", generate(api::Endpoint::Completions));

  auto simple = [this](std::function<json(const httplib::Request&)> fn) {
    return [this, fn](const httplib::Request& req, httplib::Response& res) {
      try {
        send_json(res, 200, fn(req));
      } catch (const api::ApiError& e) {
        metrics_.on_http_error(e.status());
        send_json(res, e.status(), e.to_json());
      } catch (const std::exception& e) {
        metrics_.on_http_error(500);
        send_json(res, 500, api::error_body(500, e.what()));
      }
    };
  };
  s.Get("/v1/models", simple([this](const httplib::Request&) { return service_.models(); }));
  s.Post("/tokenize", simple([this](const httplib::Request& req) { return service_.tokenize(req.body); }));
  s.Post("/detokenize", simple([this](const httplib::Request& req) { return service_.detokenize(req.body); }));
  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (draining()) send_json(res, 503, {{"status", "draining"}});
    else send_json(res, 200, {{"status", "ok"}});
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.render(service_.engine().stats()), "text/plain; version=0.0.4; charset=utf-8");
  });
}

}  // namespace gs::server
