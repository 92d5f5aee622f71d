#include "core/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>

namespace gs::log {
void init_from_env() {
  auto logger = spdlog::stderr_color_mt("gemmaserve");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%H:%M:%S.%e %^%L%$ %v");
  if (const char* lvl = std::getenv("GS_LOG_LEVEL")) spdlog::set_level(spdlog::level::from_str(lvl));
}
}  // namespace gs::log
