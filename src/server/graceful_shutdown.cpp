#include "server/graceful_shutdown.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "core/log.h"

namespace gs::server {

namespace {

using Clock = std::chrono::steady_clock;

// A long drain says how it is doing now and then.
constexpr auto kProgressEvery = std::chrono::seconds(5);
// After the abort, handlers answer within a poll interval (50 ms); a client that does not read
// its stream holds its write for at most httplib's write timeout (5 s).
constexpr auto kAnswerGrace = std::chrono::seconds(10);

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string requests(int n) { return fmt::format("{} request{}", n, n == 1 ? "" : "s"); }

}  // namespace

DrainOutcome drain(HttpServer& http, std::chrono::duration<double> timeout, const std::function<void()>& abort_rest) {
  const auto start = Clock::now();
  // Clamped so that a huge timeout (or inf) cannot overflow the clock; 30 years is "forever".
  const auto wait = std::clamp(timeout, timeout.zero(), std::chrono::duration<double>(1e9));
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(wait);
  DrainOutcome out;
  out.in_flight = http.begin_drain();
  if (timeout.count() > 0) {
    log::info("draining: {} running, up to {:g} s (--shutdown-timeout); new requests get 503", requests(out.in_flight),
              timeout.count());
  }
  for (auto report = start + kProgressEvery; !http.wait_drained(std::min(deadline, report)); report += kProgressEvery) {
    if (Clock::now() >= deadline) break;
    log::info("draining: {} still running, {:.0f} s left", requests(http.in_flight()),
              std::chrono::duration<double>(deadline - Clock::now()).count());
  }
  out.left_at_timeout = http.in_flight();
  if (out.left_at_timeout > 0) {
    if (timeout.count() > 0) {
      log::warn("drain timed out after {:g} s: aborting {} still running (their clients get 503)", timeout.count(),
                requests(out.left_at_timeout));
    } else {
      log::info("aborting {} (--shutdown-timeout 0; their clients get 503)", requests(out.left_at_timeout));
    }
    abort_rest();
    if (!http.wait_drained(Clock::now() + kAnswerGrace)) {
      log::warn("{} still being answered after the abort; stopping anyway", requests(http.in_flight()));
    }
  } else if (timeout.count() > 0 || out.in_flight > 0) {
    log::info("drained: every request finished ({:.1f} s)", since(start));
  }
  out.seconds = since(start);
  return out;
}

}  // namespace gs::server
