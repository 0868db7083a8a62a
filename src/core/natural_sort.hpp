// Orders file names the way people number frames: img2 before img10.
#pragma once
#include <string>
#include <vector>

namespace stackalign {

bool natural_less(const std::string& a, const std::string& b);
void natural_sort(std::vector<std::string>& names);

}  // namespace stackalign
