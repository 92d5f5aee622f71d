// The one exception type of the project: a message a user can act on.
#pragma once
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace gs {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
  template <typename... Args>
  explicit Error(fmt::format_string<Args...> f, Args&&... args)
      : std::runtime_error(fmt::format(f, std::forward<Args>(args)...)) {}
};

#define GS_CHECK(cond, ...)                         \
  do {                                              \
    if (!(cond)) throw ::gs::Error(__VA_ARGS__);    \
  } while (0)

}  // namespace gs
