// The landmark job as the stages see it; plan_landmarks is the one place a
// landmark job reads its Config.
#pragma once
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../../kernels/pair_searcher.hpp"
#include "../../src/alignment/landmark_fit.hpp"
#include "../../src/config/config.hpp"
#include "../../src/io/point_files.hpp"
#include "../../src/io/volume_io.hpp"
#include "../run_options.hpp"
#include "backend_cost.hpp"
#include "provenance.hpp"

namespace stackalign {

// Volumes and points the caller holds in memory (the Python module), in
// place of the files landmarks.source, .target and .points name (the names
// still name them in the log). Why: through files, a caller's two volumes
// were written and read again before any work.
struct HeldLandmarks {
    std::shared_ptr<const RawFrame> source, target;
    std::vector<NamedPoint> points;  // in the units landmarks.voxel_size says, as a points file's
};

struct LandmarkPlan {
    std::string source_path, target_path, points_path;
    bool inputs_in_memory = false;       // HeldLandmarks' volumes and points, no file read
    VolumeInfo source, target;
    std::vector<NamedPoint> points;      // as read, in file units
    PointFormat format = PointFormat::csv;
    std::optional<std::array<double, 3>> voxel_size;  // set: points and outputs in these units
    std::string units;                   // "voxels" or "voxel_size units ..."
    SearchSetup setup;                   // window size and shift range; corners are per point
    Device device;
    std::optional<BackendEstimate> backend_choice;  // backend = "auto" with a GPU: what decided it
    FitKind fit = FitKind::none;
    FitRefinement refine = FitRefinement::none;
    // [landmarks] min_confidence: a point whose peak stands less far above
    // chance is "ambiguous" (match_points); 0: not measured.
    double min_confidence = 0.6;
    std::string output_dir;
    Provenance provenance;

    Point3 to_voxels(const Point3& p) const;
    Point3 from_voxels(const Point3& v) const;
};

// Validates the config, probes both volumes and reads the points, without
// reading pixel data; or takes them from `held`.
LandmarkPlan plan_landmarks(const Config& cfg, const RunOptions& opt, const HeldLandmarks* held = nullptr);
std::string describe_landmark_plan(const LandmarkPlan& plan);

// Where the window of a point (in voxels) starts, and why it cannot be
// searched ("" when it can). The window is centred on the rounded point
// unless that window, or its search range, would leave a volume: then it is
// moved inward just enough (`moved`, voxels per axis), keeping the point
// inside it. A point is skipped only when no window of the configured size
// that contains it fits, with its search range, in both volumes.
//
// Why moved, not masked (the part outside left out of the histograms):
// every candidate shift is then scored on the same number of voxels. A
// masked window would score candidates on different overlaps, and MI
// estimated from fewer samples is biased upwards, towards shifts that
// push the window out of the volume. The cost is the same as masking's:
// the displacement found is that of the window, centred off the point, so
// a rotation between the volumes adds (angle x offset) to its error.
struct PointWindow {
    int x = 0, y = 0, z = 0;
    std::array<int, 3> moved{};
    std::string skip;
};
PointWindow place_window(const Point3& voxel, const MiSearchParams& p, const VolumeInfo& source, const VolumeInfo& target);

// "[x, y, z]" of a voxel size, for messages.
std::string format_spacing(const std::array<double, 3>& s);
// "WxHxD type [format]", for plans and logs.
std::string dims(const VolumeInfo& t);

}  // namespace stackalign
