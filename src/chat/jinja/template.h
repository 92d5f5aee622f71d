// A Jinja2 template as Hugging Face transformers renders chat templates: parsed once, rendered
// many times, output byte-identical to Python's jinja2 in transformers' sandboxed environment.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/jinja/ast.h"
#include "chat/jinja/interpreter.h"
#include "chat/jinja/value.h"

namespace gs::jinja {

class Template {
 public:
  // Throws gs::Error("template syntax error (line N): ...").
  explicit Template(std::string_view source);
  // Throws gs::Error("template error (line N): ...") — raise_exception() messages included.
  std::string render(const std::vector<std::pair<std::string, Value>>& vars, const RenderLimits& limits = {}) const;

 private:
  Body body_;
};

}  // namespace gs::jinja
