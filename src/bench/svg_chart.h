// Line charts as plain SVG text, written by hand (no plotting library): axes with round-number
// ticks, one polyline per series, optional point markers with labels, a legend. Enough for
// latency CDFs, throughput over time and sweep curves, readable in any browser.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gs::bench {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y)
  bool markers = false;
  std::vector<std::string> point_labels;  // drawn beside markers when not empty (same length as points)
};

struct Chart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<Series> series;
};

std::string render_svg(const Chart& c);

// Empirical CDF: the sorted values against the fraction of the sample at or below each.
std::vector<std::pair<double, double>> cdf_points(std::vector<double> values);

// About `target` round tick values (1, 2 or 5 times a power of ten apart) covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int target);

std::string xml_escape(std::string_view s);

// Writes `text` to `path`, creating parent directories; gs::Error when that fails.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace gs::bench
