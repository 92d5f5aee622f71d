// The threads that serve HTTP connections. A connection holds its thread for its whole life: a
// stream until the last event, a kept-alive connection between requests, for as long as the
// client keeps it open. A fixed pool of N threads therefore lets client N+1 wait, silently, until
// one of the first N closes its connection, which a benchmark's or a proxy's pooled connections
// never do. ConnectionThreads starts a thread whenever a connection arrives and none is idle, up
// to `max_threads`; past that, connections wait in order and a warning says why. Threads are kept
// for reuse once started (idle ones only wait on a lock).
//
// The probe lane: while connections wait, liveness must still answer (a Kubernetes probe that
// times out restarts a server that is merely busy). One extra thread, started the first time the
// limit is reached, looks at the waiting connections without reading from them and serves those
// that are a single probe request (see probe_request.h) out of turn; every other connection keeps
// its place. A thread of its own rather than a reserved slot among the N: a slot would be taken by
// whatever connection came first, and a second listening port would need every probe and load
// balancer configured for it.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "server/probe_request.h"

namespace gs::server {

class ConnectionThreads {
 public:
  // Serves connection `fd` to its end and closes it.
  using Serve = std::function<void(int fd)>;
  struct ProbeLane {
    std::function<ProbeCheck(int fd)> check;  // called with the queue locked: must not block
    Serve serve;                              // answers the one probe request and closes
  };

  ConnectionThreads(size_t max_threads, Serve serve, ProbeLane probes = {});
  ~ConnectionThreads();
  ConnectionThreads(const ConnectionThreads&) = delete;
  ConnectionThreads& operator=(const ConnectionThreads&) = delete;

  void enqueue(int fd);
  // Serves what is queued, then joins every thread. Idempotent.
  void shutdown();

  struct Counts {
    size_t threads = 0, busy = 0, waiting = 0;
    size_t probes_served = 0;  // connections the probe lane answered out of turn
  };
  Counts counts() const;

 private:
  struct Waiting {
    int fd;
    bool maybe_probe = true;  // not yet known to be something else
  };
  void work();
  void probe_lane();
  bool saturated() const { return jobs_.size() > idle_; }  // someone waits for a thread
  // Takes the first waiting connection that is a probe; -1 if none. `undecided`: whether some
  // connection could still turn out to be one.
  int take_probe(bool& undecided);

  const size_t max_threads_;
  const Serve serve_;
  const ProbeLane probes_;
  mutable std::mutex mu_;
  std::condition_variable cv_, probe_cv_;
  std::deque<Waiting> jobs_;
  std::vector<std::thread> threads_;
  std::thread probe_thread_;
  size_t idle_ = 0;
  size_t probes_served_ = 0;
  bool stopping_ = false;
  bool warned_ = false;  // the limit was hit (warned once until load drops below it)
};

}  // namespace gs::server
