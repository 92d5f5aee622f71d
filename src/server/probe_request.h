// Recognising a liveness or monitoring request (GET /health, /metrics, /v1/models) among the
// connections that wait for a connection thread, from the bytes the client already sent, without
// consuming them: see ConnectionThreads' probe lane.
#pragma once
#include <string_view>

namespace gs::server {

enum class ProbeCheck {
  Probe,     // one complete GET/HEAD of a probe path, nothing after it: safe to answer out of turn
  NotProbe,  // anything else (another route, a body, pipelined requests): keeps its place in line
  NotYet,    // too few bytes to tell; ask again later
};

// Classifies the start of a connection's input.
ProbeCheck classify_probe_request(std::string_view head);
// Peeks (MSG_PEEK, non-blocking) at what connection `fd` has sent and classifies it. A closed or
// failed connection is NotProbe: its own thread finds that out in turn.
ProbeCheck peek_probe_request(int fd);

}  // namespace gs::server
