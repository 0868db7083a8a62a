#include "match_points.hpp"

#include "../../src/core/interrupt.hpp"
#include "pair_confidence.hpp"
#include "refine.hpp"

namespace stackalign {

std::vector<LandmarkMatch> match_points(const LandmarkPlan& plan, PairSearcher& searcher, std::string& backend_description,
                                        Verbosity verbosity) {
    const int n = int(plan.points.size());
    std::vector<LandmarkMatch> matches(n);
    std::vector<int> searchable;
    std::vector<WindowCorner> corners;
    std::vector<Point3> voxels(n);
    for (int i = 0; i < n; ++i) {
        LandmarkMatch& m = matches[i];
        m.name = plan.points[i].name;
        m.src = plan.points[i].p;
        voxels[i] = plan.to_voxels(m.src);
        const PointWindow w = place_window(voxels[i], plan.setup.search, plan.source, plan.target);
        if (w.skip.empty()) {
            searchable.push_back(i);
            corners.push_back({w.x, w.y, w.z});
            m.window_moved = w.moved;
            if (w.moved != std::array<int, 3>{})
                log_line(verbosity, "point " + m.name + ": window moved by (" + std::to_string(w.moved[0]) + ", " +
                                        std::to_string(w.moved[1]) + ", " + std::to_string(w.moved[2]) +
                                        ") voxels to stay inside the volumes with its search range");
        } else {
            m.status = w.skip;
            log_line(verbosity, "point " + m.name + ": " + w.skip);
        }
    }
    // Points go to the searcher in groups: large enough to fill a GPU many
    // times over, small enough that progress moves on a long CPU run.
    constexpr int kPointsPerGroup = 32;
    const int to_search = int(searchable.size());
    Progress progress("points", to_search, verbosity);
    int ambiguous = 0;
    for (int first = 0; first < to_search; first += kPointsPerGroup) {
        throw_if_interrupted();
        const int count = std::min(kPointsPerGroup, to_search - first);
        const std::vector<WindowCorner> group(corners.begin() + first, corners.begin() + first + count);
        const std::vector<MiPeak> peaks = searcher.search_windows(0, 1, group);
        const std::vector<MiPeak> nulls =
            plan.min_confidence > 0 ? searcher.search_windows(0, kNullSlot, group) : std::vector<MiPeak>{};
        if (first == 0 && searcher.describe() != backend_description) {
            backend_description = searcher.describe();  // a strategy auto-tuned on the first point
            log_line(verbosity, "backend: " + backend_description);
        }
        for (int k = 0; k < count; ++k) {
            const MiPeak& peak = peaks[k];
            LandmarkMatch& m = matches[searchable[first + k]];
            m.dst = plan.from_voxels(refine_point(searcher, voxels[searchable[first + k]], corners[first + k], peak,
                                                  plan.setup.subpixel));
            m.peak = {peak.dx, peak.dy, peak.dz};
            m.mi = peak.mi;
            m.sharpness = peak.sharpness();
            m.status = "ok";
            if (!nulls.empty()) {
                m.null_mi = nulls[k].mi;
                m.confidence = confidence_from(peak.mi, m.null_mi);
                if (m.confidence < plan.min_confidence) {
                    m.status = "ambiguous";
                    ++ambiguous;
                }
            }
        }
        progress.step(first + count);
    }
    progress.finish();
    if (ambiguous)
        log_line(verbosity, std::to_string(ambiguous) + " point(s) ambiguous: their peak is not above chance "
                            "(confidence below [landmarks] min_confidence " + std::to_string(plan.min_confidence).substr(0, 4) + ")");
    return matches;
}

}  // namespace stackalign
