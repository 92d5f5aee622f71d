#include "chat/jinja/template.h"

#include "chat/jinja/parser.h"

namespace gs::jinja {

Template::Template(std::string_view source) : body_(parse_template(source)) {}

std::string Template::render(const std::vector<std::pair<std::string, Value>>& vars, const RenderLimits& limits) const {
  Interpreter in(limits);
  return in.render(body_, vars);
}

}  // namespace gs::jinja
