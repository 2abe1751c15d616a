#include "tools/report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "absl/strings/str_cat.h"

namespace ringwork {
namespace {

constexpr int kLeft = 56, kRight = 16, kTop = 30, kBottom = 44;

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

// A tick label: short, with as many decimals as the step needs.
std::string TickLabel(double v, double step) {
  char buf[32];
  const int decimals = step >= 1 ? 0 : std::min(6, static_cast<int>(std::ceil(-std::log10(step))));
  if (std::fabs(v) >= 1e9) {
    std::snprintf(buf, sizeof(buf), "%.3g", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  }
  return buf;
}

// A "nice" step (1, 2 or 5 x 10^k) giving about `ticks` intervals over `span`.
double NiceStep(double span, int ticks) {
  if (!(span > 0)) return 1;
  const double raw = span / ticks;
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * magnitude) return m * magnitude;
  }
  return 10 * magnitude;
}

struct Axis {
  double lo, hi, step;
};

Axis MakeAxis(double lo, double hi, int ticks) {
  if (!(hi > lo)) {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double step = NiceStep(hi - lo, ticks);
  return {std::floor(lo / step) * step, std::ceil(hi / step) * step, step};
}

// The axis' tick values: lo, lo + step, ..., hi; at most kMaxTicks (a wider axis,
// e.g. one whose floats no longer step, gets every k-th).
std::vector<double> Ticks(const Axis& axis) {
  constexpr int64_t kMaxTicks = 50;
  const double intervals = std::round((axis.hi - axis.lo) / axis.step);
  if (!std::isfinite(intervals) || intervals < 0) return {axis.lo};
  const int64_t n = static_cast<int64_t>(std::min(intervals, 1e12));
  const int64_t stride = n / kMaxTicks + 1;
  std::vector<double> ticks;
  for (int64_t i = 0; i <= n; i += stride)
    ticks.push_back(axis.lo + static_cast<double>(i) * axis.step);
  return ticks;
}

std::string Open(const ChartFrame& f) {
  return absl::StrCat("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"", f.width,
                      "\" height=\"", f.height, "\" viewBox=\"0 0 ", f.width, " ", f.height,
                      "\" role=\"img\" aria-label=\"", HtmlEscape(f.title), "\">\n<text x=\"",
                      f.width / 2, "\" y=\"18\" text-anchor=\"middle\" class=\"title\">",
                      HtmlEscape(f.title), "</text>\n");
}

std::string AxisLabels(const ChartFrame& f) {
  return absl::StrCat("<text x=\"", (kLeft + f.width - kRight) / 2, "\" y=\"", f.height - 6,
                      "\" text-anchor=\"middle\" class=\"label\">", HtmlEscape(f.x_label),
                      "</text>\n", "<text x=\"14\" y=\"", (kTop + f.height - kBottom) / 2,
                      "\" text-anchor=\"middle\" class=\"label\" transform=\"rotate(-90 14 ",
                      (kTop + f.height - kBottom) / 2, ")\">", HtmlEscape(f.y_label), "</text>\n");
}

std::string Empty(const ChartFrame& f) {
  return absl::StrCat(Open(f), "<text x=\"", f.width / 2, "\" y=\"", f.height / 2,
                      "\" text-anchor=\"middle\" class=\"empty\">no data</text>\n</svg>\n");
}

// Horizontal grid lines and y tick labels.
std::string YGrid(const ChartFrame& f, const Axis& y, bool percent) {
  std::string out;
  const double plot_h = f.height - kTop - kBottom;
  for (double v : Ticks(y)) {
    const double py = kTop + plot_h * (1 - (v - y.lo) / (y.hi - y.lo));
    absl::StrAppend(&out, "<line x1=\"", kLeft, "\" x2=\"", f.width - kRight, "\" y1=\"", Num(py),
                    "\" y2=\"", Num(py), "\" class=\"grid\"/>\n<text x=\"", kLeft - 4, "\" y=\"",
                    Num(py + 4), "\" text-anchor=\"end\" class=\"tick\">",
                    percent ? absl::StrCat(std::lround(v * 100), "%") : TickLabel(v, y.step),
                    "</text>\n");
  }
  return out;
}

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string LineChart(const ChartFrame& f, const std::vector<Series>& series) {
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = 0, y_hi = -std::numeric_limits<double>::infinity();
  for (const Series& s : series) {
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
      y_lo = std::min(y_lo, y);
      y_hi = std::max(y_hi, y);
    }
  }
  if (!std::isfinite(x_lo)) return Empty(f);
  Axis x = MakeAxis(x_lo, x_hi, 6);
  const Axis y = MakeAxis(y_lo, y_hi, 5);
  bool whole_x = true;  // Epochs, steps: no ticks between them.
  for (const Series& s : series) {
    for (const auto& point : s.points) whole_x = whole_x && point.first == std::floor(point.first);
  }
  if (whole_x && x.step < 1)
    x = {std::floor(x_lo), std::max(std::ceil(x_hi), std::floor(x_lo) + 1), 1};
  const double plot_w = f.width - kLeft - kRight, plot_h = f.height - kTop - kBottom;
  auto px = [&](double v) { return kLeft + plot_w * (v - x.lo) / (x.hi - x.lo); };
  auto py = [&](double v) { return kTop + plot_h * (1 - (v - y.lo) / (y.hi - y.lo)); };
  std::string out = Open(f) + YGrid(f, y, false);
  for (double v : Ticks(x)) {
    absl::StrAppend(&out, "<text x=\"", Num(px(v)), "\" y=\"", f.height - kBottom + 16,
                    "\" text-anchor=\"middle\" class=\"tick\">", TickLabel(v, x.step), "</text>\n");
  }
  int legend = 0;
  for (const Series& s : series) {
    std::string points;
    std::string dots;
    for (const auto& [vx, vy] : s.points) {
      if (!std::isfinite(vx) || !std::isfinite(vy)) continue;
      absl::StrAppend(&points, points.empty() ? "" : " ", Num(px(vx)), ",", Num(py(vy)));
      absl::StrAppend(&dots, "<circle cx=\"", Num(px(vx)), "\" cy=\"", Num(py(vy)),
                      "\" r=\"3\" fill=\"", HtmlEscape(s.color), "\"><title>", HtmlEscape(s.name),
                      " ", TickLabel(vx, 1), ": ", vy, "</title></circle>\n");
    }
    if (points.empty()) continue;
    absl::StrAppend(&out, "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"",
                    HtmlEscape(s.color), "\" points=\"", points, "\"/>\n", dots);
    const int lx = kLeft + 8 + 120 * legend++;
    absl::StrAppend(&out, "<rect x=\"", lx, "\" y=\"", kTop + 2,
                    "\" width=\"10\" height=\"10\" fill=\"", HtmlEscape(s.color), "\"/><text x=\"",
                    lx + 14, "\" y=\"", kTop + 11, "\" class=\"legend\">", HtmlEscape(s.name),
                    "</text>\n");
  }
  return out + AxisLabels(f) + "</svg>\n";
}

std::string BarChart(const ChartFrame& f, const std::string& color,
                     const std::vector<std::pair<std::string, double>>& bars) {
  double hi = 0;
  int shown = 0;
  for (const auto& [label, v] : bars) {
    if (!std::isfinite(v)) continue;
    hi = std::max(hi, v);
    ++shown;
  }
  if (shown == 0) return Empty(f);
  const Axis y = MakeAxis(0, hi, 5);
  const double plot_w = f.width - kLeft - kRight, plot_h = f.height - kTop - kBottom;
  const double slot = plot_w / static_cast<double>(bars.size());
  std::string out = Open(f) + YGrid(f, y, false);
  for (size_t i = 0; i < bars.size(); ++i) {
    const double v = bars[i].second;
    const double cx = kLeft + slot * (i + 0.5);
    absl::StrAppend(&out, "<text x=\"", Num(cx), "\" y=\"", f.height - kBottom + 16,
                    "\" text-anchor=\"middle\" class=\"tick\">", HtmlEscape(bars[i].first),
                    "</text>\n");
    if (!std::isfinite(v)) continue;
    const double h = plot_h * (v - y.lo) / (y.hi - y.lo);
    absl::StrAppend(&out, "<rect x=\"", Num(cx - slot * 0.35), "\" y=\"", Num(kTop + plot_h - h),
                    "\" width=\"", Num(slot * 0.7), "\" height=\"", Num(h), "\" fill=\"",
                    HtmlEscape(color), "\"><title>", HtmlEscape(bars[i].first), ": ", v,
                    "</title></rect>\n");
  }
  return out + AxisLabels(f) + "</svg>\n";
}

std::string StackedBars(const ChartFrame& f, const std::vector<std::string>& part_names,
                        const std::vector<std::string>& colors,
                        const std::vector<StackedBar>& bars) {
  if (bars.empty()) return Empty(f);
  const Axis y{0, 1, 0.25};
  const double plot_w = f.width - kLeft - kRight, plot_h = f.height - kTop - kBottom;
  const double slot = plot_w / static_cast<double>(bars.size());
  std::string out = Open(f) + YGrid(f, y, true);
  for (size_t i = 0; i < bars.size(); ++i) {
    const double cx = kLeft + slot * (i + 0.5);
    absl::StrAppend(&out, "<text x=\"", Num(cx), "\" y=\"", f.height - kBottom + 16,
                    "\" text-anchor=\"middle\" class=\"tick\">", HtmlEscape(bars[i].label),
                    "</text>\n");
    double base = 0;
    for (size_t p = 0; p < bars[i].parts.size() && p < colors.size(); ++p) {
      const double v = std::clamp(bars[i].parts[p], 0.0, 1.0 - base);
      if (!std::isfinite(v) || v <= 0) continue;
      absl::StrAppend(&out, "<rect x=\"", Num(cx - slot * 0.35), "\" y=\"",
                      Num(kTop + plot_h * (1 - base - v)), "\" width=\"", Num(slot * 0.7),
                      "\" height=\"", Num(plot_h * v), "\" fill=\"", HtmlEscape(colors[p]),
                      "\"><title>", HtmlEscape(part_names[p]), ": ", std::lround(v * 1000) / 10.0,
                      "%</title></rect>\n");
      base += v;
    }
  }
  // Legend in the x label's place, one entry per part (the label is the tick text).
  int lx = kLeft + 4;
  for (size_t p = 0; p < part_names.size() && p < colors.size(); ++p) {
    absl::StrAppend(&out, "<rect x=\"", lx, "\" y=\"", f.height - 16,
                    "\" width=\"10\" height=\"10\" fill=\"", HtmlEscape(colors[p]),
                    "\"/><text x=\"", lx + 14, "\" y=\"", f.height - 7, "\" class=\"legend\">",
                    HtmlEscape(part_names[p]), "</text>\n");
    lx +=
        26 + 13 * static_cast<int>(part_names[p].size()) / 2;  // About 6.5 px a character at 11 px.
  }
  ChartFrame y_only = f;
  y_only.x_label.clear();
  return out + AxisLabels(y_only) + "</svg>\n";
}

}  // namespace ringwork
