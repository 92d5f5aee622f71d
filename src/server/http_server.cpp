#include "server/http_server.h"

#include <httplib.h>

#include <csignal>

#include "api/api_error.h"
#include "core/log.h"
#include "server/connection_watch.h"
#include "server/http_listener.h"

namespace gs::server {

using nlohmann::json;

namespace {

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

// Whether an Allow value ("GET, HEAD") names `method`.
bool lists_method(const std::string& allow, const std::string& method) {
  size_t pos = 0;
  while (pos <= allow.size()) {
    size_t end = allow.find(", ", pos);
    if (allow.compare(pos, end == std::string::npos ? std::string::npos : end - pos, method) == 0) return true;
    if (end == std::string::npos) return false;
    pos = end + 2;
  }
  return false;
}

bool is_public_path(const std::string& path) { return path == "/health" || path == "/metrics"; }

constexpr const char* kDrainingRefusal =
    "the server is shutting down: it finishes the requests it has and accepts no new ones";
constexpr const char* kStoppedStream = "the server is shutting down: the request was stopped before it finished";

// How long a stream may stay silent (request queued, model slow) before a comment line is sent;
// the write is what notices a client that went away.
constexpr auto kStreamPing = std::chrono::seconds(1);
constexpr auto kStreamPoll = std::chrono::milliseconds(50);

// An ApiError as its HTTP answer. A 429 (the queue is full) says when to try again: a slot frees
// as soon as any running request ends, so one second is a fair first back-off, and the official
// clients honour Retry-After when they retry.
void send_api_error(httplib::Response& res, const api::ApiError& e) {
  if (e.status() == 429) res.set_header("Retry-After", "1");
  send_json(res, e.status(), e.to_json());
}

}  // namespace

HttpServer::HttpServer(api::OpenAIService& service, ServerMetrics& metrics, ServerOptions opts)
    : service_(service), metrics_(metrics), opts_(std::move(opts)), http_(std::make_unique<HttpListener>()) {
  // A client closing its socket must show up as a failed write, not kill the process.
  std::signal(SIGPIPE, SIG_IGN);
  http_->set_payload_max_length(opts_.max_body_bytes);
  http_->set_keep_alive_max_count(1000);
  http_->set_keep_alive_timeout(5);
  install_routes();
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() { return bind(ListenSocket::open(opts_.host, opts_.port, opts_.listen_backlog)); }

int HttpServer::bind(ListenSocket socket) { return http_->adopt(std::move(socket)); }

void HttpServer::run() {
  if (!shutting_down_) http_->run(static_cast<size_t>(std::max(4, opts_.http_threads)));
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
    // httplib answers 404 when no handler of the request's method matches the path (400 when
    // such a method must carry a body and has none): on a path served under other methods that
    // is 405, and Allow lists them.
    if (res.status == 404 || res.status == 400) {
      std::string allow = allowed_methods(req.path);
      if (!allow.empty() && !lists_method(allow, req.method)) {
        res.status = 405;
        res.set_header("Allow", allow);
      }
    }
    switch (res.status) {
      case 404: msg = "no route " + req.method + " " + req.path; break;
      case 405:
        msg = "method " + req.method + " is not allowed on " + req.path + " (allowed: " + res.get_header_value("Allow") + ")";
        break;
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
        send_api_error(res, e);
      } catch (const std::exception& e) {
        log::error("{} failed: {}", req.path, e.what());
        metrics_.on_http_error(500);
        send_json(res, 500, api::error_body(500, e.what()));
      }
    };
  };
  route("POST", "/v1/chat/completions", generate(api::Endpoint::ChatCompletions));
  route("POST", "/v1/completions", generate(api::Endpoint::Completions));

  auto simple = [this](std::function<json(const httplib::Request&)> fn) {
    return [this, fn](const httplib::Request& req, httplib::Response& res) {
      try {
        send_json(res, 200, fn(req));
      } catch (const api::ApiError& e) {
        metrics_.on_http_error(e.status());
        send_api_error(res, e);
      } catch (const std::exception& e) {
        metrics_.on_http_error(500);
        send_json(res, 500, api::error_body(500, e.what()));
      }
    };
  };
  route("GET", "/v1/models", simple([this](const httplib::Request&) { return service_.models(); }));
  // OpenAI's models.retrieve. Served names may contain '/' (google/gemma-4-e2b-it): the id is the
  // whole rest of the (decoded) path.
  route("GET", "/v1/models/(.+)", simple([this](const httplib::Request& req) { return service_.model(req.matches[1]); }));
  route("POST", "/tokenize", simple([this](const httplib::Request& req) { return service_.tokenize(req.body); }));
  route("POST", "/detokenize", simple([this](const httplib::Request& req) { return service_.detokenize(req.body); }));
  route("GET", "/health", [this](const httplib::Request&, httplib::Response& res) {
    if (draining()) send_json(res, 503, {{"status", "draining"}});
    else send_json(res, 200, {{"status", "ok"}});
  });
  route("GET", "/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.render(service_.engine().stats()), "text/plain; version=0.0.4; charset=utf-8");
  });
}

void HttpServer::route(const std::string& method, const std::string& pattern,
                       std::function<void(const httplib::Request&, httplib::Response&)> handler) {
  if (method == "GET") {
    http_->Get(pattern, std::move(handler));
  } else if (method == "POST") {
    http_->Post(pattern, std::move(handler));
  } else {
    throw Error("HttpServer::route: method {} is not supported", method);
  }
  routes_.emplace_back(std::regex(pattern), method);
}

std::string HttpServer::allowed_methods(const std::string& path) const {
  std::string allow;
  for (const auto& [pattern, method] : routes_) {
    if (!std::regex_match(path, pattern)) continue;
    // httplib answers HEAD with the GET handler.
    std::string m = method == "GET" ? "GET, HEAD" : method;
    if (allow.find(m) != std::string::npos) continue;
    allow += (allow.empty() ? "" : ", ") + m;
  }
  return allow;
}

}  // namespace gs::server
