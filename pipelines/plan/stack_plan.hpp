// The stack / tilt-series job as the stages see it: everything the config
// and the input files' headers decide, checked, typed, and nothing else.
// plan_stack is the one place a stack job reads its Config.
#pragma once
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "../../kernels/pair_searcher.hpp"
#include "../../src/config/config.hpp"
#include "../../src/io/stack_io.hpp"
#include "../run_options.hpp"
#include "backend_cost.hpp"
#include "provenance.hpp"

namespace stackalign {

// When a neighbour pair is flagged, and what then happens to its shift.
struct PairFlagRules {
    double min_sharpness = 3.0;   // peak sharpness below this: "weak peak"
    double min_confidence = 0.3;  // 1 - chance / peak below this: "not above chance" (pair_confidence.hpp)
    double outlier_z = 5.0;       // robust z of the per-view shift above this: "outlier"
    OnOutlier on_outlier = OnOutlier::keep;
    double unreliable_px = 1.0;   // least squares: every triplet of the pair off by more: "unreliable"
    // Where a triplet's disagreement is measured: the frame's centre and its
    // corners, this far from the centre (rotations disagree most there).
    double half_width = 0, half_height = 0;
};

// Projection matching of a tilt series ([alignment] projection_*).
struct ProjectionMatchPlan {
    bool on = false;
    int iterations = 4;
    double tolerance = 0.05;  // pixels
    int binning = 0;         // 0: auto (resolved with the tilt axis)
    int thickness = 0;       // unbinned pixels; 0: auto (measured from a first reconstruction)
    // Whether matching moves the views across the tilt axis too, not only
    // along it: not for a slab (every tilt within kSlabTiltLimit), whose
    // reconstruction from a limited range is biased across the axis
    // (tomography.md#projection-matching).
    bool across = true;
    // Along the axis, every view moved by one fitted line c sin t
    // ([alignment] projection_moves = "sine"), not each by its own match.
    bool sine_along = false;
};


// Beyond this many degrees of tilt a series is no slab (a whole object).
constexpr double kSlabTiltLimit = 80;

struct StackOutputs {
    std::string dir;
    bool aligned = true;          // aligned.tif / aligned.mrc
    bool report = true;           // report.html
    std::string format;           // "tiff" | "mrc" (auto resolved)
};

struct StackPlan {
    // input
    std::string input_label;             // the stack file or the files pattern, for the plan
    std::vector<std::string> files;      // input files, in frame order
    StackInfo input;                     // format, size, type, pixel size of the input
    bool input_in_memory = false;        // `input` held by the caller, not read from `files` (plan_stack's `held`)
    int frames = 0, width = 0, height = 0;
    PixelType type = PixelType::u8;
    std::string name;                    // stem for IMOD files (name.prexf, name.prexg)
    // geometry
    std::vector<double> angles;          // per view (tilt order), degrees; empty: not a tilt series
    // A series stored out of tilt order (SerialEM's dose-symmetric 0, +3,
    // -3, -6, +6, ...): the file's frame of each view, views in tilt order,
    // so that neighbours are neighbouring tilts; empty: the file's order.
    // Every stage works in view order; the written stack and tables go back
    // to the file's (in_file_order).
    std::vector<int> view_order;
    std::string angles_from;             // where the angles came from (a file, beside the stack, a range)
    std::optional<double> mdoc_tilt_axis;  // the .mdoc header's tilt axis: compared with "auto", never taken blindly
    int view_of_frame(int frame) const;  // the view holding the file's frame
    double tilt_axis = 0;                // degrees from the image y axis
    bool tilt_axis_auto = false;         // estimated from the views (resolve_tilt_axis) before the search
    bool tilt_axis_asked = false;        // the config names tilt_axis ("auto" is also the default)
    double tilt_axis_error = 0;          // "auto": the estimate's standard error, degrees
    int tilt_axis_views = 0;             // "auto": views compared with the reference
    bool tilt_axis_from_tracks = false;  // "auto": refined after the pairs by patch tracks (axis_by_tracks.hpp)
    bool tilt_axis_from_moments = false;  // "auto": a whole object's, then by its slice masses (centre_of_mass.hpp)
    double tilt_offset = 0;              // degrees added to the angles read (given, or "auto"'s estimate)
    bool tilt_offset_auto = false;       // estimated from the views (resolve_tilt_axis) before the search
    bool tilt_offset_asked = false;      // the config names tilt_offset ("auto" is also the default)
    double tilt_offset_error = 0;        // "auto": the estimate's standard error, degrees
    // "auto"'s estimate, where the pairs were stretched at it but the angles
    // written are those read (take_angles_as_read, level_specimen.hpp); else 0.
    double pairs_tilt_offset = 0;
    std::string angles_as_read_why;  // why "auto"'s offset was set aside, where it was
    bool tilt_offset_levelling = false;    // "auto" on a slab: its tracked points or its reconstruction may lay it level (level_specimen.hpp)
    // What did: tilt_offset is theirs, or 0 within 2 standard errors.
    enum class LevelledBy { none, tracks, reconstruction } tilt_offset_levelled_by = LevelledBy::none;
    bool tilt_offset_levelled() const { return tilt_offset_levelled_by != LevelledBy::none; }
    // "auto" with projection matching: tilt_axis is the matching's refined
    // axis, and this the estimate made before the search.
    std::optional<double> tilt_axis_first;
    bool stretch = false;                // the pairs' higher-tilt views cosine-stretched
    bool stretch_auto = false;           // "auto" within a slab's range: both ways, the more consistent kept (stretch_choice.hpp)
    std::string stretch_why;             // how stretching was decided (run.json cosine_stretch_chosen_by)
    bool stretch_ruled_out = false;      // "auto" on a series beyond a slab's tilt range: not stretched at all
    // "auto" (both ways), "on" or "off": the report's and run.json's word for it.
    const char* stretch_mode() const { return stretch_auto ? "auto" : stretch ? "on" : "off"; }
    std::vector<bool> excluded;          // per frame
    std::vector<int> kept;               // the views that are searched, ascending
    int reference = 0;
    std::string reference_why;           // how the reference was chosen
    int kept_reference() const {         // the reference's index in `kept`
        return int(std::find(kept.begin(), kept.end(), reference) - kept.begin());
    }
    // search
    SearchSetup setup;
    // [search] coarse_to_fine as asked, and whether the job can be searched
    // so (translation by the window method, a window of 16 px or more, a
    // range with a sharpness lattice of its own: coarse_to_fine.hpp).
    CoarseToFine coarse_request = CoarseToFine::automatic;
    bool coarse_possible = false;
    // The block size of the coarse level: coarse_block() where the range is
    // scored on block means first, 1 where every shift is scored at full
    // resolution. "auto" decides by the job alone, never by the backend, so
    // that the CPU and the GPU give the same shifts: on where a pair's
    // exhaustive search is kCoarseUpdates pixel pairs or more. Below that
    // the exhaustive search is kept: coarse to fine finds its peak wherever
    // the peaks agree, but not always on weak pairs (two layers over ±70°:
    // four of 69 skip pairs 1.6-4.8 px elsewhere, `python3
    // bench/tilt_accuracy.py --views 71 --range 70 --cases slab-layers2`),
    // and on the CPU it spares 1.1-1.2x of a whole job (`make compare`).
    int coarse_bin() const {
        const MiSearchParams& s = setup.search;
        const bool large = double(s.candidates()) * double(s.window_pixels()) >= kCoarseUpdates;
        const bool on = coarse_request == CoarseToFine::on || (coarse_request == CoarseToFine::automatic && large);
        return on && coarse_possible ? coarse_block() : 1;
    }
    // 2x2 blocks, or for frames over 2 x kCoarseSide px the power of two
    // that brings them to at most kCoarseSide: at acquisition size (61 x
    // 4096^2, steps of 30 px, max_shift 70) 2x2 block means were still
    // 73^2 shifts of 1978^2 windows a pair; with 4x4 the job took 13.6 s
    // against 16.1 on the H200, 0.001 px from the truth (gauge-free)
    // (`ACQ_VARIANTS='search.binning = 2' bash bench/device.sh acquisition`).
    static constexpr int kCoarseSide = 1536;
    int binning = 0;  // [search] binning; 0: "auto"
    int coarse_block() const {
        if (binning > 0) return binning;
        int b = 2;
        while (std::max(width, height) / b > kCoarseSide) b *= 2;
        return b;
    }
    // Where a pair's exhaustive search is this many pixel pairs (0.35 ms at
    // the H100's 1.2 T/s), the GPU's searchers share its throughput and the
    // coarse levels' extra loads and launches cost less than the shifts they
    // spare. H100, `bench stages`, coarse to fine against exhaustive, the
    // same shifts: the standard job (2401 shifts of 512^2, 6.3e8) 0.367-0.393
    // s against 0.403-0.433; the tilt series (1225 of 478^2, 2.8e8) even
    // with stretching, 5 % sooner coarse to fine; drift, the sample
    // time-lapse and X-ray-sized (1.1e8 and below) even or slower.
    static constexpr double kCoarseUpdates = 4e8;
    // refine_sigma = "auto" for shifts: setup.refine_sigma is chosen from the
    // frames' noise (resolve_refine_smoothing) before the search, and
    // refine_noise is what was measured (negative until then).
    bool refine_sigma_auto = false;
    double refine_noise = -1;
    // "auto" where the noise alone gives less than 1 px: the trial on the
    // views around the reference that weighed the two smoothings.
    struct SmoothingTrial {
        int views = 0;
        float less = 0, more = 0;           // the smoothings tried (px): the noise's, and 1 px
        double closure_less = 0, closure_more = 0;  // RMS of the triplets' disagreements (px) at each
        double seconds_less = 0, seconds_more = 0;  // each trial's wall time (searchers made, views searched)
        // The search at `more` ended once it could not win (or was not made:
        // nothing could); closure_more is then a bound from below on the RMS
        // it would have reached, from the triplets_more usable triplets done.
        bool more_stopped = false;
        int triplets_more = 0;
    };
    std::optional<SmoothingTrial> refine_trial;
    std::string refine_sigma_why;        // where setup.refine_sigma came from, for run.json
    MotionSearch motion;                 // translation, or angles (and scales) searched too
    OffsetSolve solve = OffsetSolve::least_squares;
    Device device;
    std::vector<int> gpus;               // more than one: pairs spread over these GPUs
    int searchers = 1;                   // pair searchers at work at once ([device] searchers)
    std::optional<BackendEstimate> backend_choice;  // backend = "auto" with a GPU: what decided it
    PairFlagRules flags;
    bool centre_of_mass = false;         // views placed by their first moments (centre_of_mass.hpp), where they pass its checks
    bool centre_of_mass_forced = false;  // center_of_mass = true: a view that fails the checks is a warning, not a quiet "no"
    std::string centre_of_mass_why;      // how it was decided (run.json)
    bool axis_place = false;             // a slab's tilt axis placed by its reconstruction's sharpness (axis_place.hpp)
    bool slab_fit = false;               // a slab's smooth errors fitted after the tracks (slab_fit.hpp)
    bool slab_fit_auto = false;          // "auto": only where the tracks leave their across-axis corrections out
    std::string slab_fit_why;            // how it was decided (run.json)
    std::string projection_why;          // how projection matching was decided (run.json)
    ProjectionMatchPlan projection;
    StackOutputs output;
    Provenance provenance;
};

// Validates the config against the input without reading pixel data.
// `held`: the series the caller holds in memory, in place of input.stack's
// file, whose name still names the outputs (the Python module's arrays).
StackPlan plan_stack(const Config& cfg, const RunOptions& opt, const StackInfo* held = nullptr);
// The GPUs a job's searchers take: [device] gpus where it names several,
// else [device] gpu (whatever the backend: the CPU's searchers ignore it).
std::vector<int> searcher_gpus(const StackPlan& plan);
std::string describe_plan(const StackPlan& plan);

}  // namespace stackalign
