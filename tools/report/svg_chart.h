// Charts as inline SVG text, for a page that loads nothing from elsewhere.
//
//   std::string svg = LineChart({.title = "loss", .x_label = "epoch", .y_label = "loss"},
//                               {{"train", "#1f77b4", {{1, 0.6}, {2, 0.4}}}});
//   std::string bars = StackedBars({.title = "step time"}, {"compute", "data"},
//                                  {"#2ca02c", "#d62728"}, {{"1", {0.9, 0.1}}});
//
// Every text is escaped; non-finite values are left out; an empty chart says so.
#ifndef RINGWORK_TOOLS_REPORT_SVG_CHART_H_
#define RINGWORK_TOOLS_REPORT_SVG_CHART_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringwork {

struct ChartFrame {
  std::string title;
  std::string x_label;
  std::string y_label;
  int width = 520;
  int height = 300;
};

struct Series {
  std::string name;
  std::string color;                              // CSS color
  std::vector<std::pair<double, double>> points;  // (x, y)
};

// Lines with a dot per point and a legend; the y axis starts at 0 unless values
// are negative.
std::string LineChart(const ChartFrame& frame, const std::vector<Series>& series);

// One bar per label.
std::string BarChart(const ChartFrame& frame, const std::string& color,
                     const std::vector<std::pair<std::string, double>>& bars);

// One bar per label, made of parts stacked bottom to top (fractions of 1: the axis
// runs from 0 to 100%).
struct StackedBar {
  std::string label;
  std::vector<double> parts;
};
std::string StackedBars(const ChartFrame& frame, const std::vector<std::string>& part_names,
                        const std::vector<std::string>& colors,
                        const std::vector<StackedBar>& bars);

// &, <, >, " and ' as entities.
std::string HtmlEscape(std::string_view text);

}  // namespace ringwork

#endif  // RINGWORK_TOOLS_REPORT_SVG_CHART_H_
