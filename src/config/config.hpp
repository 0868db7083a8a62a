// The TOML run configuration: every key, its default and its check live in
// config.cpp; this struct is what the rest of the program sees, with paths
// already resolved against the config file's folder.
#pragma once
#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace stackalign {

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
    int mean_radius = 1;        // box mean of (2r+1)^2 pixels; 0 = off
    bool sobel = true;          // Sobel gradient magnitude
    double threshold = 20.0;    // in normalised units (frame min..max -> 0..255), applied after Sobel
    int bins = 64;              // histogram bins; bin 0 holds everything under threshold
};

struct SearchConfig {
    int window_width = 0;       // 0 = largest centred window that fits with max_shift
    int window_height = 0;
    std::optional<int> origin_x, origin_y;  // top-left of the window; centred when unset
    int max_shift = 16;
    bool subpixel = true;
    // GPU histogram strategy; the CPU ignores it except "bin-partitioned-sampled",
    // which changes the result (a systematic sample), so both backends sample.
    std::string histogram = "auto";
    std::string metric = "mi";       // mi | nmi | ncc | cr: what each candidate shift is scored by
    std::string method = "window";   // window | mtb-projection (Guthier et al.)
    int mtb_band = 4;                // mtb-projection: percent of pixels either side of the median ignored
};

// mode = "landmarks": points in `source` matched in `target` (3D volumes).
struct LandmarksConfig {
    std::string source, target, points;
    std::array<int, 3> window{21, 21, 11};    // x, y, z size of the source window around each point
    std::array<int, 3> max_shift{8, 8, 4};    // search half-range per axis, voxels
    std::optional<std::array<double, 3>> voxel_size;  // set: point files and outputs are in these units (e.g. um)
    bool subpixel = true;
};

struct AlignmentConfig {
    std::optional<int> reference;    // frame index; unset: lowest |tilt| with angles, else the middle frame
    bool reference_middle = false;   // reference = "middle" written explicitly
    double tilt_axis = 0;            // degrees from the image y axis
    bool cosine_stretch = true;      // with angles: stretch the higher-tilt view of each pair
    std::vector<int> exclude;        // 0-based views not searched nor used as neighbours
    std::string on_outlier = "keep"; // keep | interpolate: flagged pairs' neighbour shifts
    double min_sharpness = 3.0;      // MI peak (max - mean) / sd below this: pair flagged "weak"
    double outlier_z = 5.0;          // robust z-score of a neighbour shift above this: pair flagged "outlier"
};

struct OutputConfig {
    std::string dir = "out";
    bool aligned = true;
    std::string fit = "none";        // landmarks: none | rigid | affine
    std::string format = "auto";     // stacks: auto (as the input) | tiff | mrc
    bool report = true;              // stacks: report.html
};

struct DeviceConfig {
    std::string backend = "auto";    // auto | cpu | cuda
    int gpu = 0;
    // Batches: the GPUs jobs are spread over, one job per GPU at a time;
    // empty = just `gpu`; {-1} = every GPU ("all").
    std::vector<int> gpus;
};

struct Config {
    std::string path;                // the config file itself
    std::string mode = "stack";
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
};
struct Batch {
    std::vector<Job> jobs;
    bool is_batch = false;           // [[job]] or glob: summary table and batch.json
    std::string summary_dir;         // the top-level [output] dir: where batch.json goes
};
Batch load_jobs(const std::string& path);
Batch parse_jobs(const std::string& text, const std::string& path);

// Levenshtein distance, used to suggest the nearest valid key for a typo.
int edit_distance(const std::string& a, const std::string& b);

}  // namespace stackalign
