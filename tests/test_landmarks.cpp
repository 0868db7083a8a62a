// Landmark mode: point-file formats (round trips, malformed lines), the fit,
// and end to end on the real zebrafish volume moved by known transforms.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../kernels/cuda_api.hpp"
#include "../pipelines/landmarks.hpp"
#include "../src/core/error.hpp"
#include "../src/alignment/landmark_fit.hpp"
#include "../src/io/point_files.hpp"
#include "../src/io/tiff_io.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;

namespace {
const char* fish = "sample_data/fish1_pre_anatomy_41x83x166.tif";

// The volume resampled so that the content at p appears at R (p - c) + c + t
// (trilinear, outside = 0): the truth for the fit test.
RawFrame transformed(const RawFrame& v, double angle_deg, const Point3& t, const Point3& c) {
    const double a = angle_deg * M_PI / 180, ca = std::cos(a), sa = std::sin(a);
    RawFrame out = v;
    const auto* in = reinterpret_cast<const std::uint16_t*>(v.bytes.data());
    auto* o = reinterpret_cast<std::uint16_t*>(out.bytes.data());
    auto at = [&](int x, int y, int z) -> double {
        if (x < 0 || y < 0 || z < 0 || x >= v.width || y >= v.height || z >= v.depth) return 0;
        return in[(std::size_t(z) * v.height + y) * v.width + x];
    };
    for (int z = 0; z < v.depth; ++z)
        for (int y = 0; y < v.height; ++y)
            for (int x = 0; x < v.width; ++x) {
                // Inverse map: rotation about z through c.
                const double qx = x - t[0] - c[0], qy = y - t[1] - c[1], qz = z - t[2];
                const double sx = ca * qx + sa * qy + c[0], sy = -sa * qx + ca * qy + c[1], sz = qz;
                const int x0 = int(std::floor(sx)), y0 = int(std::floor(sy)), z0 = int(std::floor(sz));
                const double fx = sx - x0, fy = sy - y0, fz = sz - z0;
                double val = 0;
                for (int k = 0; k < 2; ++k)
                    for (int j = 0; j < 2; ++j)
                        for (int i = 0; i < 2; ++i)
                            val += (i ? fx : 1 - fx) * (j ? fy : 1 - fy) * (k ? fz : 1 - fz) * at(x0 + i, y0 + j, z0 + k);
                o[(std::size_t(z) * v.height + y) * v.width + x] = std::uint16_t(std::lround(val));
            }
    return out;
}

std::string landmark_config(const std::string& target, const std::string& extra_landmarks, const std::string& fit,
                            const std::string& backend = "cpu") {
    return "mode = \"landmarks\"\n[landmarks]\nsource = \"" + source_path(fish) + "\"\ntarget = \"" + target +
           "\"\npoints = \"" + source_path("sample_data/fish1_pre_landmarks.csv") + "\"\n" + extra_landmarks +
           "[preprocess]\nthreshold = 10.0\n[output]\ndir = \"out\"\nfit = \"" + fit + "\"\n[device]\nbackend = \"" +
           backend + "\"\n";
}

LandmarkResult run_in(const std::string& dir, const std::string& config) {
    write_text(dir + "/job.toml", config);
    RunOptions quiet;
    quiet.verbosity = Verbosity::quiet;
    return run_landmarks(load_config(dir + "/job.toml"), quiet);
}

}  // namespace

TEST_CASE("fit: exact affine and rigid transforms, outliers rejected") {
    std::vector<Point3> s, d;
    const double a = 0.2, c = std::cos(a), sn = std::sin(a);
    for (int i = 0; i < 12; ++i) {
        const Point3 p = {double(i % 3) * 10, double(i % 4) * 7, double(i % 5) * 3};
        s.push_back(p);
        d.push_back({c * p[0] - sn * p[1] + 5, sn * p[0] + c * p[1] - 2, p[2] + 1});
    }
    d[7][0] += 9;  // one bad match
    for (FitKind kind : {FitKind::rigid, FitKind::affine}) {
        CAPTURE(name_of(kind));
        const FitResult f = fit_landmarks(s, d, kind);
        CHECK(f.outlier[7]);
        CHECK(std::count(f.outlier.begin(), f.outlier.end(), true) == 1);
        CHECK(f.rms < 1e-6);
        CHECK(f.m[0][0] == doctest::Approx(c));
        CHECK(f.m[1][0] == doctest::Approx(sn));
        CHECK(f.m[0][3] == doctest::Approx(5));
        CHECK(f.m[2][3] == doctest::Approx(1));
    }
    // A match 0.3 off among exact ones: an outlier of the exact fit's 3
    // sigmas, not with the job's floor of half a voxel (fit_points).
    d[7][0] -= 9 - 0.3;
    CHECK(fit_landmarks(s, d, FitKind::rigid).outlier[7]);
    CHECK_FALSE(fit_landmarks(s, d, FitKind::rigid, 0.5).outlier[7]);
    const std::vector<Point3> flat = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0}, {2, 1, 0}};
    CHECK_THROWS_AS(fit_landmarks(flat, flat, FitKind::affine), FitError);
    CHECK_NOTHROW(fit_landmarks(flat, flat, FitKind::rigid));
    CHECK_THROWS_AS(fit_landmarks({{0, 0, 0}}, {{0, 0, 0}}, FitKind::rigid), FitError);
    const std::vector<Point3> line = {{0, 0, 0}, {1, 1, 1}, {3, 3, 3}, {4, 4, 4}};
    CHECK_THROWS_WITH_AS(fit_landmarks(line, line, FitKind::rigid), doctest::Contains("lie on one line"), FitError);
}

TEST_CASE("landmarks e2e: the real volume moved by a known integer shift is matched exactly") {
    const std::string dir = temp_dir("landmarks_shift");
    // Content moved by (+3, -2, +1): the crop starting at (-3, +2, -1), padded with zeros.
    const RawFrame& v = sample_volume(fish);
    RawFrame moved = v;
    std::fill(moved.bytes.begin(), moved.bytes.end(), 0);
    const std::size_t bpp = 2;
    for (int z = 0; z < v.depth; ++z)
        for (int y = 0; y < v.height; ++y)
            for (int x = 0; x < v.width; ++x) {
                const int sx = x - 3, sy = y + 2, sz = z - 1;
                if (sx < 0 || sy < 0 || sz < 0 || sx >= v.width || sy >= v.height || sz >= v.depth) continue;
                std::copy_n(&v.bytes[((std::size_t(sz) * v.height + sy) * v.width + sx) * bpp], bpp,
                            &moved.bytes[((std::size_t(z) * v.height + y) * v.width + x) * bpp]);
            }
    write_tiff_volume(dir + "/moved.tif", moved);
    const LandmarkResult r = run_in(dir, landmark_config(dir + "/moved.tif", "subpixel = false\n", "rigid"));
    REQUIRE(r.matches.size() == 24);
    int matched = 0;
    for (const LandmarkMatch& m : r.matches) {
        CAPTURE(m.name);
        REQUIRE(m.matched());  // points whose centred window would cross a border get a window moved inward
        ++matched;
        CHECK(m.dst[0] - m.src[0] == 3);
        CHECK(m.dst[1] - m.src[1] == -2);
        CHECK(m.dst[2] - m.src[2] == 1);
    }
    CHECK(matched == 24);
    REQUIRE(r.fit.fit);
    CHECK(r.fit.fit->rms < 1e-6);
    CHECK(r.fit.fit->m[0][3] == doctest::Approx(3));

    // Every output is there, readable, and run.json is complete.
    const auto csv = read_text(dir + "/out/matches.csv");
    CHECK(csv.rfind("name,src_x,src_y,src_z,dst_x,dst_y,dst_z,dx,dy,dz,mi,sharpness,confidence,status,fit_x,fit_y,fit_z,residual\n",
                    0) == 0);
    CHECK(std::count(csv.begin(), csv.end(), '\n') == 25);
    // The fit's place for every point, skipped ones included; a residual
    // only where there is a match.
    std::istringstream rows(csv);
    std::string row;
    std::getline(rows, row);
    int with_residual = 0;
    while (std::getline(rows, row)) {
        CAPTURE(row);
        std::vector<std::string> f;
        std::stringstream cells(row);
        for (std::string c; std::getline(cells, c, ',');) f.push_back(c);
        if (row.back() == ',') f.push_back("");
        REQUIRE(f.size() == 18);
        CHECK(std::stod(f[14]) - std::stod(f[1]) == doctest::Approx(3).epsilon(1e-6));
        CHECK(std::stod(f[15]) - std::stod(f[2]) == doctest::Approx(-2).epsilon(1e-6));
        CHECK(std::stod(f[16]) - std::stod(f[3]) == doctest::Approx(1).epsilon(1e-6));
        if (!f[17].empty()) {
            ++with_residual;
            CHECK(std::stod(f[17]) < 1e-6);
        }
    }
    CHECK(with_residual == matched);
    CHECK(parse_points(read_text(dir + "/out/matches.landmarkAscii"), "m.landmarkAscii").size() == std::size_t(matched));
    CHECK(parse_second_set(read_text(dir + "/out/matches_bigwarp.csv"), "b.csv").size() == std::size_t(matched));
    CHECK(read_text(dir + "/out/fit.txt").find("rigid fit") != std::string::npos);
    // The transform files hold target -> source (what ITK and transformix
    // resample with): identity matrix, translation (-3, +2, -1).
    auto parameters = [](const std::string& text, const std::string& key) {
        std::vector<double> v;
        std::istringstream in(text.substr(text.find(key) + key.size()));
        for (double x; v.size() < 12 && in >> x;) v.push_back(x);
        return v;
    };
    for (const auto& [file, key] : {std::pair<std::string, std::string>{"fit.tfm", "Parameters: "},
                                    {"fit_elastix.txt", "(TransformParameters "}}) {
        CAPTURE(file);
        const std::vector<double> p = parameters(read_text(dir + "/out/" + file), key);
        REQUIRE(p.size() == 12);
        for (int k = 0; k < 9; ++k) CHECK(p[k] == doctest::Approx(k % 4 == 0 ? 1.0 : 0.0).epsilon(1e-9));
        CHECK(p[9] == doctest::Approx(-3));
        CHECK(p[10] == doctest::Approx(2));
        CHECK(p[11] == doctest::Approx(-1));
    }
    CHECK(read_text(dir + "/out/fit_elastix.txt").find("(Size 166 83 41)") != std::string::npos);
    const auto j = nlohmann::json::parse(read_text(dir + "/out/run.json"));
    CHECK(j["points"]["matched"] == matched);
    CHECK(j["points"]["skipped"] == 24 - matched);
}

TEST_CASE("landmarks e2e: a known rotation + shift of the real volume is recovered by the affine fit") {
    const std::string dir = temp_dir("landmarks_affine");
    const RawFrame& v = sample_volume(fish);
    const Point3 centre = {83, 41, 0}, t = {2, -1.5, 1};
    const double angle = 3.0;
    write_tiff_volume(dir + "/moved.tif", transformed(v, angle, t, centre));
    const LandmarkResult r = run_in(dir, landmark_config(dir + "/moved.tif", "", "affine"));
    REQUIRE(r.fit.fit);
    // Truth for each point, then the fit's error at the points.
    const double a = angle * M_PI / 180;
    std::vector<double> err;
    for (const LandmarkMatch& m : r.matches) {
        const double qx = m.src[0] - centre[0], qy = m.src[1] - centre[1];
        const Point3 truth = {std::cos(a) * qx - std::sin(a) * qy + centre[0] + t[0],
                              std::sin(a) * qx + std::cos(a) * qy + centre[1] + t[1], m.src[2] + t[2]};
        const Point3 f = r.fit.fit->apply(m.src);
        err.push_back(std::hypot(f[0] - truth[0], f[1] - truth[1], f[2] - truth[2]));
    }
    std::sort(err.begin(), err.end());
    CHECK(err[err.size() / 2] < 1.0);
    CHECK(r.fit.fit->m[0][1] == doctest::Approx(-std::sin(a)).epsilon(0.02));
}

TEST_CASE("landmarks: a window is centred on its point, moved inward only where it or its search range would leave a volume") {
    VolumeInfo volume;
    volume.width = 100, volume.height = 80, volume.depth = 30;
    MiSearchParams p;
    p.window = {0, 0, 0, 21, 21, 11};
    p.max_shift = {8, 8, 4};
    // Inside: centred (even sizes would reach one further up), not moved.
    PointWindow w = place_window({50, 40, 15}, p, volume, volume);
    CHECK(w.skip.empty());
    CHECK(w.x == 40);
    CHECK(w.y == 30);
    CHECK(w.z == 10);
    CHECK(w.moved == std::array<int, 3>{0, 0, 0});
    // Near the low x and high z borders: moved just enough, the point still inside.
    w = place_window({12, 40, 24}, p, volume, volume);
    CHECK(w.skip.empty());
    CHECK(w.x == 8);    // the search range reaches x = 0
    CHECK(w.z == 15);   // 15 + 11 + 4 = 30
    CHECK(w.moved == std::array<int, 3>{6, 0, -4});
    CHECK(w.z + 10 >= 24);
    // The window cannot contain z = 27 and keep its range inside: skipped.
    CHECK(place_window({50, 40, 27}, p, volume, volume).skip.find("along z that contains z = 27") != std::string::npos);
    // No window containing the point fits: skipped, saying along which axis.
    w = place_window({3, 40, 15}, p, volume, volume);
    CHECK(w.skip.find("along x that contains x = 3") != std::string::npos);
    // The volume is too thin for the window and its range.
    VolumeInfo thin = volume;
    thin.depth = 15;
    w = place_window({50, 40, 7}, p, volume, thin);
    CHECK(w.skip.find("along z") != std::string::npos);
}

namespace {

struct AxisErrors {
    double mean[3] = {0, 0, 0}, mean_abs[3] = {0, 0, 0}, median[3] = {0, 0, 0};
    int n = 0;
};

// The real volume moved by Fourier phase ramps of (1 + f, -2 + f, 0.5 - f)
// voxels for fractions f over one voxel, every point matched with `subpixel`.
AxisErrors fractional_sweep(const std::string& dir, const std::string& subpixel, const std::string& extra = "") {
    AxisErrors e;
    std::vector<double> all[3];
    for (double f : {0.1, 0.35, 0.6, 0.85}) {
        const Point3 truth = {1 + f, -2 + f, 0.5 - f};
        write_tiff_volume(dir + "/moved.tif", fourier_shifted(sample_volume(fish), truth[0], truth[1], truth[2]));
        const LandmarkResult r = run_in(dir, landmark_config(dir + "/moved.tif", "subpixel = " + subpixel + "\n" + extra, "none"));
        for (const LandmarkMatch& m : r.matches) {
            if (!m.matched()) continue;
            for (int a = 0; a < 3; ++a) {
                const double err = m.dst[a] - m.src[a] - truth[a];
                e.mean[a] += err;
                e.mean_abs[a] += std::fabs(err);
                all[a].push_back(err);
            }
            ++e.n;
        }
    }
    for (int a = 0; a < 3; ++a) {
        e.mean[a] /= e.n, e.mean_abs[a] /= e.n;
        std::nth_element(all[a].begin(), all[a].begin() + all[a].size() / 2, all[a].end());
        e.median[a] = all[a][all[a].size() / 2];
    }
    return e;
}

}  // namespace

TEST_CASE("landmarks: the real volume moved by fractional shifts is matched within 0.03 voxel per axis, without sign bias") {
    const std::string dir = temp_dir("landmarks_fraction");
    const AxisErrors c = fractional_sweep(dir, "true"), p = fractional_sweep(dir, "\"parabola\"");
    MESSAGE("continuous: " << c.n << " matches; mean error x " << c.mean[0] << ", y " << c.mean[1] << ", z " << c.mean[2]
                           << "; mean |error| " << c.mean_abs[0] << ", " << c.mean_abs[1] << ", " << c.mean_abs[2]);
    MESSAGE("parabola:   mean error x " << p.mean[0] << ", y " << p.mean[1] << ", z " << p.mean[2] << "; mean |error| "
                                        << p.mean_abs[0] << ", " << p.mean_abs[1] << ", " << p.mean_abs[2]);
    CHECK(c.n >= 60);
    for (int a = 0; a < 3; ++a) {
        CAPTURE(a);
        CHECK(std::fabs(c.mean[a]) <= 0.03);
        CHECK(c.mean_abs[a] <= 0.05);
        CHECK(c.mean_abs[a] < p.mean_abs[a]);
    }
    // Even window sizes (centred one voxel further up) bring no bias: the
    // refined shift is the window's, wherever the point sits in it. The
    // median, because three points at the top of the volume (z = 31, little
    // structure) miss by up to 0.44 voxel in x with the smaller window and
    // carry the mean (-0.032 in x; the other 21 points: within 0.01).
    const AxisErrors even = fractional_sweep(dir, "true", "window = [20, 20, 10]\n");
    MESSAGE("continuous, window [20, 20, 10]: mean error x " << even.mean[0] << ", y " << even.mean[1] << ", z "
                                                             << even.mean[2] << "; median " << even.median[0] << ", "
                                                             << even.median[1] << ", " << even.median[2]);
    for (int a = 0; a < 3; ++a) CHECK(std::fabs(even.median[a]) <= 0.01);
}

TEST_CASE("landmarks: a fit that cannot be made is an error of its own (exit code 8); the matches are kept") {
    const std::string dir = temp_dir("landmarks_fit_error");
    // Two points: no rigid fit.
    write_text(dir + "/two.csv", "name,x,y,z\na,60,40,20\nb,100,40,20\n");
    std::string config = landmark_config(source_path(fish), "", "rigid");
    const std::string points = "points = \"" + source_path("sample_data/fish1_pre_landmarks.csv") + "\"";
    config.replace(config.find(points), points.size(), "points = \"two.csv\"");
    try {
        run_in(dir, config);
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(e.code() == ExitCode::fit);
        CHECK(int(e.code()) == 8);
        const std::string m = e.what();
        CHECK(m.find("rigid fit: needs at least 3 matched points, got 2") != std::string::npos);
        CHECK(m.find("2 points: 2 matched, 0 skipped") != std::string::npos);
    }
    CHECK(std::filesystem::exists(dir + "/out/matches.csv"));
    CHECK_FALSE(std::filesystem::exists(dir + "/out/fit.txt"));
    CHECK_FALSE(std::filesystem::exists(dir + "/out/run.json"));
}

namespace {

// RMS distance, over the sample points, between where `m` puts them and
// where the rotation about z through `centre` plus `t` does.
double error_at_points(const std::vector<LandmarkMatch>& matches, const Matrix34& m,
                       double angle_deg, const Point3& t, const Point3& centre) {
    const double a = angle_deg * M_PI / 180;
    double sum2 = 0;
    for (const LandmarkMatch& p : matches) {
        const double qx = p.src[0] - centre[0], qy = p.src[1] - centre[1];
        const Point3 truth = {std::cos(a) * qx - std::sin(a) * qy + centre[0] + t[0],
                              std::sin(a) * qx + std::cos(a) * qy + centre[1] + t[1], p.src[2] + t[2]};
        double d2 = 0;
        for (int r = 0; r < 3; ++r) {
            const double got = m[r][0] * p.src[0] + m[r][1] * p.src[1] + m[r][2] * p.src[2] + m[r][3];
            d2 += (got - truth[r]) * (got - truth[r]);
        }
        sum2 += d2;
    }
    return std::sqrt(sum2 / double(matches.size()));
}

}  // namespace

TEST_CASE("landmarks: refine = \"global\" brings a rigid fit closer to the known motion of the real volume") {
    const std::string dir = temp_dir("landmarks_global");
    const Point3 centre = {83, 41, 0}, t = {2, -1.5, 1};
    const double angle = 3.0;
    write_tiff_volume(dir + "/moved.tif", transformed(sample_volume(fish), angle, t, centre));
    const LandmarkResult fit_only = run_in(dir, landmark_config(dir + "/moved.tif", "", "rigid"));
    const LandmarkResult global = run_in(dir, landmark_config(dir + "/moved.tif", "refine = \"global\"\n", "rigid"));
    REQUIRE(fit_only.fit.fit);
    REQUIRE(global.fit.fit);
    REQUIRE(global.refinement);
    const double before = error_at_points(fit_only.matches, fit_only.fit.fit->m, angle, t, centre);
    const double after = error_at_points(global.matches, global.fit.fit->m, angle, t, centre);
    MESSAGE("rigid fit: RMS error at the points " << before << " voxel; refined globally " << after << " (MI "
                                                  << global.refinement->mi_start << " -> " << global.refinement->mi_end << ")");
    CHECK(global.refinement->mi_end > global.refinement->mi_start);
    CHECK(after < before);
    CHECK(after < 0.05);
    // The fitted positions and the report come from the refined transform.
    const std::string csv = read_text(dir + "/out/matches.csv");
    const Point3 f = global.fit.fit->apply(global.matches[0].src);
    CHECK(csv.find(format_number(f[0]) + "," + format_number(f[1]) + "," + format_number(f[2])) != std::string::npos);
    CHECK(read_text(dir + "/out/fit.txt").find("refined globally") != std::string::npos);
    CHECK(nlohmann::json::parse(read_text(dir + "/out/run.json"))["fit"].contains("global_refinement"));
}

TEST_CASE("landmarks: refine = \"global\" on the CUDA backend gives the CPU's transform exactly") {
    if (skip_without_gpu()) return;
    const std::string dir = temp_dir("landmarks_global_cuda");
    write_tiff_volume(dir + "/moved.tif", transformed(sample_volume(fish), 2.0, {1.5, -1, 0.5}, {83, 41, 0}));
    std::vector<LandmarkResult> r;
    for (const char* backend : {"cpu", "cuda"})
        r.push_back(run_in(dir, landmark_config(dir + "/moved.tif", "refine = \"global\"\n", "affine", backend)));
    REQUIRE(r[0].refinement);
    REQUIRE(r[1].refinement);
    CHECK(r[1].refinement->mi_end == r[0].refinement->mi_end);
    CHECK(r[1].refinement->batches == r[0].refinement->batches);
    for (int row = 0; row < 3; ++row)
        for (int c = 0; c < 4; ++c) CHECK(r[1].fit.fit->m[row][c] == r[0].fit.fit->m[row][c]);
}

TEST_CASE("landmarks: config errors point at the key") {
    const std::string dir = temp_dir("landmarks_config");
    write_text(dir + "/a.toml", "mode = \"landmarks\"\n[landmarks]\nsource = \"s.tif\"\ntarget = \"t.tif\"\n"
                                "points = \"p.csv\"\nwindow = [21, 21]\n");
    CHECK_THROWS_WITH_AS(load_config(dir + "/a.toml"),
                         (dir + "/a.toml:6: [landmarks] window: expected an array of three integers [x, y, z]").c_str(),
                         ConfigError);
    write_text(dir + "/b.toml", "mode = \"landmarks\"\n[landmarks]\nsource = \"s.tif\"\ntarget = \"t.tif\"\n"
                                "points = \"p.csv\"\n[search]\nmax_shift = 4\n");
    CHECK_THROWS_WITH_AS(load_config(dir + "/b.toml"),
                         (dir + "/b.toml:7: [search] max_shift: not used with mode = \"landmarks\"; landmark runs are "
                                "set up in [landmarks]").c_str(),
                         ConfigError);
    write_text(dir + "/c.toml", "[input]\nstack = \"s.tif\"\n[output]\nfit = \"affine\"\n");
    CHECK_THROWS_WITH_AS(load_config(dir + "/c.toml"),
                         (dir + "/c.toml:4: [output] fit: only used with mode = \"landmarks\" (this config has mode = "
                                "\"stack\")").c_str(),
                         ConfigError);
    write_text(dir + "/d.toml", "mode = \"landmarks\"\n[landmarks]\nsource = \"s.tif\"\ntarget = \"t.tif\"\n");
    CHECK_THROWS_AS(load_config(dir + "/d.toml"), ConfigError);
    // A global refinement needs a fit to refine.
    std::string config = landmark_config(source_path(fish), "refine = \"global\"\n", "none");
    write_text(dir + "/e.toml", config);
    RunOptions quiet;
    quiet.verbosity = Verbosity::quiet;
    CHECK_THROWS_WITH_AS(plan_landmarks(load_config(dir + "/e.toml"), quiet),
                         doctest::Contains("[landmarks] refine: refine = \"global\" refines the fit; set [output] fit"),
                         ConfigError);
}

TEST_CASE("landmarks: the CUDA backend matches every point as the CPU does, refined positions identical") {
    if (skip_without_gpu()) return;
    const std::string dir = temp_dir("landmarks_cuda");
    std::vector<LandmarkResult> results;
    for (const char* backend : {"cpu", "cuda"}) {
        std::string cfg = sample_config("sample_landmarks", "out_" + std::string(backend));
        cfg.replace(cfg.find("backend = \"auto\""), 16, "backend = \"" + std::string(backend) + "\"");
        results.push_back(run_in(dir, cfg));
    }
    const LandmarkResult &c = results[0], &g = results[1];
    CHECK(g.backend_description.rfind("cuda", 0) == 0);
    REQUIRE(g.matches.size() == c.matches.size());
    for (std::size_t i = 0; i < c.matches.size(); ++i) {
        CAPTURE(c.matches[i].name);
        CHECK(g.matches[i].status == c.matches[i].status);
        CHECK(g.matches[i].peak == c.matches[i].peak);
        CHECK(g.matches[i].mi == doctest::Approx(c.matches[i].mi).epsilon(1e-6));
        CHECK(g.matches[i].confidence == doctest::Approx(c.matches[i].confidence).epsilon(1e-6));
        CHECK(g.matches[i].window_moved == c.matches[i].window_moved);
        // Continuous 3D refinement (the sample config's default): fixed-point
        // Parzen histograms, so the same refined positions bit for bit.
        for (int k = 0; k < 3; ++k) CHECK(g.matches[i].dst[k] == c.matches[i].dst[k]);
    }

    // One GPU named by `gpus` is the GPU the job runs on (it ran on [device] gpu's, 0, before).
    if (cuda::device_count() < 2) return;
    std::string second = sample_config("sample_landmarks", "out_second");
    second.replace(second.find("backend = \"auto\""), 16, "backend = \"cuda\"\ngpus = [1]");
    const LandmarkResult s = run_in(dir, second);
    CHECK(s.backend_description.rfind("cuda (GPU 1:", 0) == 0);
    REQUIRE(s.matches.size() == g.matches.size());
    for (std::size_t i = 0; i < g.matches.size(); ++i)
        for (int k = 0; k < 3; ++k) CHECK(s.matches[i].dst[k] == g.matches[i].dst[k]);
}

TEST_CASE("landmarks: raw matches of the real volume turned and moved: median error 0.127 voxel, NCC where linear (MI 0.214)") {
    // bench/landmark_raw.py's window and range; one of its motions (bilinear here).
    const std::string dir = temp_dir("landmarks_raw");
    const Point3 centre = {83, 41, 0}, t = {2, -1.5, 1};
    const double angle = 3.0, a = angle * M_PI / 180;
    write_tiff_volume(dir + "/moved.tif", transformed(sample_volume(fish), angle, t, centre));
    auto median_error = [&](const std::string& keys) {
        const LandmarkResult r =
            run_in(dir, landmark_config(dir + "/moved.tif", "window = [15, 15, 9]\nmax_shift = [8, 8, 7]\n" + keys, "none"));
        std::vector<double> err;
        for (const LandmarkMatch& m : r.matches) {
            CHECK(m.status == "ok");
            CHECK(m.confidence > 0.6);
            const double qx = m.src[0] - centre[0], qy = m.src[1] - centre[1];
            const Point3 truth = {std::cos(a) * qx - std::sin(a) * qy + centre[0] + t[0],
                                  std::sin(a) * qx + std::cos(a) * qy + centre[1] + t[1], m.src[2] + t[2]};
            err.push_back(std::hypot(m.dst[0] - truth[0], m.dst[1] - truth[1], m.dst[2] - truth[2]));
        }
        std::sort(err.begin(), err.end());
        return err[err.size() / 2];
    };
    const double automatic = median_error(""), mi = median_error("[search]\nrefine_metric = \"mi\"\n");
    MESSAGE("raw median error: auto " << automatic << ", mi " << mi);
    // 0.127 against MI's 0.214 measured: the bilinear resampling here blurs
    // the target (bench/landmark_raw.py's cubic motions: 0.104 against 0.173).
    CHECK(automatic <= 0.14);
    CHECK(automatic < 0.7 * mi);
}

TEST_CASE("landmarks: a target whose matching content lies beyond the search range leaves its points ambiguous") {
    // The volume moved by 30 voxels in x (beyond max_shift 8): every window
    // still meets brain tissue in the range, none of it its own.
    const std::string dir = temp_dir("landmarks_ambiguous");
    write_tiff_volume(dir + "/moved.tif", transformed(sample_volume(fish), 0, {30, 0, 0}, {0, 0, 0}));
    const LandmarkResult r = run_in(dir, landmark_config(dir + "/moved.tif", "", "none"));
    int ambiguous = 0, searched = 0;
    for (const LandmarkMatch& m : r.matches)
        if (m.matched()) ++searched, ambiguous += m.status == "ambiguous";
    MESSAGE(ambiguous << " of " << searched << " ambiguous");
    CHECK(searched >= 12);
    CHECK(ambiguous >= 0.9 * searched);
}
