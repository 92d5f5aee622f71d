#include "api/image_source.h"

#include <httplib.h>

#include <array>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace gs::api {

namespace fs = std::filesystem;

std::optional<std::string> decode_base64(std::string_view text) {
  static const std::array<int8_t, 256> table = [] {
    std::array<int8_t, 256> t{};
    t.fill(-1);
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) t[uint8_t(alphabet[i])] = int8_t(i);
    return t;
  }();
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3 + 2);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int8_t v = table[uint8_t(c)];
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(char((acc >> bits) & 0xff));
    }
  }
  return out;
}

namespace {

std::string from_data_url(const std::string& url, const MultimodalOptions& opts) {
  const size_t comma = url.find(',');
  if (comma == std::string::npos) throw Error("data URL has no ',' before its data");
  const std::string meta = url.substr(5, comma - 5);  // after "data:"
  const size_t semi = meta.find(';');
  const std::string media = meta.substr(0, semi);
  if (media.rfind("image/", 0) != 0) {
    throw Error("data URL media type \"{}\" is not an image type (expected data:image/...;base64,...)", media);
  }
  if (semi == std::string::npos || meta.find(";base64", semi) == std::string::npos) {
    throw Error("data URL must be base64-encoded (data:{};base64,...)", media);
  }
  const size_t encoded = url.size() - comma - 1;
  // Checked before decoding: the decoded size is 3/4 of the text.
  if (encoded / 4 * 3 > opts.limits.max_bytes + 3) {
    throw Error("image is {:.1f} MB, over --max-image-bytes {}", double(encoded / 4 * 3) / 1e6, opts.limits.max_bytes);
  }
  auto bytes = decode_base64(std::string_view(url).substr(comma + 1));
  if (!bytes) throw Error("data URL is not valid base64");
  return std::move(*bytes);
}

std::string from_file_url(const std::string& url, const MultimodalOptions& opts) {
  if (opts.allowed_local_media_path.empty()) {
    throw Error("file:// URLs are refused: the server was started without --allowed-local-media-path");
  }
  std::string path = url.substr(7);  // after "file://"
  if (path.rfind("localhost/", 0) == 0) path = path.substr(9);
  if (path.empty() || path[0] != '/') throw Error("file:// URL must name an absolute path (file:///dir/image.png)");
  std::error_code root_ec, file_ec, ec;
  // Both resolved through symlinks and "..", so the check is on where the bytes really are.
  const fs::path root = fs::weakly_canonical(opts.allowed_local_media_path, root_ec);
  const fs::path file = fs::weakly_canonical(path, file_ec);
  auto rel = file.lexically_relative(root);
  if (root_ec || file_ec || rel.empty() || *rel.begin() == ".." || rel.is_absolute()) {
    throw Error("file {} is outside --allowed-local-media-path {}", path, opts.allowed_local_media_path);
  }
  if (!fs::is_regular_file(file, ec)) throw Error("file {} does not exist or is not a regular file", path);
  const auto size = fs::file_size(file, ec);
  if (ec) throw Error("file {} cannot be read", path);
  if (size > opts.limits.max_bytes) {
    throw Error("image is {:.1f} MB, over --max-image-bytes {}", double(size) / 1e6, opts.limits.max_bytes);
  }
  std::ifstream in(file, std::ios::binary);
  std::string bytes(size, '\0');
  if (!in.read(bytes.data(), std::streamsize(size))) throw Error("file {} cannot be read", path);
  return bytes;
}

std::string from_http_url(const std::string& url, const MultimodalOptions& opts) {
  if (url.rfind("https://", 0) == 0) {
    throw Error("https:// image URLs are not supported (this build's HTTP client has no TLS); send the image as a "
                "data: URL");
  }
  const std::string rest = url.substr(7);  // after "http://"
  const size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  const std::string target = slash == std::string::npos ? "/" : rest.substr(slash);
  if (authority.find('@') != std::string::npos) throw Error("image URL must not carry credentials");
  std::string host = authority;
  int port = 80;
  if (auto colon = authority.rfind(':'); colon != std::string::npos && authority.find(']') == std::string::npos) {
    host = authority.substr(0, colon);
    try {
      port = std::stoi(authority.substr(colon + 1));
    } catch (const std::exception&) {
      throw Error("image URL has a bad port: {}", authority);
    }
  }
  std::string lower = host;
  for (char& c : lower) c = char(std::tolower(uint8_t(c)));
  bool allowed = false;
  for (const std::string& d : opts.allowed_media_domains) allowed |= lower == d;
  if (!allowed) {
    const char* why = opts.allowed_media_domains.empty()
                          ? "the server fetches no URLs unless --allowed-media-domains lists the host"
                          : "it is not in --allowed-media-domains";
    throw Error("image URLs to host \"{}\" are refused: {}", host, why);
  }
  httplib::Client cli(host, port);
  cli.set_connection_timeout(opts.fetch_timeout_s, 0);
  cli.set_read_timeout(opts.fetch_timeout_s, 0);
  cli.set_follow_location(false);  // a redirect could leave the allowed host
  std::string body;
  bool too_big = false;
  auto res = cli.Get(target.c_str(), [&](const char* data, size_t n) {
    if (body.size() + n > opts.limits.max_bytes) {
      too_big = true;
      return false;
    }
    body.append(data, n);
    return true;
  });
  if (too_big) throw Error("image at {} is over --max-image-bytes {}", url, opts.limits.max_bytes);
  if (!res) throw Error("could not fetch {}: {}", url, httplib::to_string(res.error()));
  if (res->status != 200) throw Error("could not fetch {}: HTTP status {}", url, res->status);
  return body;
}

}  // namespace

std::string fetch_image_bytes(const std::string& url, const MultimodalOptions& opts) {
  if (url.rfind("data:", 0) == 0) return from_data_url(url, opts);
  if (url.rfind("file://", 0) == 0) return from_file_url(url, opts);
  if (url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0) return from_http_url(url, opts);
  throw Error("image URL must be a data:, file:// or http(s):// URL, got \"{}\"", url.substr(0, 40));
}

}  // namespace gs::api
