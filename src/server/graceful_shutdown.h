// The graceful stop of `gemmaserve serve` on SIGTERM or SIGINT, as Kubernetes and users of vLLM's
// --shutdown-timeout expect: the server takes no new work at once (503; /health fails readiness so
// load balancers stop sending), lets the requests it has, running and queued, finish for up to the
// shutdown timeout, then aborts the rest, each client being told so with a 503 (a stream: an error
// event before [DONE]) rather than a truncated answer.
#pragma once
#include <chrono>
#include <functional>

#include "server/http_server.h"

namespace gs::server {

struct DrainOutcome {
  int in_flight = 0;          // requests being answered when the drain began
  int left_at_timeout = 0;    // of those, still unanswered when the timeout expired (then aborted)
  double seconds = 0;         // from the start of the drain until every request was answered
};

// Drains `http` (see HttpServer::begin_drain) for up to `timeout` (0: none), logging its progress.
// Requests still unanswered then are ended through `abort_rest` (which must make the engine end
// every request it has, e.g. Engine::stop), and their answers awaited a few seconds more. Does not
// stop `http` itself.
DrainOutcome drain(HttpServer& http, std::chrono::duration<double> timeout, const std::function<void()>& abort_rest);

}  // namespace gs::server
