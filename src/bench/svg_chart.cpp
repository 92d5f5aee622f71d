#include "bench/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace gs::bench {
namespace {

constexpr double kWidth = 720, kHeight = 440;
constexpr double kLeft = 80, kRight = 170, kTop = 40, kBottom = 60;  // plot margins (legend on the right)
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf"};

std::string fmt_tick(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 1e5 || a < 1e-3) return fmt::format("{:.2g}", v);
  std::string s = fmt::format("{:.3f}", v);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::vector<std::pair<double, double>> cdf_points(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  std::vector<std::pair<double, double>> pts;
  const double n = static_cast<double>(values.size());
  for (size_t i = 0; i < values.size(); ++i) pts.emplace_back(values[i], static_cast<double>(i + 1) / n);
  return pts;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(target, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = std::floor(lo / step) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  }
  return ticks;
}

std::string render_svg(const Chart& c) {
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  bool any = false;
  for (const auto& s : c.series) {
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      if (!any) { x0 = x1 = x; y0 = y1 = y; any = true; }
      x0 = std::min(x0, x); x1 = std::max(x1, x);
      y0 = std::min(y0, y); y1 = std::max(y1, y);
    }
  }
  // Axes start at 0 for non-negative data (latencies, throughputs): ratios stay honest.
  x0 = std::min(x0, 0.0);
  y0 = std::min(y0, 0.0);
  const std::vector<double> xt = nice_ticks(x0, x1, 6), yt = nice_ticks(y0, y1, 5);
  x0 = xt.front(); x1 = std::max(xt.back(), x1);
  y0 = yt.front(); y1 = std::max(yt.back(), y1);
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x1 > x0 ? (x - x0) / (x1 - x0) : 0) * pw; };
  auto py = [&](double y) { return kTop + ph - (y1 > y0 ? (y - y0) / (y1 - y0) : 0) * ph; };

  std::string o = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">{}</text>\n",
      kWidth, kHeight, kWidth, kHeight, kWidth, kHeight, kLeft + pw / 2, xml_escape(c.title));
  for (double t : xt) {
    if (t > x1 + 1e-12) continue;
    o += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e0e0e0\"/>\n", px(t), kTop,
                     px(t), kTop + ph);
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", px(t), kTop + ph + 16,
                     fmt_tick(t));
  }
  for (double t : yt) {
    if (t > y1 + 1e-12) continue;
    o += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e0e0e0\"/>\n", kLeft, py(t),
                     kLeft + pw, py(t));
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kLeft - 6, py(t) + 4,
                     fmt_tick(t));
  }
  o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n", kLeft, kTop,
                   pw, ph);
  o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", kLeft + pw / 2, kHeight - 18,
                   xml_escape(c.x_label));
  o += fmt::format("<text x=\"18\" y=\"{:.1f}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {:.1f})\">{}</text>\n",
                   kTop + ph / 2, kTop + ph / 2, xml_escape(c.y_label));

  for (size_t si = 0; si < c.series.size(); ++si) {
    const Series& s = c.series[si];
    const char* color = kColors[si % std::size(kColors)];
    std::string pts;
    for (const auto& [x, y] : s.points) {
      if (std::isfinite(x) && std::isfinite(y)) pts += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
    }
    if (!pts.empty()) pts.pop_back();
    o += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n", color, pts);
    if (s.markers) {
      for (size_t i = 0; i < s.points.size(); ++i) {
        const auto [x, y] = s.points[i];
        if (!std::isfinite(x) || !std::isfinite(y)) continue;
        o += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"/>\n", px(x), py(y), color);
        if (i < s.point_labels.size()) {
          o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", px(x) + 6, py(y) - 6,
                           xml_escape(s.point_labels[i]));
        }
      }
    }
    const double ly = kTop + 14 + 20 * static_cast<double>(si);
    o += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"2\"/>\n",
                     kLeft + pw + 12, ly, kLeft + pw + 32, ly, color);
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", kLeft + pw + 38, ly + 4, xml_escape(s.name));
  }
  o += "</svg>\n";
  return o;
}

void write_text_file(const std::string& path, const std::string& text) {
  const std::filesystem::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  GS_CHECK(!ec, "{}: cannot create the directory: {}", p.parent_path().string(), ec.message());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  GS_CHECK(f.good(), "{}: cannot open for writing", path);
  f << text;
  f.close();
  GS_CHECK(f.good(), "{}: write failed", path);
}

}  // namespace gs::bench
