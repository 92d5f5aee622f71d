// Logging: spdlog, one logger, readable lines on stderr. `GS_LOG_LEVEL=debug` for more.
#pragma once
#include <spdlog/spdlog.h>

namespace gs::log {
void init_from_env();  // reads GS_LOG_LEVEL (trace|debug|info|warn|error|off)
using spdlog::debug;
using spdlog::error;
using spdlog::info;
using spdlog::warn;
}  // namespace gs::log
