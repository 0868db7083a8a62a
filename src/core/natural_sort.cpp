#include "natural_sort.hpp"

#include <algorithm>
#include <cctype>

namespace stackalign {

bool natural_less(const std::string& a, const std::string& b) {
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (std::isdigit((unsigned char)a[i]) && std::isdigit((unsigned char)b[j])) {
            std::size_t i0 = i, j0 = j;
            while (i0 < a.size() && a[i0] == '0') ++i0;  // leading zeros do not change the number
            while (j0 < b.size() && b[j0] == '0') ++j0;
            std::size_t i1 = i0, j1 = j0;
            while (i1 < a.size() && std::isdigit((unsigned char)a[i1])) ++i1;
            while (j1 < b.size() && std::isdigit((unsigned char)b[j1])) ++j1;
            if (i1 - i0 != j1 - j0) return i1 - i0 < j1 - j0;
            const int c = a.compare(i0, i1 - i0, b, j0, j1 - j0);
            if (c != 0) return c < 0;
            i = i1;
            j = j1;
        } else {
            if (a[i] != b[j]) return a[i] < b[j];
            ++i;
            ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

void natural_sort(std::vector<std::string>& names) { std::stable_sort(names.begin(), names.end(), natural_less); }

}  // namespace stackalign
