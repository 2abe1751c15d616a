// The shortest decimal text (of at least 6 significant digits, so 100 stays
// "100") that reads back as the same number, close to Python's
// repr: for messages and files that must not round a value into another one
// (learning rates compared across workers, CSV logs).
//
//   ShortestDecimal(0.1f);   // "0.1"  (not "0.100000001")
//   ShortestDecimal(0.1);    // "0.1"
//   ShortestDecimal(1.0 / 3);  // "0.3333333333333333"
#ifndef RINGWORK_BASE_SHORTEST_DECIMAL_H_
#define RINGWORK_BASE_SHORTEST_DECIMAL_H_

#include <cstdlib>
#include <string>

#include "absl/strings/str_format.h"

namespace ringwork {

inline std::string ShortestDecimal(double x) {
  for (int digits = 6; digits < 17; ++digits) {
    std::string text = absl::StrFormat("%.*g", digits, x);
    if (std::strtod(text.c_str(), nullptr) == x) return text;
  }
  return absl::StrFormat("%.17g", x);
}

inline std::string ShortestDecimal(float x) {
  for (int digits = 6; digits < 9; ++digits) {
    std::string text = absl::StrFormat("%.*g", digits, x);
    if (std::strtof(text.c_str(), nullptr) == x) return text;
  }
  return absl::StrFormat("%.9g", x);
}

}  // namespace ringwork

#endif  // RINGWORK_BASE_SHORTEST_DECIMAL_H_
