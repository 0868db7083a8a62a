#include "accumulate.hpp"

#include <algorithm>
#include <stdexcept>

namespace stackalign {

std::vector<Transform> accumulate(const std::vector<Transform>& neighbour, int reference) {
    const int n = int(neighbour.size()) + 1;
    if (reference < 0 || reference >= n) throw std::out_of_range("reference frame outside the stack");
    std::vector<Transform> out(n);
    for (int k = reference + 1; k < n; ++k) out[k] = out[k - 1].then(neighbour[k - 1]);
    for (int k = reference - 1; k >= 0; --k) out[k] = out[k + 1].then(neighbour[k].inverse());
    return out;
}

std::vector<Transform> chain_offsets(int views, const std::vector<int>& kept, const std::vector<Transform>& pair,
                                     int reference) {
    const auto r = std::find(kept.begin(), kept.end(), reference);
    if (r == kept.end() || pair.size() + 1 != kept.size()) throw std::invalid_argument("chain_offsets: bad chain");
    return spread_to_views(views, kept, accumulate(pair, int(r - kept.begin())));
}

std::vector<Transform> spread_to_views(int views, const std::vector<int>& kept, const std::vector<Transform>& at_kept) {
    std::vector<Transform> out(views);
    std::size_t next = 0;  // first kept view at or after v
    for (int v = 0; v < views; ++v) {
        while (next < kept.size() && kept[next] < v) ++next;
        if (next < kept.size() && kept[next] == v) out[v] = at_kept[next];
        else if (next == 0) out[v] = at_kept.front();
        else if (next == kept.size()) out[v] = at_kept.back();
        else out[v] = interpolate(at_kept[next - 1], at_kept[next], double(v - kept[next - 1]) / (kept[next] - kept[next - 1]));
    }
    return out;
}

}  // namespace stackalign
