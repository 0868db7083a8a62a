// Helpers shared by the tests: paths to sample data, temporary folders,
// known-shift crops of real frames, and GPU skipping.
#pragma once
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../src/core/image.hpp"

namespace stackalign {
struct PairResult;
struct StackResult;
}

namespace test_support {

std::string source_path(const std::string& relative);  // inside the repository
std::string temp_dir(const std::string& name);         // fresh, empty, under <build>/test-tmp
std::string cli_path();                                // the stackalign binary of this build
// The exit status of `stackalign ARGS`, its output discarded (-1: it did not exit).
int run_cli(const std::string& args);
// `frames` written to DIR/s.tif and aligned there quietly on the CPU by one
// searcher (its loads are then countable), `extra` going after [search];
// returns DIR/out/run.json.
nlohmann::json run_stack_job(const std::string& dir, const std::vector<stackalign::RawFrame>& frames,
                             const std::string& extra);
// `config` written to DIR/job.toml and run there quietly on the CPU.
stackalign::StackResult run_quiet(const std::string& dir, const std::string& config);

// Frame `index` of a sample TIFF stack, read once and cached. The path is
// a `const char*` (the samples are named by literals): a std::string made
// for the call would be a temporary beside the returned reference, which
// g++ 13 warns of (-Wdangling-reference), though the cache outlives both.
const stackalign::RawFrame& sample_frame(const char* relative, int index);

// A width x height frame of `type` holding `values` row by row, each
// converted to the pixel type (NaN and infinities kept in float32).
stackalign::RawFrame frame_of(stackalign::PixelType type, int width, int height, const std::vector<double>& values);

// A width x height crop of `frame` whose top-left is at (x, y).
stackalign::RawFrame crop(const stackalign::RawFrame& frame, int x, int y, int width, int height);

// A sample multi-page TIFF as one volume, read once and cached (the path a
// `const char*`, as sample_frame's).
const stackalign::RawFrame& sample_volume(const char* relative);
// A parallel projection of `volume` at `deg` about its y axis, moved by (jx, jy), on a detector that wide (0: the volume's).
stackalign::RawFrame project_volume(const stackalign::RawFrame& volume, double deg, double jx, double jy, int detector = 0);
// A width x height x depth crop of `volume` with its first corner at (x, y, z).
stackalign::RawFrame crop_volume(const stackalign::RawFrame& volume, int x, int y, int z, int width, int height,
                                 int depth);

// `frame` (2D or a volume) with its content moved by (dx, dy, dz) pixels, by
// a phase ramp in Fourier space: exact for a band-limited periodic image,
// favouring no interpolation model. Float32.
stackalign::RawFrame fourier_shifted(const stackalign::RawFrame& frame, double dx, double dy, double dz = 0);

// A 2D `frame` whose content is turned by `angle_deg` (IMOD's sense: the
// content at X moves to R (X - c) + c, R = [cos -sin; sin cos], c the
// centre) and then moved by (dx, dy): three shears, each a Fourier phase
// ramp per row or column (Unser et al. 1995), so no interpolation model is
// favoured. Content near the edges wraps around. Float32.
stackalign::RawFrame fourier_rotated(const stackalign::RawFrame& frame, double angle_deg, double dx, double dy);

// A w-wide bin image holding the values of `v` (rows of w).
stackalign::BinImage bins_from(const std::vector<int>& v, int w);
// n random bins in 0..bins-1, a `zero_fraction` of them 0 (thresholded background).
std::vector<int> random_bins(std::mt19937& rng, int n, int bins, double zero_fraction);

// A test case that cannot make its check here (no GPU, no tmpfs, no
// browser) calls this and returns: it is counted as skipped, with its
// reason, not as passed.
// The runner calls this as each test case starts (a skip counts a case once).
void test_case_started();
void skip_test(const std::string& reason);
// True (and counted as skipped) when no CUDA GPU is usable.
bool skip_without_gpu();
int skipped_count();
std::string skipped_reasons();  // "10 no CUDA device; 1 no Chromium"

// configs/<name>.toml with its sample_data paths made absolute and, unless
// `out_dir` is empty, its [output] dir ("../out/<name>") replaced.
std::string sample_config(const std::string& name, const std::string& out_dir);

// The sample tilt series' config `cfg` (sample_config) reading only its
// views within +-80 degrees, a slab's range, so that cosine_stretch = "auto"
// chooses per pair (the whole series reaches 90, and "auto" does not
// stretch it): the views and their angles written to `dir`. View v of the
// whole series is view v - 5 of these.
std::string sample_tilt_within_slab_range(const std::string& cfg, const std::string& dir);

// Two searches' results for one pair, bit for bit: its views, integer
// peak (MI and sharpness too), stretch, refined and final shift, whether
// it was off its prediction and whether it was refined at all.
void check_same_pair_result(const stackalign::PairResult& a, const stackalign::PairResult& b);
// The same of every entry of two lists of one length.
void check_same_pair_results(const std::vector<stackalign::PairResult>& a, const std::vector<stackalign::PairResult>& b);

// Gauge-free RMS of a tilt series' offset errors (offset less truth, across
// and along the axis): c + a cos t + b sin t across the axis and a constant
// along it removed, as bench/tilt_sim.py scores.
double gauge_free_rms(const std::vector<double>& across, const std::vector<double>& along,
                      const std::vector<double>& angles_deg);

std::string read_text(const std::string& path);
void write_text(const std::string& path, const std::string& text);

}  // namespace test_support
