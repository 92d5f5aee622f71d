// Binds call arguments to parameter names the way a Python signature would.
#pragma once
#include <initializer_list>
#include <string>
#include <vector>

#include "chat/jinja/value.h"

namespace gs::jinja {

class ArgBinder {
 public:
  // Throws on too many positional arguments, unknown or duplicate keywords.
  ArgBinder(std::string fn, const CallArgs& args, std::initializer_list<const char*> params);
  const Value* get(size_t i) const { return bound_[i]; }  // null when not given
  Value get_or(size_t i, Value def) const { return bound_[i] ? *bound_[i] : std::move(def); }
  bool has(size_t i) const { return bound_[i] != nullptr; }
  const std::string& fn() const { return fn_; }

 private:
  std::string fn_;
  std::vector<const Value*> bound_;
};

}  // namespace gs::jinja
