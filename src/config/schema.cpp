#include "schema.hpp"

#include <algorithm>
#include <set>
#include <type_traits>

namespace stackalign {
namespace {

// Value <-> one field of one section, enums by their names.
template <typename T>
T from_value(const Value& v) {
    if constexpr (std::is_enum_v<T>) return *parse_name<T>(v.get<std::string>());
    else return v.get<T>();
}
template <typename T>
Value to_value(const T& t) {
    if constexpr (std::is_enum_v<T>) return name_of(t);
    else return t;
}
template <typename S, typename T>
std::function<void(Config&, const Value&)> set(S Config::*section, T S::*field) {
    return [=](Config& c, const Value& v) { c.*section.*field = from_value<T>(v); };
}
template <typename S, typename T>
std::function<Value(const Config&)> get(S Config::*section, T S::*field) {
    return [=](const Config& c) { return to_value(c.*section.*field); };
}
template <typename S, typename T>
std::function<Value(const Config&)> get_optional(S Config::*section, std::optional<T> S::*field) {
    return [=](const Config& c) { const auto& o = c.*section.*field; return o ? Value(*o) : Value(nullptr); };
}

struct Row : KeySpec {
    Row(std::string section, std::string name, KeyType type, UsedBy used_by, std::string default_text, std::string doc) {
        this->section = std::move(section);
        this->name = std::move(name);
        this->type = type;
        this->used_by = used_by;
        this->default_text = std::move(default_text);
        this->doc = std::move(doc);
    }
    Row& range(double l, double h) { lo = l, hi = h; return *this; }
    template <typename E>
    Row& names(std::map<std::string, std::string> m = {}) { choices = names_of<E>(), meant = std::move(m); return *this; }
    Row& elements(std::string p) { parts = std::move(p); return *this; }
    Row& booleans(std::string t, std::string f) { if_true = std::move(t), if_false = std::move(f); return *this; }
    template <typename S, typename T>
    Row& field(S Config::*s, T S::*f) { set = stackalign::set(s, f), get = stackalign::get(s, f); return *this; }
    Row& with(std::function<void(Config&, const Value&)> s, std::function<Value(const Config&)> g) {
        set = std::move(s), get = std::move(g);
        return *this;
    }
    // A number or "auto", kept as the number and a flag beside it.
    template <typename S>
    Row& number_or_auto(S Config::*s, double S::*number, bool S::*automatic) {
        return with(
            [=](Config& c, const Value& v) {
                c.*s.*automatic = v.is_string();
                if (!v.is_string()) c.*s.*number = v.get<double>();
            },
            [=](const Config& c) { return c.*s.*automatic ? Value("auto") : Value(c.*s.*number); });
    }
};

constexpr double kBig = 1 << 20;
using K = KeyType;
using U = UsedBy;

std::vector<KeySpec> make_schema() {
    using C = Config;
    std::vector<Row> rows = {
        Row("", "mode", K::choice, U::both, "`\"stack\"`", "`\"stack\"`: align a stack / tilt series; `\"landmarks\"`: match points between two volumes")
            .names<Mode>()
            .with([](C& c, const Value& v) { c.mode = from_value<Mode>(v); }, [](const C& c) { return to_value(c.mode); }),

        Row("input", "stack", K::path, U::stack, "unset", "multi-page TIFF or MRC stack, one page / section per frame")
            .field(&C::input, &InputConfig::stack),
        Row("input", "files", K::path, U::stack, "unset", "OR a glob of single-frame TIFFs, natural order (`img2` < `img10`); or a SerialEM `.mdoc` whose `SubFramePath`s name them (each found beside it by its file name; its `TiltAngle`s are the angles)")
            .field(&C::input, &InputConfig::files),
        Row("input", "glob", K::path, U::stack, "unset", "OR a glob of stacks: one job per stack ([Batch and cluster](batch.md))")
            .field(&C::input, &InputConfig::glob),
        Row("input", "allow_gaps", K::boolean, U::stack, "`false`", "with `files`: numbered names may skip numbers (else: an error naming the missing frames)")
            .field(&C::input, &InputConfig::allow_gaps),
        Row("input", "angles", K::angles, U::stack, "unset", "tilt angles in degrees, one per frame: IMOD `.tlt`/`.rawtlt` file, a SerialEM `.mdoc` (its `TiltAngle` per `[ZValue]`; the header's tilt axis makes an unset `tilt_axis` \"auto\", checked against the views), or `{start = -60, step = 2}`; unset: the `.mdoc` beside `stack` (`NAME.EXT.mdoc` or `NAME.mdoc`) if there is one. Views out of tilt order (dose-symmetric acquisition) are aligned in tilt order; the outputs keep the file's order ([Tilt series](tomography.md#acquisition-order))")
            .with([](C& c, const Value& v) {
                      if (v.is_string()) c.input.angles_file = v.get<std::string>();
                      else c.input.angles_range = std::array<double, 2>{v["start"].get<double>(), v["step"].get<double>()};
                  },
                  [](const C& c) {
                      if (!c.input.angles_file.empty()) return Value(c.input.angles_file);
                      if (c.input.angles_range) return Value{{"start", (*c.input.angles_range)[0]}, {"step", (*c.input.angles_range)[1]}};
                      return Value(nullptr);
                  }),

        Row("preprocess", "mean_radius", K::integer, U::both, "`1`", "box mean of (2r+1)² pixels (3D: voxels) before Sobel; 0 = off")
            .range(0, 15).field(&C::preprocess, &PreprocessConfig::mean_radius),
        Row("preprocess", "sobel", K::boolean, U::both, "`true`", "Sobel gradient magnitude (3x3, or 3x3x3 for volumes)")
            .field(&C::preprocess, &PreprocessConfig::sobel),
        Row("preprocess", "threshold", K::number, U::both, "`20.0`", "below → bin 0, in 8-bit-equivalent units ([Threshold units](#threshold-units))")
            .range(0, 1e6).field(&C::preprocess, &PreprocessConfig::threshold),
        Row("preprocess", "bins", K::integer, U::both, "`64`", "histogram bins; bin 0 holds the zeros")
            .range(2, kMaxBins).field(&C::preprocess, &PreprocessConfig::bins),

        Row("search", "window", K::int_pair, U::stack, "frame − 2·max_shift", "reference window size")
            .range(1, kBig).elements("[width, height]")
            .with([](C& c, const Value& v) { c.search.window_width = v[0], c.search.window_height = v[1]; },
                  [](const C& c) { return c.search.window_width ? Value{c.search.window_width, c.search.window_height} : Value(nullptr); }),
        Row("search", "window_origin", K::int_pair, U::stack, "centred", "top-left of the window")
            .range(0, kBig).elements("[x, y]")
            .with([](C& c, const Value& v) { c.search.origin_x = v[0].get<int>(), c.search.origin_y = v[1].get<int>(); },
                  [](const C& c) { return c.search.origin_x ? Value{*c.search.origin_x, *c.search.origin_y} : Value(nullptr); }),
        Row("search", "max_shift", K::integer, U::stack, "`16`", "candidate shifts in `[-max_shift, max_shift]²`")
            .range(0, 4096).field(&C::search, &SearchConfig::max_shift),
        Row("search", "coarse_to_fine", K::bool_or_choice, U::stack, "`\"auto\"`", "score the shift range on block means (`binning`) and on a lattice of every 2nd-6th shift, then the full-resolution shifts within 2 px of those peaks: the same peak and the same sharpness as scoring every shift wherever the peaks agree (every pair of the sample stacks but one weak time-lapse pair 6 frames apart, `bench coarse`), the CPU's search 3-5x faster (a whole job 1.1-1.2x, `make compare`); `\"auto\"` = on where a pair's search is 4e8 pixel pairs or more (shifts x window pixels), on either backend alike, so that CPU and GPU give the same shifts; below that every shift is scored, which keeps the peak on weak pairs where block means lose it; translation with `method = \"window\"`, windows of 16 px or more, and `max_shift` of 8 or more only ([Backends](architecture.md#backends))")
            .names<CoarseToFine>().booleans("on", "off").field(&C::search, &SearchConfig::coarse_to_fine),
        Row("search", "binning", K::integer_or_auto, U::stack, "`\"auto\"`", "coarse to fine: the block size of the block means the range is first scored on, the full-resolution search and refinement then taking it from there; `\"auto\"`: 2, or for frames over 3072 px on a side the power of two that brings them to at most 1536 px (4 for 4096^2: on the H200 a 61 x 4096^2 series' job 13.6 s against 16.1 with 2, [Benchmarks](benchmarks.md#acquisition-size-bash-benchdevicesh-acquisition))")
            .range(2, 64)
            .with([](C& c, const Value& v) { c.search.binning = v.is_string() ? std::optional<int>() : std::optional<int>(v.get<int>()); },
                  [](const C& c) { return c.search.binning ? Value(*c.search.binning) : Value("auto"); }),
        Row("search", "subpixel", K::bool_or_choice, U::stack, "`true`", "refinement of the integer peak: `true` = `\"continuous\"` (the metric of smoothed frames maximised at continuous shifts, [Precision](methods.md#precision)), `\"parabola\"` (a parabola through the peak's neighbours: pulled towards whole pixels), `false` = `\"off\"`")
            .names<Subpixel>().booleans("continuous", "off").field(&C::search, &SearchConfig::subpixel),
        Row("search", "method", K::choice, U::both, "`\"window\"`", "window search scored by `metric`, or Guthier et al.'s exposure-invariant bitmap projections ([Methods](methods.md#metrics-and-histogram-strategies))")
            .names<SearchMethod>().field(&C::search, &SearchConfig::method),
        Row("search", "histogram", K::choice, U::both, "`\"auto\"`", "GPU strategy ([Methods](methods.md#metrics-and-histogram-strategies)); `\"auto\"`: the fastest, timed on the first pair and remembered for later runs ([Backends](architecture.md#backends)); `presorted` and `cr-atomic` need `metric = \"cr\"`. The CPU ignores it except `\"bin-partitioned-sampled\"`, an approximation both backends make")
            .names<HistogramStrategy>().field(&C::search, &SearchConfig::histogram),
        Row("search", "metric", K::choice, U::both, "`\"mi\"`", "score of each candidate shift ([Methods](methods.md#metrics-and-histogram-strategies))")
            .names<Metric>().field(&C::search, &SearchConfig::metric),
        Row("search", "refine_metric", K::choice, U::both, "`\"auto\"` (rigid, similarity, landmarks), else `metric`", "what the continuous refinement maximises: `\"ncc\"` correlates the smoothed values themselves (frames of one contrast: on rotations with noise 1.6-3x closer than MI, at or below OpenCV ECC, [Rotation](methods.md#rotation)); MI follows any one-to-one change of contrast ([Precision](methods.md#precision)); `\"auto\"` (rigid and similarity pairs, landmark points) takes NCC for each pair or point whose values are linearly related at the search's answer (Pearson's r at least 0.9, or at most -0.9: an inverted contrast), `metric` for the others (landmarks: raw median error 0.173 -> 0.104 voxel, `bench/landmark_raw.py`)")
            .names<RefineMetric>().with([](C& c, const Value& v) { c.search.refine_metric = from_value<RefineMetric>(v); },
                                  [](const C& c) { return c.search.refine_metric ? to_value(*c.search.refine_metric) : Value(nullptr); }),
        Row("search", "refine_sigma", K::number_or_auto, U::stack, "`\"auto\"`", "Gaussian smoothing (px) of both frames before the continuous refinement compares them; `\"auto\"`: from the frames' noise, 0.65 px for clean frames up to 1 px for noisy ones, and 1 px where a trial on 9 views finds the pairs agree clearly better with it (shifts); 1 px for rigid and similarity motion ([Precision](methods.md#precision))")
            .range(kRefineSigmaMin, kRefineSigma)
            .with([](C& c, const Value& v) { c.search.refine_sigma = v.is_string() ? std::optional<double>() : std::optional<double>(v.get<double>()); },
                  [](const C& c) { return c.search.refine_sigma ? Value(*c.search.refine_sigma) : Value("auto"); }),
        Row("search", "refine_side", K::integer, U::stack, "the whole window", "the continuous refinement compares only the window's centred part this many px on a side (at full resolution): faster on large frames, less precise where the part holds less detail: on the H200's 61 x 5760 x 4092 bench series 2048 took a quarter less time a series in a batch, 0.005 px from the truth against 0.001 ([Benchmarks](benchmarks.md#acquisition-size-bash-benchdevicesh-acquisition))")
            .range(64, 65536)
            .with([](C& c, const Value& v) { c.search.refine_side = v.get<int>(); },
                  [](const C& c) { return c.search.refine_side ? Value(*c.search.refine_side) : Value(nullptr); }),
        Row("search", "mtb_band", K::integer, U::both, "`4`", "`mtb-projection` only: percent of pixels either side of the median left out of the bitmaps")
            .range(0, 49).field(&C::search, &SearchConfig::mtb_band),
        Row("search", "transform", K::choice, U::stack, "`\"translation\"`", "motion between neighbouring frames: a shift, `\"rigid\"` (rotation + shift) or `\"similarity\"` (rotation + isotropic scale + shift); angles and scales searched exhaustively, then refined with the shift ([Rotation](methods.md#rotation))")
            .names<MotionModel>().with([](C& c, const Value& v) { c.search.motion.model = *parse_name<MotionModel>(v.get<std::string>()); },
                                       [](const C& c) { return Value(name_of(c.search.motion.model)); }),
        Row("search", "angle_range", K::number, U::stack, "`10`", "rigid / similarity: angles in `[-angle_range, angle_range]` degrees are searched")
            .range(0, 90).with([](C& c, const Value& v) { c.search.motion.angle_range = v.get<double>(); },
                               [](const C& c) { return Value(c.search.motion.angle_range); }),
        Row("search", "angle_step", K::number, U::stack, "`1`", "rigid / similarity: step of the angle search (degrees) before refinement")
            .range(0.01, 45).with([](C& c, const Value& v) { c.search.motion.angle_step = v.get<double>(); },
                                  [](const C& c) { return Value(c.search.motion.angle_step); }),
        Row("search", "scale_range", K::number, U::stack, "`0.05`", "similarity: scales in `[1 - scale_range, 1 + scale_range]` are searched")
            .range(0, 0.5).with([](C& c, const Value& v) { c.search.motion.scale_range = v.get<double>(); },
                                [](const C& c) { return Value(c.search.motion.scale_range); }),
        Row("search", "scale_step", K::number, U::stack, "`0.01`", "similarity: step of the scale search before refinement")
            .range(0.001, 0.5).with([](C& c, const Value& v) { c.search.motion.scale_step = v.get<double>(); },
                                    [](const C& c) { return Value(c.search.motion.scale_step); }),

        Row("landmarks", "source", K::path, U::landmarks, "required", "3D volume the points are in: multi-page TIFF, pages = z")
            .field(&C::landmarks, &LandmarksConfig::source),
        Row("landmarks", "target", K::path, U::landmarks, "required", "3D volume the points are searched in")
            .field(&C::landmarks, &LandmarksConfig::target),
        Row("landmarks", "points", K::path, U::landmarks, "required", "source points: CSV `x,y,z[,name]`, Amira `.landmarkAscii` or BigWarp CSV")
            .field(&C::landmarks, &LandmarksConfig::points),
        Row("landmarks", "window", K::int_triple, U::landmarks, "`[21, 21, 11]`", "x, y, z size of the source window around each point (voxels)")
            .range(1, 4096).elements("[x, y, z]").field(&C::landmarks, &LandmarksConfig::window),
        Row("landmarks", "max_shift", K::int_triple, U::landmarks, "`[8, 8, 4]`", "search half-range per axis (voxels)")
            .range(0, 1024).elements("[x, y, z]").field(&C::landmarks, &LandmarksConfig::max_shift),
        Row("landmarks", "voxel_size", K::number_triple, U::landmarks, "unset", "point files and outputs in physical units (e.g. µm): coordinate = voxel index × voxel_size; unset: the volumes' headers give it (NRRD, NIfTI; both must agree), else voxels")
            .range(1e-9, 1e9).elements("[x, y, z]")
            .with([](C& c, const Value& v) { c.landmarks.voxel_size = v.get<std::array<double, 3>>(); },
                  get_optional(&C::landmarks, &LandmarksConfig::voxel_size)),
        Row("landmarks", "subpixel", K::bool_or_choice, U::landmarks, "`true`", "refinement of each point's integer peak, as `[search] subpixel` in 3D: `true` = `\"continuous\"`, `\"parabola\"`, `false` = `\"off\"`")
            .names<Subpixel>().booleans("continuous", "off").field(&C::landmarks, &LandmarksConfig::subpixel),
        Row("landmarks", "min_confidence", K::number, U::landmarks, "`0.6`", "a point's confidence, 1 − (the best MI of its window against the target inverted through its centre) / (its peak's MI), below this marks it `ambiguous` (still fitted; the fit's outlier test judges it); `0`: not measured (one more search per point). Measured: the sample brains 0.73-0.92; the volume moved 30 voxels beyond the range 0-0.63 ([Landmarks](landmarks.md))")
            .range(0, 1).field(&C::landmarks, &LandmarksConfig::min_confidence),
        Row("landmarks", "refine", K::choice, U::landmarks, "`\"none\"`", "`\"global\"`: after the fit (`[output] fit`, required), the rigid or affine transform refined by maximising MI over the whole overlap of the two volumes, from the fit; `fit_x,fit_y,fit_z` and the transform files then come from it")
            .names<FitRefinement>().field(&C::landmarks, &LandmarksConfig::refine),

        Row("alignment", "reference", K::reference, U::stack, "lowest \\|tilt\\| / middle", "reference frame (0-based) or `\"middle\"`; default: lowest \\|tilt\\| with angles, else the middle (frames/2)")
            .with([](C& c, const Value& v) {
                      if (v.is_string()) c.alignment.reference_middle = true;
                      else c.alignment.reference = v.get<int>();
                  },
                  [](const C& c) {
                      return c.alignment.reference ? Value(*c.alignment.reference)
                                                   : c.alignment.reference_middle ? Value("middle") : Value(nullptr);
                  }),
        Row("alignment", "tilt_axis", K::number_or_auto, U::stack, "`\"auto\"`", "tilt axis in degrees, counter-clockwise from the image y axis (a number is used as it is), or `\"auto\"`: for a tilt series (with angles), estimated from the views before the search (from the `.mdoc` header's angle where there is one), then refined by patches tracked through the aligned views, with its standard error, and on a whole object placed by its centres of mass turned until its views' slice masses agree; without angles, 0 ([Tilt axis](tomography.md#tilt-axis))")
            .range(-360, 360)
            .number_or_auto(&C::alignment, &AlignmentConfig::tilt_axis, &AlignmentConfig::tilt_axis_auto),
        Row("alignment", "tilt_offset", K::number_or_auto, U::stack, "`\"auto\"`", "degrees added to every tilt angle read (the stage's zero is not the specimen's), or `\"auto\"`: for a slab (cosine stretching on or \"auto\"), the pairs are stretched at the constant offset under which each view stretched by cos(partner's tilt) / cos(its tilt) matches best; the angles written (the output `.tlt`, `shifts.csv`, run.json's `plan.tilt_offset`) and used after the tracks get the offset that lays the tracked points of the specimen level where those lie in planes (a section, one or a few layers), else the one that lays its reconstruction's content level where two measures of its plane agree, each with its standard error; where neither does, the pairs' estimate, but the angles read where the slab fit runs (on content that fills a slab's depth the pairs' best stretch is not the stage's tilt) or the centres of mass place a whole object (an offset only turns it); run.json's `pairs_tilt_offset` keeps the pairs' ([Tilt series](tomography.md#tilt-offset))")
            .range(-45, 45)
            .number_or_auto(&C::alignment, &AlignmentConfig::tilt_offset, &AlignmentConfig::tilt_offset_auto),
        Row("alignment", "cosine_stretch", K::bool_or_choice, U::stack, "`\"auto\"`", "with angles: stretch the higher-tilt view of each pair by cos(low)/cos(high) (slab specimens): `true`, `false`, or `\"auto\"`: the pairs aligned both ways, stretched kept unless the least-squares fit as read leaves under half its residual (up to twice the pair stage's work: as read stops once its triplets cannot win); off for a series reaching beyond ±80° (no slab) ([Tilt series](tomography.md))")
            .names<StretchMode>().booleans("on", "off").field(&C::alignment, &AlignmentConfig::cosine_stretch),
        Row("alignment", "exclude", K::int_list, U::stack, "`[]`", "0-based views not searched nor used as neighbours; written with interpolated offsets")
            .range(0, 1 << 30).elements("0-based view indices").field(&C::alignment, &AlignmentConfig::exclude),
        Row("alignment", "on_outlier", K::choice, U::stack, "`\"keep\"`", "what happens to flagged pairs' shifts: kept, or interpolated from their neighbours")
            .names<OnOutlier>().field(&C::alignment, &AlignmentConfig::on_outlier),
        Row("alignment", "min_sharpness", K::number, U::stack, "`3.0`", "peak sharpness (max − mean) / sd of the scores on the range's sharpness lattice (every shift where `max_shift` < 8, else every `max_shift / 4`-th per axis) below this flags a pair `weak peak`")
            .range(0, 1e6).field(&C::alignment, &AlignmentConfig::min_sharpness),
        Row("alignment", "min_confidence", K::number, U::stack, "`0.3`", "a pair's confidence, 1 − (the best MI of its reference against its moving view turned by 180°, on every 2nd pixel of every 2nd row for windows of 4 M px and more) / (its peak's MI), below this flags it `not above chance`; a skip pair below it confirms nothing; `0`: not measured (one more search per pair and skip) ([Flags](methods.md#flags))")
            .range(0, 1).field(&C::alignment, &AlignmentConfig::min_confidence),
        Row("alignment", "outlier_z", K::number, U::stack, "`5.0`", "robust z-score of a neighbour shift above this flags it `outlier`")
            .range(0.5, 1e6).field(&C::alignment, &AlignmentConfig::outlier_z),
        Row("alignment", "solve", K::choice, U::stack, "`\"least-squares\"`", "per-frame offsets from the neighbour pairs summed (`\"chain\"`), or fitted together with the pairs one view further apart (`\"least-squares\"`: a pair's error is averaged, not carried; inconsistent pairs are flagged `unreliable`; twice the searches)")
            .names<OffsetSolve>().field(&C::alignment, &AlignmentConfig::solve),
        Row("alignment", "unreliable_px", K::number, U::stack, "`1.0`", "least squares: a neighbour pair is flagged `unreliable` when every triplet (i, i+1, i+2) it is in disagrees by more than this many pixels")
            .range(0.01, 1e6).field(&C::alignment, &AlignmentConfig::unreliable_px),
        Row("alignment", "center_of_mass", K::bool_or_choice, U::stack, "`\"auto\"`", "tilt series of a whole object (any range): each view placed by the centre of mass of the slices every view shows whole, which for parallel projections moves as c + a cos t + b sin t across the axis and not along it (along it, where the object runs past the views' ends, by the slices' masses); `\"auto\"`: where the views pass its checks (those slices hold at least half of every view's mass, the same in each; a slab fails them) ([Tilt series](tomography.md#centres-of-mass))")
            .names<CentreOfMassMode>().booleans("on", "off").field(&C::alignment, &AlignmentConfig::center_of_mass),
        Row("alignment", "axis_place", K::boolean, U::stack, "`true`", "tilt series of a slab (no whole object placed by its centres of mass): every view moved alike across the axis to where the reconstruction about the views' centre is sharpest, where that lies 1.5 px or more from the pairs' place (nearer, the measure's own bias), so that the tilt axis runs through the centre of the aligned views (the pairs cannot see its place; a reconstruction does); `false`: left where the pairs put it ([Tilt series](tomography.md#axis-place))")
            .field(&C::alignment, &AlignmentConfig::axis_place),
        Row("alignment", "slab_fit", K::bool_or_choice, U::stack, "`\"auto\"`", "tilt series of a slab (every tilt within ±80°): after the tracks, the offsets' smooth errors across the axis over the tilt (six shapes) fitted to the views' exact least-squares consistency with one slab, whose depth the same consistency chooses; its least squares on the GPU with CUDA (about 0.9 s of a 1.3-s 121 x 512² job on the H200, 3.5 s on its 16 CPU threads; `false` skips it). `\"auto\"`: only where the tracks leave their across-axis corrections out (content that fills the slab's depth), where it never harmed a bench series ([Tilt series](tomography.md#slab-fit))")
            .names<SlabFitMode>().booleans("on", "off").field(&C::alignment, &AlignmentConfig::slab_fit),
        Row("alignment", "projection_matching", K::bool_or_choice, U::stack, "`\"auto\"`", "tilt series: after the pairs, align every view to a reprojection of the series' reconstruction without it, repeatedly; `\"auto\"`: on for a slab (every tilt within ±80°), moving the views along the tilt axis only (by `projection_moves`), off for a whole object (its centres of mass place it) ([Projection matching](tomography.md#projection-matching))")
            .names<ProjectionMode>().booleans("on", "off").field(&C::alignment, &AlignmentConfig::projection_matching),
        Row("alignment", "projection_moves", K::choice, U::stack, "`\"auto\"`", "projection matching: each view moved by its own match (`\"each\"`), or along the axis every view by one line c sin t fitted to all of them, each measured by its rows' sums (`\"sine\"`: the error thick slabs' pairs leave along the axis, without each view's own noise or the reconstruction's bias across it; across the axis as `\"each\"`); `\"auto\"`: `\"sine\"` for a slab (every tilt within ±80°), `\"each\"` for a whole object ([Projection matching](tomography.md#one-line-in-sin-t))")
            .names<ProjectionMoves>().field(&C::alignment, &AlignmentConfig::projection_moves),
        Row("alignment", "projection_iterations", K::integer, U::stack, "`4`", "projection matching: at most this many rounds of reconstruct, reproject, align")
            .range(1, 100).field(&C::alignment, &AlignmentConfig::projection_iterations),
        Row("alignment", "projection_tolerance", K::number, U::stack, "`0.05`", "projection matching: stop when no view moved by more than this many pixels in a round")
            .range(0.001, 1e6).field(&C::alignment, &AlignmentConfig::projection_tolerance),
        Row("alignment", "projection_binning", K::integer_or_auto, U::stack, "`\"auto\"`", "projection matching: views binned by this factor for the reconstruction and the matching; `\"auto\"`: the smallest that leaves at most 256 pixels across")
            .range(1, 64)
            .with([](C& c, const Value& v) { c.alignment.projection_binning = v.is_string() ? std::optional<int>() : std::optional<int>(v.get<int>()); },
                  [](const C& c) { return c.alignment.projection_binning ? Value(*c.alignment.projection_binning) : Value("auto"); }),
        Row("alignment", "projection_thickness", K::integer_or_auto, U::stack, "`\"auto\"`", "projection matching: thickness of the reconstructed slab in pixels (unbinned); `\"auto\"`: measured from a first reconstruction as deep as the views are wide ([Projection matching](tomography.md#projection-matching))")
            .range(1, 1 << 20)
            .with([](C& c, const Value& v) { c.alignment.projection_thickness = v.is_string() ? std::optional<int>() : std::optional<int>(v.get<int>()); },
                  [](const C& c) { return c.alignment.projection_thickness ? Value(*c.alignment.projection_thickness) : Value("auto"); }),

        Row("output", "dir", K::path, U::both, "`\"out\"`", "output folder, created if missing")
            .field(&C::output, &OutputConfig::dir),
        Row("output", "aligned", K::boolean, U::stack, "`true`", "write the aligned stack")
            .field(&C::output, &OutputConfig::aligned),
        Row("output", "fit", K::choice, U::landmarks, "`\"none\"`", "least-squares fit of the matches, outliers (residual over 3 robust sigmas and over half a voxel) rejected")
            .names<FitKind>().field(&C::output, &OutputConfig::fit),
        Row("output", "format", K::choice, U::stack, "`\"auto\"`", "aligned stack format; auto = as the input")
            .names<OutputFormat>({{"tif", "tiff"}, {"st", "mrc"}, {"ali", "mrc"}}).field(&C::output, &OutputConfig::format),
        Row("output", "report", K::boolean, U::stack, "`true`", "write `report.html`")
            .field(&C::output, &OutputConfig::report),

        Row("device", "backend", K::choice, U::both, "`\"auto\"`", "`\"auto\"` (the GPU if present, unless a stack job is estimated to finish sooner on the CPU: [Backends](architecture.md#backends)), `\"cpu\"`, `\"cuda\"` (an error if no GPU)")
            .names<BackendRequest>({{"gpu", "cuda"}, {"GPU", "cuda"}}).field(&C::device, &DeviceConfig::backend),
        Row("device", "gpu", K::integer, U::both, "`0`", "CUDA device index")
            .range(0, 1024).field(&C::device, &DeviceConfig::gpu),
        Row("device", "searchers", K::integer_or_auto, U::stack, "`\"auto\"`", "pair searchers at work at once, each on a host thread (and GPU stream) of its own; results do not depend on it; `\"auto\"`: on the CPU, a searcher for every n threads, n a thread per 16384 window pixels (a power of two, at least 2), at most a searcher per 4 pairs (1 above 2048^2 pixels a frame; a stretched series a quarter of the threads, at most 4); per GPU a quarter of the host's cores, at most 4")
            .range(1, 64)
            .with([](C& c, const Value& v) { c.device.searchers = v.is_string() ? std::optional<int>() : std::optional<int>(v.get<int>()); },
                  [](const C& c) { return c.device.searchers ? Value(*c.device.searchers) : Value("auto"); }),
        Row("device", "gpus", K::gpus, U::both, "unset", "batches and long series: spread the work over these GPUs (`\"all\"` or a list; a list of one: the GPU the job runs on)")
            .range(0, 1024)
            .with([](C& c, const Value& v) { c.device.gpus = v.is_string() ? std::vector<int>{-1} : v.get<std::vector<int>>(); },
                  [](const C& c) {
                      if (c.device.gpus == std::vector<int>{-1}) return Value("all");
                      return c.device.gpus.empty() ? Value(nullptr) : Value(c.device.gpus);
                  }),
    };
    return {rows.begin(), rows.end()};
}

std::string type_text(const KeySpec& k) {
    auto num = [](double v) {
        std::string s = std::to_string(v);
        s.erase(s.find_last_not_of('0') + 1);
        if (s.back() == '.') s.pop_back();
        return s;
    };
    const std::string range = num(k.lo) + ".." + num(k.hi);
    switch (k.type) {
        case K::string: case K::path: return "string";
        case K::boolean: return "bool";
        case K::integer: return k.hi >= kBig ? "int ≥ " + num(k.lo) : "int " + range;
        case K::number: return k.hi >= 1e6 ? "number ≥ " + num(k.lo) : "number " + range;
        case K::choice: {
            std::string s;
            for (const std::string& c : k.choices) s += (s.empty() ? "`\"" : " \\| `\"") + c + "\"`";
            return s;
        }
        case K::int_pair: case K::int_triple: return "`" + k.parts + "` ints";
        case K::number_triple: return "`" + k.parts + "` numbers";
        case K::int_list: return "int array";
        case K::angles: return "string or `{start, step}`";
        case K::reference: return "`\"middle\"` or int";
        case K::number_or_auto: return "`\"auto\"` or number " + range;
        case K::integer_or_auto: return "`\"auto\"` or int " + range;
        case K::gpus: return "`\"all\"` or int array";
        case K::bool_or_choice: {
            std::string s = "bool";
            for (const std::string& c : k.choices)
                if (c != k.if_true && c != k.if_false) s += " \\| `\"" + c + "\"`";
            return s;
        }
    }
    return "";
}

}  // namespace

const std::vector<KeySpec>& config_schema() {
    static const std::vector<KeySpec> schema = make_schema();
    return schema;
}

const KeySpec* find_key(const std::string& section, const std::string& name) {
    for (const KeySpec& k : config_schema())
        if (k.section == section && k.name == name) return &k;
    return nullptr;
}

std::vector<std::string> schema_sections() {
    std::vector<std::string> out;
    for (const KeySpec& k : config_schema())
        if (!k.section.empty() && std::find(out.begin(), out.end(), k.section) == out.end()) out.push_back(k.section);
    return out;
}

std::vector<std::string> section_keys(const std::string& section) {
    std::set<std::string> names;
    for (const KeySpec& k : config_schema())
        if (k.section == section) names.insert(k.name);
    return {names.begin(), names.end()};
}

std::string schema_markdown() {
    std::string out = "| key | type | default | used by | meaning |\n|---|---|---|---|---|\n";
    for (const KeySpec& k : config_schema()) {
        const char* used = k.used_by == UsedBy::both ? "both" : k.used_by == UsedBy::stack ? "stack" : "landmarks";
        out += "| `" + k.label() + "` | " + type_text(k) + " | " + k.default_text + " | " + used + " | " + k.doc + " |\n";
    }
    return out;
}

std::string describe_config(const Config& cfg) {
    std::string out;
    const UsedBy other = cfg.mode == Mode::stack ? UsedBy::landmarks : UsedBy::stack;
    for (const KeySpec& k : config_schema()) {
        if (k.used_by == other) continue;
        const Value v = k.get(cfg);
        out += "  " + k.label() + " = " + (v.is_null() ? "(" + k.default_text + ")" : v.dump()) + "\n";
    }
    return out;
}

nlohmann::ordered_json config_values(const Config& cfg) {
    nlohmann::ordered_json j;
    const UsedBy other = cfg.mode == Mode::stack ? UsedBy::landmarks : UsedBy::stack;
    for (const KeySpec& k : config_schema()) {
        if (k.used_by == other) continue;
        if (k.section.empty()) j[k.name] = k.get(cfg);
        else j[k.section][k.name] = k.get(cfg);
    }
    return j;
}

}  // namespace stackalign
