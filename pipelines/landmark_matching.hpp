// The landmark job, end to end: config -> load both volumes and the points ->
// preprocess in 3D -> one 3D window MI search per point -> subvoxel peak ->
// optional rigid/affine fit with outlier rejection -> write matches in the
// formats of the tools users check them with.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "../src/config/config.hpp"
#include "../src/alignment/landmark_fit.hpp"
#include "../src/io/point_files.hpp"
#include "../src/io/tiff_io.hpp"
#include "run_options.hpp"

namespace stackalign {

struct LandmarkPlan {
    TiffInfo source, target;             // pages = z
    std::vector<NamedPoint> points;      // as read, in file units
    PointFormat format = PointFormat::csv;
    SearchSetup setup;                   // window size and shift range; corners are per point
    Backend backend = Backend::cpu;
    std::string units;                   // "voxels" or "voxel_size units"
};

// Validates the config, probes both volumes and reads the points, without
// reading pixel data.
LandmarkPlan plan_landmarks(const Config& cfg, const RunOptions& opt);
std::string describe_landmark_plan(const Config& cfg, const LandmarkPlan& plan);

struct LandmarkMatch {
    std::string name;
    Point3 src{}, dst{};                 // file units; dst valid when matched()
    std::array<int, 3> peak{};           // the winning integer shift, voxels
    double mi = 0, sharpness = 0;
    std::string status;                  // "ok" | "outlier" | "skipped: why"
    bool matched() const { return status == "ok" || status == "outlier"; }
};

// Where the window of a point (in voxels) starts, and why it cannot be
// searched ("" when it can).
struct PointWindow {
    int x = 0, y = 0, z = 0;
    std::string skip;
};
PointWindow place_window(const Point3& voxel, const MiSearchParams& p, const TiffInfo& source, const TiffInfo& target);

// matches.csv: name,src_x,src_y,src_z,dst_x,dst_y,dst_z,dx,dy,dz,mi,sharpness,status
std::string matches_csv(const std::vector<LandmarkMatch>& matches);

struct LandmarkResult {
    std::vector<LandmarkMatch> matches;
    std::optional<FitResult> fit;
    std::string fit_error;               // why a requested fit could not be made
    std::string backend_description;
};

LandmarkResult run_landmarks(const Config& cfg, const RunOptions& opt);

}  // namespace stackalign
