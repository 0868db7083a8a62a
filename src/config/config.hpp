// The TOML run configuration as the program sees it: typed values, choices
// already enums, paths resolved against the config file's folder. Every key,
// its type, range, default and documentation is one row of schema.cpp; the
// planners (pipelines/plan/) turn a Config into the typed plan stages take.
#pragma once
#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../alignment/landmark_fit.hpp"
#include "../alignment/motion.hpp"
#include "../alignment/solve_offsets.hpp"
#include "../core/choices.hpp"
#include "../core/enum_names.hpp"

namespace stackalign {

enum class Mode { stack, landmarks };
template <>
struct EnumNames<Mode> {
    static constexpr const char* names[] = {"stack", "landmarks"};
};

// What happens to pairs flagged weak or outlying: keep their shift, or
// replace it from their unflagged neighbours.
enum class OnOutlier { keep, interpolate };
template <>
struct EnumNames<OnOutlier> {
    static constexpr const char* names[] = {"keep", "interpolate"};
};

// [search] coarse_to_fine: never, always, or where a pair's exhaustive
// search is large (StackPlan::coarse_bin), on either backend alike.
enum class CoarseToFine { off, on, automatic };
template <>
struct EnumNames<CoarseToFine> {
    static constexpr const char* names[] = {"off", "on", "auto"};
};

// Cosine stretching of tilt-series pairs: never, always, or per pair where
// it gives the sharper peak.
enum class StretchMode { off, on, automatic };
template <>
struct EnumNames<StretchMode> {
    static constexpr const char* names[] = {"off", "on", "auto"};
};

// [alignment] center_of_mass: never, always, or where a whole object's
// views pass the checks (pipelines/stages/centre_of_mass.hpp).
enum class CentreOfMassMode { off, on, automatic };
template <>
struct EnumNames<CentreOfMassMode> {
    static constexpr const char* names[] = {"off", "on", "auto"};
};

// [alignment] slab_fit: never, always on a slab, or on a slab whose
// content fills its depth (pipelines/stages/slab_fit.hpp).
enum class SlabFitMode { off, on, automatic };
template <>
struct EnumNames<SlabFitMode> {
    static constexpr const char* names[] = {"off", "on", "auto"};
};

// [alignment] projection_matching: never, always, or for a slab
// (pipelines/plan/tilt_decisions.hpp).
enum class ProjectionMode { off, on, automatic };
template <>
struct EnumNames<ProjectionMode> {
    static constexpr const char* names[] = {"off", "on", "auto"};
};

// [alignment] projection_moves: each view by its own match, along the axis
// by one line in sin t that every view shares (src/alignment/sine_mode.hpp),
// or that for a slab and each for a whole object.
enum class ProjectionMoves { each, sine, automatic };
template <>
struct EnumNames<ProjectionMoves> {
    static constexpr const char* names[] = {"each", "sine", "auto"};
};

// [search] refine_metric: a metric, or "auto" (rigid and similarity
// motion: NCC per pair where the values are linearly related, else `metric`;
// auto_refine_params).
enum class RefineMetric { mi, nmi, ncc, cr, automatic };
template <>
struct EnumNames<RefineMetric> {
    static constexpr const char* names[] = {"mi", "nmi", "ncc", "cr", "auto"};
};

// The metric refine_metric names; none where it is unset or "auto".
inline std::optional<Metric> named_metric(const std::optional<RefineMetric>& r) {
    if (!r || *r == RefineMetric::automatic) return std::nullopt;
    return parse_name<Metric>(name_of(*r));
}

// The aligned stack's file format; automatic: as the input.
enum class OutputFormat { automatic, tiff, mrc };
template <>
struct EnumNames<OutputFormat> {
    static constexpr const char* names[] = {"auto", "tiff", "mrc"};
};

struct InputConfig {
    std::string stack;          // multi-page TIFF or MRC stack, or
    std::string files;          // glob of single-frame TIFFs, natural order, or
    std::string glob;           // batch: one job per matching stack (expanded by load_jobs)
    bool allow_gaps = false;    // files: numbered names may skip numbers
    // Tilt angles (degrees), one per frame: an IMOD .tlt/.rawtlt file, or
    // start + step. Neither: not a tilt series (no stretch, no angle axis).
    std::string angles_file;
    std::optional<std::array<double, 2>> angles_range;  // {start, step}
    bool has_angles() const { return !angles_file.empty() || angles_range.has_value(); }
};

struct PreprocessConfig {
    int mean_radius = 1;
    bool sobel = true;
    double threshold = 20.0;
    int bins = 64;
};

struct SearchConfig {
    int window_width = 0;       // 0 = largest centred window that fits with max_shift
    int window_height = 0;
    std::optional<int> origin_x, origin_y;  // top-left of the window; centred when unset
    int max_shift = 16;
    CoarseToFine coarse_to_fine = CoarseToFine::automatic;  // the range scored on block means first
    std::optional<int> binning;                             // their block size; unset: "auto" (from the frame size)
    Subpixel subpixel = Subpixel::continuous;
    HistogramStrategy histogram = HistogramStrategy::automatic;
    Metric metric = Metric::mi;
    std::optional<RefineMetric> refine_metric;  // unset: "auto" for rigid and similarity motion, else metric
    std::optional<double> refine_sigma;         // px; unset: "auto" (from the frames' noise)
    std::optional<int> refine_side;             // px; unset: the refinement compares the whole window
    SearchMethod method = SearchMethod::window;
    int mtb_band = 4;
    MotionSearch motion;        // transform, angle_range, angle_step, scale_range, scale_step
};

// mode = "landmarks": points in `source` matched in `target` (3D volumes).
struct LandmarksConfig {
    std::string source, target, points;
    std::array<int, 3> window{21, 21, 11};
    std::array<int, 3> max_shift{8, 8, 4};
    std::optional<std::array<double, 3>> voxel_size;
    Subpixel subpixel = Subpixel::continuous;
    FitRefinement refine = FitRefinement::none;
    double min_confidence = 0.6;
};

struct AlignmentConfig {
    std::optional<int> reference;    // frame index; unset: lowest |tilt| with angles, else the middle frame
    bool reference_middle = false;   // reference = "middle" written explicitly
    double tilt_axis = 0;
    bool tilt_axis_auto = true;      // tilt_axis = "auto" (the default): estimated from a tilt series' views
    double tilt_offset = 0;          // degrees added to every angle read
    bool tilt_offset_auto = true;    // tilt_offset = "auto" (the default): estimated from a slab's views
    StretchMode cosine_stretch = StretchMode::automatic;
    std::vector<int> exclude;
    OnOutlier on_outlier = OnOutlier::keep;
    double min_sharpness = 3.0;
    double min_confidence = 0.3;
    double outlier_z = 5.0;
    OffsetSolve solve = OffsetSolve::least_squares;
    double unreliable_px = 1.0;
    CentreOfMassMode center_of_mass = CentreOfMassMode::automatic;  // whole objects: views placed by their first moments
    bool axis_place = true;  // a slab's views moved alike to where its reconstruction is sharpest
    SlabFitMode slab_fit = SlabFitMode::automatic;  // thick slabs: smooth errors found by the views' consistency
    ProjectionMode projection_matching = ProjectionMode::automatic;  // tilt series: views aligned to reprojections, repeatedly
    ProjectionMoves projection_moves = ProjectionMoves::automatic;
    int projection_iterations = 4;
    double projection_tolerance = 0.05;       // pixels
    std::optional<int> projection_binning;    // unset: "auto"
    std::optional<int> projection_thickness;  // unbinned pixels; unset: "auto"
};

struct OutputConfig {
    std::string dir = "out";
    bool aligned = true;
    FitKind fit = FitKind::none;
    OutputFormat format = OutputFormat::automatic;
    bool report = true;
};

struct DeviceConfig {
    BackendRequest backend = BackendRequest::automatic;
    int gpu = 0;
    // Batches: the GPUs jobs are spread over (run_batch: --jobs-at-once per GPU);
    // empty = just `gpu`; {-1} = every GPU ("all"); one GPU: `gpu` is set
    // to it when the config is read.
    std::vector<int> gpus;
    std::optional<int> searchers;  // unset: "auto"
};

struct Config {
    std::string path;                // the config file itself
    Mode mode = Mode::stack;
    InputConfig input;
    PreprocessConfig preprocess;
    SearchConfig search;
    LandmarksConfig landmarks;
    AlignmentConfig alignment;
    OutputConfig output;
    DeviceConfig device;
    // "section.key" -> line in the file, so checks made after the frames are
    // read (window fit, reference index) can still point at the line.
    std::map<std::string, int> lines;
    std::string canonical;           // the resolved TOML table, for job fingerprints

    std::string where(const std::string& key) const;  // "file:line: [section] key"
};

Config load_config(const std::string& path);
Config parse_config(const std::string& text, const std::string& path);

// A config file as a list of jobs: its [[job]] tables (each inheriting the
// top-level sections, its own keys winning), or one job per stack matching
// [input] glob (output in <[output] dir>/<stack name>), or the file itself.
struct Job {
    std::string name;
    Config config;
    std::string glob;                // the [input] glob this job's stack was found by, if any
};
struct Batch {
    std::vector<Job> jobs;
    bool is_batch = false;           // [[job]] or glob: summary table and batch.json
    std::string summary_dir;         // the top-level [output] dir: where batch.json goes
};
// `empty_glob_ok`: an [input] glob matching nothing yet gives no job rather
// than a ConfigError (`stackalign watch`, before the first series arrives).
Batch load_jobs(const std::string& path, bool empty_glob_ok = false);
Batch parse_jobs(const std::string& text, const std::string& path, bool empty_glob_ok = false);

// Levenshtein distance, used to suggest the nearest valid key for a typo.
int edit_distance(const std::string& a, const std::string& b);

}  // namespace stackalign
