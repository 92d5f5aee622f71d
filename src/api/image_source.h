// The bytes behind an image part's URL, under the server's rules: data: URLs always; file:// only
// below --allowed-local-media-path; http:// only to a host listed in --allowed-media-domains (the
// server fetches nothing by default); https:// refused (this build's HTTP client has no TLS).
// Every refusal or failure is a gs::Error whose message the client can act on.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "api/multimodal_options.h"

namespace gs::api {

std::string fetch_image_bytes(const std::string& url, const MultimodalOptions& opts);

// Strict standard base64 (RFC 4648, '=' padding optional, whitespace refused): nullopt on any other byte.
std::optional<std::string> decode_base64(std::string_view text);

}  // namespace gs::api
