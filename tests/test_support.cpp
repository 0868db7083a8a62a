#include "test_support.hpp"

#include <cstdlib>
#include <sys/wait.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <functional>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <mutex>
#include <type_traits>
#include <sstream>

#include <unsupported/Eigen/FFT>

#include "../kernels/cuda_api.hpp"
#include "../pipelines/stack.hpp"
#include "../src/config/config.hpp"
#include "../pipelines/stages/search_pairs.hpp"
#include "../src/io/tiff_io.hpp"
#include "../src/io/tilt_angles.hpp"
#include "../src/alignment/tilt_geometry.hpp"

namespace fs = std::filesystem;
using namespace stackalign;

namespace test_support {

std::string source_path(const std::string& relative) { return std::string(STACKALIGN_SOURCE_DIR) + "/" + relative; }
std::string cli_path() { return std::string(STACKALIGN_BUILD_DIR) + "/stackalign"; }

int run_cli(const std::string& args) {
    const int rc = std::system((cli_path() + " " + args + " >/dev/null 2>&1").c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

nlohmann::json run_stack_job(const std::string& dir, const std::vector<RawFrame>& frames, const std::string& extra) {
    write_tiff_stack(dir + "/s.tif", frames);
    write_text(dir + "/job.toml", "[input]\nstack = \"s.tif\"\n[search]\n" + extra +
                                      "\n[output]\ndir = \"out\"\nreport = false\naligned = false\n[device]\nbackend = "
                                      "\"cpu\"\nsearchers = 1\n");
    RunOptions quiet;
    quiet.verbosity = Verbosity::quiet;
    run_stack(load_config(dir + "/job.toml"), quiet);
    return nlohmann::json::parse(read_text(dir + "/out/run.json"));
}

StackResult run_quiet(const std::string& dir, const std::string& config) {
    write_text(dir + "/job.toml", config);
    RunOptions quiet;
    quiet.verbosity = Verbosity::quiet;
    quiet.backend = BackendRequest::cpu;
    return run_stack(load_config(dir + "/job.toml"), quiet);
}

std::string temp_dir(const std::string& name) {
    const fs::path p = fs::path(STACKALIGN_BUILD_DIR) / "test-tmp" / name;
    fs::remove_all(p);
    fs::create_directories(p);
    return p.string();
}

const RawFrame& sample_frame(const char* relative, int index) {
    static std::map<std::string, Stack> cache;
    static std::mutex m;
    std::lock_guard<std::mutex> lock(m);
    auto it = cache.find(relative);
    if (it == cache.end()) it = cache.emplace(relative, read_tiff_stack(source_path(relative))).first;
    return it->second.frames.at(index);
}

RawFrame frame_of(PixelType type, int w, int h, const std::vector<double>& values) {
    RawFrame out;
    out.type = type;
    out.width = w;
    out.height = h;
    out.bytes.resize(std::size_t(w) * h * bytes_per_pixel(type));
    visit_pixels(out, [&](auto* p) {
        using T = std::remove_pointer_t<decltype(p)>;
        for (std::size_t i = 0; i < values.size() && i < std::size_t(w) * h; ++i) p[i] = T(values[i]);
    });
    return out;
}

RawFrame crop(const RawFrame& f, int x, int y, int w, int h) {
    RawFrame out;
    out.type = f.type;
    out.width = w;
    out.height = h;
    const std::size_t bpp = bytes_per_pixel(f.type);
    out.bytes.resize(std::size_t(w) * h * bpp);
    for (int r = 0; r < h; ++r)
        std::copy_n(&f.bytes[(std::size_t(y + r) * f.width + x) * bpp], w * bpp, &out.bytes[std::size_t(r) * w * bpp]);
    return out;
}

const RawFrame& sample_volume(const char* relative) {
    static std::map<std::string, RawFrame> cache;
    static std::mutex m;
    std::lock_guard<std::mutex> lock(m);
    auto it = cache.find(relative);
    if (it == cache.end()) it = cache.emplace(relative, read_tiff_volume(source_path(relative))).first;
    return it->second;
}

RawFrame crop_volume(const RawFrame& v, int x, int y, int z, int w, int h, int d) {
    RawFrame out;
    out.type = v.type;
    out.width = w;
    out.height = h;
    out.depth = d;
    const std::size_t bpp = bytes_per_pixel(v.type);
    out.bytes.resize(std::size_t(w) * h * d * bpp);
    for (int k = 0; k < d; ++k)
        for (int r = 0; r < h; ++r)
            std::copy_n(&v.bytes[((std::size_t(z + k) * v.height + y + r) * v.width + x) * bpp], w * bpp,
                        &out.bytes[(std::size_t(k) * h + r) * w * bpp]);
    return out;
}

namespace {
// The test case running (test_case_started counts them), and per reason
// the test cases that skipped for it: a case that skips twice is one case.
int current_case = 0;
std::map<std::string, std::set<int>> skipped;
}

void test_case_started() { ++current_case; }

void skip_test(const std::string& reason) {
    skipped[reason].insert(current_case);
    MESSAGE("skipped: " << reason);
}

bool skip_without_gpu() {
    if (cuda::device_count() > 0) return false;
    skip_test("no CUDA device");
    return true;
}

int skipped_count() {
    std::set<int> cases;
    for (const auto& [reason, which] : skipped) cases.insert(which.begin(), which.end());
    return int(cases.size());
}

std::string skipped_reasons() {
    std::string out;
    for (const auto& [reason, which] : skipped)
        out += (out.empty() ? "" : "; ") + std::to_string(which.size()) + " " + reason;
    return out;
}

double gauge_free_rms(const std::vector<double>& across, const std::vector<double>& along,
                      const std::vector<double>& angles_deg) {
    const std::vector<double> x = stackalign::less_object_place(across, angles_deg);
    double mean_along = 0;
    for (double v : along) mean_along += v / double(along.size());
    double squares = 0;
    for (std::size_t k = 0; k < x.size(); ++k) squares += x[k] * x[k] + (along[k] - mean_along) * (along[k] - mean_along);
    return std::sqrt(squares / double(across.size()));
}

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
}

std::string sample_config(const std::string& name, const std::string& out_dir) {
    std::string cfg = read_text(source_path("configs/" + name + ".toml"));
    for (std::size_t p; (p = cfg.find("../sample_data")) != std::string::npos;)
        cfg.replace(p, 14, source_path("sample_data"));
    const std::string out = "\"../out/" + name + "\"";
    if (!out_dir.empty()) cfg.replace(cfg.find(out), out.size(), "\"" + out_dir + "\"");
    return cfg;
}

std::string sample_tilt_within_slab_range(const std::string& cfg, const std::string& dir) {
    const std::string stack = source_path("sample_data/haadf_tilt_91x64x64.tif");
    const std::string angles = source_path("sample_data/haadf_tilt_91x64x64.tlt");
    const std::vector<double> tilts = read_tilt_angles(angles);
    std::vector<RawFrame> views;
    std::ostringstream kept;
    for (std::size_t v = 0; v < tilts.size(); ++v) {
        if (std::fabs(tilts[v]) > 80) continue;
        views.push_back(sample_frame("sample_data/haadf_tilt_91x64x64.tif", int(v)));
        kept << tilts[v] << "\n";
    }
    REQUIRE(views.size() == 81);
    write_tiff_stack(dir + "/within_80.tif", views);
    write_text(dir + "/within_80.tlt", kept.str());
    std::string out = cfg;
    for (const auto& [from, to] : {std::pair{stack, dir + "/within_80.tif"}, std::pair{angles, dir + "/within_80.tlt"}}) {
        const std::size_t at = out.find(from);
        REQUIRE(at != std::string::npos);
        out.replace(at, from.size(), to);
    }
    return out;
}

stackalign::BinImage bins_from(const std::vector<int>& v, int w) {
    stackalign::BinImage im(w, int(v.size()) / w);
    for (std::size_t i = 0; i < v.size(); ++i) im.pixels[i] = std::uint8_t(v[i]);
    return im;
}

std::vector<int> random_bins(std::mt19937& rng, int n, int bins, double zero_fraction) {
    std::vector<int> v(n);
    for (int& x : v)
        x = std::uniform_real_distribution<>(0, 1)(rng) < zero_fraction ? 0 : std::uniform_int_distribution<>(0, bins - 1)(rng);
    return v;
}

namespace {
// Every row (axis 0) or column (axis 1) k of `img` moved along itself by
// amount(k) pixels, by a phase ramp.
void fourier_shear(std::vector<double>& img, int w, int h, int axis, const std::function<double(int)>& amount) {
    Eigen::FFT<double> fft;
    const int n = axis == 0 ? w : h, lines = axis == 0 ? h : w;
    std::vector<std::complex<double>> line(n), spec;
    std::vector<double> real(n);
    for (int l = 0; l < lines; ++l) {
        auto at = [&](int i) -> double& { return axis == 0 ? img[std::size_t(l) * w + i] : img[std::size_t(i) * w + l]; };
        for (int i = 0; i < n; ++i) line[i] = at(i);
        fft.fwd(spec, line);
        const double s = amount(l);
        for (int k = 0; k < n; ++k) {
            // The Nyquist term of an even length gets the real part of its ramp, so the result stays real.
            const double f = double(k < (n + 1) / 2 ? k : k - n) / n;
            spec[k] *= (n % 2 == 0 && k == n / 2) ? std::complex<double>(std::cos(M_PI * s), 0) : std::polar(1.0, -2 * M_PI * f * s);
        }
        fft.inv(line, spec);
        for (int i = 0; i < n; ++i) at(i) = line[i].real();
    }
}
}  // namespace

RawFrame fourier_rotated(const RawFrame& frame, double angle_deg, double dx, double dy) {
    const int w = frame.width, h = frame.height;
    const ImageF in = frame.to_float();
    std::vector<double> img(in.pixels.begin(), in.pixels.end());
    const double a = angle_deg * M_PI / 180, t = -std::tan(a / 2), s = std::sin(a);
    const double cx = (w - 1) / 2.0, cy = (h - 1) / 2.0;
    // R = Sx(t) Sy(s) Sx(t): content at (x, y) moves by t (y - cy) in x, then s (x - cx) in y, then t (y - cy) in x.
    fourier_shear(img, w, h, 0, [&](int y) { return t * (y - cy); });
    fourier_shear(img, w, h, 1, [&](int x) { return s * (x - cx); });
    fourier_shear(img, w, h, 0, [&](int y) { return t * (y - cy) + dx; });
    fourier_shear(img, w, h, 1, [&](int) { return dy; });
    RawFrame out{PixelType::f32, w, h, 1, std::vector<unsigned char>(img.size() * 4)};
    float* px = reinterpret_cast<float*>(out.bytes.data());
    for (std::size_t i = 0; i < img.size(); ++i) px[i] = float(img[i]);
    return out;
}

RawFrame fourier_shifted(const RawFrame& frame, double dx, double dy, double dz) {
    const int w = frame.width, h = frame.height, d = frame.depth;
    const ImageF in = frame.to_float();
    std::vector<std::complex<double>> data(in.pixels.begin(), in.pixels.end());
    Eigen::FFT<double> fft;
    std::vector<std::complex<double>> line, out;
    // Every line along `axis` (stride `step`, `n` samples) transformed in place.
    auto transform = [&](int axis, bool inverse) {
        const long long step = axis == 0 ? 1 : axis == 1 ? w : (long long)(w) * h;
        const int n = axis == 0 ? w : axis == 1 ? h : d;
        if (n < 2) return;
        for (long long l = 0; l < (long long)(data.size()) / n; ++l) {
            const long long first = axis == 0 ? l * w : axis == 1 ? (l / w) * (long long)(w) * h + l % w : l;
            line.resize(n);
            for (int i = 0; i < n; ++i) line[i] = data[first + i * step];
            inverse ? fft.inv(out, line) : fft.fwd(out, line);
            for (int i = 0; i < n; ++i) data[first + i * step] = out[i];
        }
    };
    for (int axis = 0; axis < 3; ++axis) transform(axis, false);
    auto freq = [](int k, int n) { return double(k < (n + 1) / 2 ? k : k - n) / n; };
    for (int z = 0; z < d; ++z)
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x)
                data[(std::size_t(z) * h + y) * w + x] *=
                    std::polar(1.0, -2 * M_PI * (freq(x, w) * dx + freq(y, h) * dy + (d > 1 ? freq(z, d) * dz : 0.0)));
    for (int axis = 2; axis >= 0; --axis) transform(axis, true);
    RawFrame shifted{PixelType::f32, w, h, d, std::vector<unsigned char>(data.size() * 4)};
    float* px = reinterpret_cast<float*>(shifted.bytes.data());
    for (std::size_t i = 0; i < data.size(); ++i) px[i] = float(data[i].real());
    return shifted;
}

void check_same_pair_result(const stackalign::PairResult& a, const stackalign::PairResult& b) {
    CHECK(a.ref == b.ref);
    CHECK(a.mov == b.mov);
    CHECK(a.peak.dx == b.peak.dx);
    CHECK(a.peak.dy == b.peak.dy);
    CHECK(a.peak.mi == b.peak.mi);
    CHECK(a.peak.sharpness() == b.peak.sharpness());
    CHECK(a.stretch == b.stretch);
    CHECK(a.measured.dx == b.measured.dx);
    CHECK(a.measured.dy == b.measured.dy);
    CHECK(a.shift.dx == b.shift.dx);
    CHECK(a.shift.dy == b.shift.dy);
    CHECK(a.off_prediction == b.off_prediction);
    CHECK(a.refined == b.refined);
}

void check_same_pair_results(const std::vector<stackalign::PairResult>& a, const std::vector<stackalign::PairResult>& b) {
    REQUIRE(a.size() == b.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
        CAPTURE(k);
        check_same_pair_result(a[k], b[k]);
    }
}

// A parallel projection of the volume's slices at `deg` about the y axis
// through the volume's centre onto a detector `detector` pixels wide (0: the
// volume's width), centred, with the view moved by (jx, jy): the line
// integral sampled every half voxel along the ray, trilinear (not the
// kernels' geometry: an independent projector).
stackalign::RawFrame project_volume(const stackalign::RawFrame& volume, double deg, double jx, double jy, int detector) {
    using namespace stackalign;
    const ImageF v = volume.to_float();
    const int nx = v.width, ny = v.height, nz = v.depth, nu = detector > 0 ? detector : nx;
    const double cu = (nu - 1) / 2.0, cx = (nx - 1) / 2.0, cz = (nz - 1) / 2.0, c = std::cos(deg * M_PI / 180), s = std::sin(deg * M_PI / 180);
    auto at = [&](double x, double y, double z) {
        if (x < 0 || y < 0 || z < 0 || x > nx - 1 || y > ny - 1 || z > nz - 1) return 0.0;
        const int x0 = std::min(int(x), nx - 2), y0 = std::min(int(y), ny - 2), z0 = std::min(int(z), nz - 2);
        const double fx = x - x0, fy = y - y0, fz = z - z0;
        double sum = 0;
        for (int k = 0; k < 8; ++k) {
            const int dx = k & 1, dy = (k >> 1) & 1, dz = k >> 2;
            sum += (dx ? fx : 1 - fx) * (dy ? fy : 1 - fy) * (dz ? fz : 1 - fz) * v.at(x0 + dx, y0 + dy, z0 + dz);
        }
        return sum;
    };
    RawFrame out;
    out.type = PixelType::f32;
    out.width = nu;
    out.height = ny;
    out.bytes.resize(std::size_t(nu) * ny * 4);
    auto* px = reinterpret_cast<float*>(out.bytes.data());
    const double reach = std::hypot(double(nx), double(nz)) / 2 + 1;
#pragma omp parallel for schedule(static)
    for (int y = 0; y < ny; ++y)
        for (int u = 0; u < nu; ++u) {
            const double d = u - cu - jx;
            double sum = 0;
            for (double t = -reach; t <= reach; t += 0.5) sum += at(cx + d * c - t * s, y - jy, cz + d * s + t * c);
            px[std::size_t(y) * nu + u] = float(0.5 * sum);
        }
    return out;
}


}  // namespace test_support
