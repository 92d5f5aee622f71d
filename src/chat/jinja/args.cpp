#include "chat/jinja/args.h"

#include "core/error.h"

namespace gs::jinja {

ArgBinder::ArgBinder(std::string fn, const CallArgs& args, std::initializer_list<const char*> params)
    : fn_(std::move(fn)), bound_(params.size(), nullptr) {
  GS_CHECK(args.pos.size() <= params.size(), "{}() takes at most {} argument(s) ({} given)", fn_, params.size(),
           args.pos.size());
  for (size_t i = 0; i < args.pos.size(); ++i) bound_[i] = &args.pos[i];
  for (const auto& [name, value] : args.kw) {
    size_t i = 0;
    for (const char* p : params) {
      if (name == p) break;
      ++i;
    }
    GS_CHECK(i < params.size(), "{}() got an unexpected keyword argument '{}'", fn_, name);
    GS_CHECK(!bound_[i], "{}() got multiple values for argument '{}'", fn_, name);
    bound_[i] = &value;
  }
}

}  // namespace gs::jinja
