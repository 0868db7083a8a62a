// The Python module: stackalign from numpy arrays. It runs the CLI's own
// pipelines (the same library, no second copy of any stage): a stack's
// array is the job's series in memory, its aligned frames come back into
// an array as they are made, and landmark volumes and points are the job's
// inputs in memory too; the keywords become the job's config through the
// one schema (a keyword is exactly a TOML key), and the results come back as
// arrays. Errors keep the CLI's
// messages: ValueError for bad values and inputs, TypeError for a dtype the
// pipeline does not read, KeyboardInterrupt for Ctrl-C.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <variant>

#include "../pipelines/batch.hpp"
#include "../pipelines/landmarks.hpp"
#include "../pipelines/plan/output_guard.hpp"
#include "../pipelines/stack.hpp"
#include "../src/alignment/motion.hpp"
#include "../src/config/config_reader.hpp"
#include "../src/config/schema.hpp"
#include "../src/core/atomic_file.hpp"
#include "../src/core/error.hpp"
#include "../src/core/interrupt.hpp"
#include "../src/core/progress.hpp"
#include "../src/core/version.hpp"
#include "../src/io/mrc_io.hpp"
#include "../src/io/point_files.hpp"
#include "../src/io/stack_io.hpp"
#include "../src/io/tiff_io.hpp"
#include "arrays.hpp"

// pybind11 supports Python 3.12 from 2.11 on; a build error says so
// instead of whatever an older one would do at run time. (The crash in
// align_stack once put down to Debian's 2.10 on the GPU machine's Python
// 3.12 was a second libstdc++ in the module: see the Makefile.)
#if PY_VERSION_HEX >= 0x030C0000 && PYBIND11_VERSION_MAJOR == 2 && PYBIND11_VERSION_MINOR < 11
#error "Python 3.12 or newer needs pybind11 2.11 or newer (Debian bookworm's pybind11 2.10 goes with its Python 3.11)"
#endif

namespace py = pybind11;
namespace fs = std::filesystem;
using namespace stackalign;
using namespace stackalign::python;

namespace {

// ---- keywords -> the job's config -----------------------------------------------
// Each keyword becomes a typed TOML value (no text is written or parsed) and
// the table goes through the config reader, so a keyword is checked by the
// one schema exactly as the key in a file, and its message names the key.

using TomlValue = std::variant<bool, std::int64_t, double, std::string, toml::array, toml::table>;

TomlValue toml_of(const py::handle& v, const std::string& key) {
    // numpy scalars and arrays: as the Python values they hold.
    if (py::hasattr(v, "dtype") && py::hasattr(v, "tolist")) return toml_of(v.attr("tolist")(), key);
    if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
    if (py::isinstance<py::int_>(v)) return std::int64_t(v.cast<long long>());
    if (py::isinstance<py::float_>(v)) return v.cast<double>();
    if (py::isinstance<py::str>(v)) return v.cast<std::string>();
    if (py::isinstance<py::dict>(v)) {
        toml::table t;
        for (const auto& item : v.cast<py::dict>())
            std::visit([&](auto&& x) { t.insert_or_assign(py::str(item.first).cast<std::string>(), std::move(x)); },
                       toml_of(item.second, key));
        return t;
    }
    if (py::isinstance<py::sequence>(v)) {
        toml::array a;
        for (const auto& item : v.cast<py::list>()) std::visit([&](auto&& x) { a.push_back(std::move(x)); }, toml_of(item, key));
        return a;
    }
    throw py::type_error(key + ": a " + std::string(py::str(v.get_type().attr("__name__"))) +
                         " cannot be a config value (expected bool, int, float, str, a list of them, or a dict)");
}

void put(toml::table& root, const KeySpec& k, TomlValue v) {
    toml::table* into = &root;
    if (!k.section.empty()) {
        if (!root.contains(k.section)) root.insert(k.section, toml::table{});
        into = root.get_as<toml::table>(k.section);
    }
    std::visit([&](auto&& x) { into->insert_or_assign(k.name, std::move(x)); }, std::move(v));
}

// The keys of one mode by name; keys the module sets itself are left out.
std::map<std::string, const KeySpec*> keys_of(UsedBy mode, const std::vector<std::string>& reserved) {
    std::map<std::string, const KeySpec*> out;
    for (const KeySpec& k : config_schema()) {
        if (k.section.empty() || k.used_by == (mode == UsedBy::stack ? UsedBy::landmarks : UsedBy::stack)) continue;
        if (std::find(reserved.begin(), reserved.end(), k.key()) != reserved.end()) continue;
        out[k.name] = &k;
    }
    return out;
}

struct Job {
    fs::path dir;    // temporary folder: outputs not kept, angles given as numbers
    fs::path out;    // outputs: `dir`/out, or the `dir` keyword's folder
    bool keep_out = false;
    Job() {
        std::string pattern = (fs::temp_directory_path() / "stackalign-py-XXXXXX").string();
        if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot make a temporary folder in " + fs::temp_directory_path().string());
        dir = pattern;
        out = dir / "out";
    }
    ~Job() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
};

// The job's config: `fixed` (keys the module sets) unless a keyword gives
// them, then the keywords; unknown keywords: ValueError with the nearest
// valid one. Relative paths are the caller's (the working directory's).
Config job_config(Job& job, UsedBy mode, const py::kwargs& keys, std::map<std::string, TomlValue> fixed,
                  const std::vector<std::string>& reserved) {
    const auto valid = keys_of(mode, reserved);
    toml::table root;
    root.insert("mode", mode == UsedBy::stack ? "stack" : "landmarks");
    for (const auto& item : keys) {
        const std::string name = item.first.cast<std::string>();
        const auto it = valid.find(name);
        if (it == valid.end()) {
            std::vector<std::string> names;
            for (const auto& v : valid) names.push_back(v.first);
            const std::string hint = nearest_word(name, names);
            for (const std::string& r : reserved)
                if (r.substr(r.find('.') + 1) == name)
                    throw py::value_error(name + ": set by the module from its arguments, not a keyword here");
            throw py::value_error("unknown keyword '" + name + "'" + (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
                                  " (keywords are the TOML keys of `stackalign keys`)");
        }
        const KeySpec& k = *it->second;
        py::object value = py::reinterpret_borrow<py::object>(item.second);
        if (k.key() == "output.dir") {
            job.out = fs::absolute(value.cast<std::string>());
            job.keep_out = true;
        }
        // Tilt angles as numbers: written as the .tlt file the key names.
        if (k.type == KeyType::angles && (py::isinstance<py::sequence>(value) || py::hasattr(value, "tolist")) &&
            !py::isinstance<py::str>(value)) {
            if (py::hasattr(value, "tolist")) value = value.attr("tolist")();
            std::ofstream tlt(job.dir / "angles.tlt");
            tlt.precision(17);
            for (const auto& a : value.cast<py::list>()) tlt << a.cast<double>() << "\n";
            value = py::str((job.dir / "angles.tlt").string());
        }
        put(root, k, toml_of(value, name));
        fixed.erase(k.key());
    }
    for (auto& [key, value] : fixed) {
        const std::size_t dot = key.find('.');
        put(root, *find_key(key.substr(0, dot), key.substr(dot + 1)), std::move(value));
    }
    try {
        return config_from_table(root, "", fs::current_path().string());
    } catch (const Error& e) {
        throw py::value_error(e.what());
    }
}

// What every job of the module runs with: no log, and the process's memory
// high-water mark left alone (the process is the caller's).
RunOptions module_options() {
    RunOptions opt;
    opt.verbosity = Verbosity::quiet;
    opt.own_peak_memory = false;
    return opt;
}

// Runs `body` with the GIL released, Ctrl-C turned into KeyboardInterrupt,
// progress reported to `progress` (called with the GIL held) and the CLI's
// errors turned into Python ones.
template <typename Body>
auto run_job(const py::object& progress, Body&& body) {
    // The caller's reference keeps the callback alive for the whole job, so
    // the observer holds a plain pointer: copying or dropping it needs no GIL.
    PyObject* callback = progress.is_none() ? nullptr : progress.ptr();
    // One job at a time: the library has one progress observer and one
    // interrupt flag per process. Taken without the GIL, so a second
    // thread's job waits without blocking the interpreter.
    static std::mutex one_job;
    try {
        py::gil_scoped_release free;
        std::lock_guard<std::mutex> lock(one_job);
        if (callback)
            set_progress_observer([callback](const std::string& what, int done, int total) {
                py::gil_scoped_acquire hold;
                const py::handle fn(callback);
                fn(what, done, total);
            });
        clear_interrupt();
        // Python's own handlers only set a flag its interpreter loop reads,
        // which never runs while the job holds no GIL: the library's handlers
        // stand in for the job's length (checked between pairs and point groups).
        using Handler = void (*)(int);
        const Handler previous_int = std::signal(SIGINT, SIG_DFL), previous_term = std::signal(SIGTERM, SIG_DFL);
        install_interrupt_handlers();
        struct Restore {
            Handler on_int, on_term;
            ~Restore() {
                std::signal(SIGINT, on_int);
                std::signal(SIGTERM, on_term);
                set_progress_observer(nullptr);
            }
        } restore{previous_int, previous_term};
        return body();
    } catch (const Interrupted&) {
        clear_interrupt();
        PyErr_SetNone(PyExc_KeyboardInterrupt);
        throw py::error_already_set();
    } catch (const Error& e) {
        // What the machine or the system refused is not a bad value.
        const ExitCode c = e.code();
        if (c == ExitCode::unsupported || c == ExitCode::internal || c == ExitCode::output)
            throw std::runtime_error(e.what());
        throw py::value_error(e.what());
    }
}

// ---- results ----------------------------------------------------------------------

py::list csv_rows(const std::string& csv) {
    std::istringstream in(csv);
    std::string header, line;
    std::getline(in, header);
    const std::vector<std::string> names = split_csv(header);
    py::list rows;
    while (std::getline(in, line)) {
        py::dict row;
        const std::vector<std::string> cells = split_csv(line);
        for (std::size_t k = 0; k < names.size() && k < cells.size(); ++k) {
            const std::string& c = cells[k];
            char* end = nullptr;
            const double v = std::strtod(c.c_str(), &end);
            const py::str name(names[k]);
            if (c.empty())
                row[name] = py::none();
            else if (end && *end == '\0' && names[k] != "name" && names[k] != "status")
                row[name] = c.find_first_of(".eEnN") == std::string::npos ? py::object(py::int_(std::stoll(c))) : py::object(py::float_(v));
            else
                row[name] = c;
        }
        rows.append(row);
    }
    return rows;
}

std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

py::object align_stack(const py::object& stack, const std::string& backend, const py::object& progress,
                       const py::kwargs& keys) {
    HeldStack held{held_stack_of(stack), {}};
    Job job;
    // Names the job's outputs (stack.prexf, ...); the frames are never written there.
    const std::string input = (job.dir / "stack.tif").string();
    Config cfg = job_config(job, UsedBy::stack, keys,
                            {{"input.stack", input},
                             {"output.dir", job.out.string()},
                             {"output.report", false},
                             {"device.backend", backend}},
                            {"input.stack", "input.files", "input.glob"});
    // The aligned frames go straight into the array returned; the aligned
    // stack's file is written only where `dir` keeps the outputs.
    py::object aligned = py::none();
    if (cfg.output.aligned) {
        const StackInfo& in = held.input->info;
        const HostArray out = new_array({in.frames, in.height, in.width}, to_string(in.type));
        aligned = out.array;
        const std::size_t frame_bytes = std::size_t(in.width) * in.height * bytes_per_pixel(in.type);
        held.aligned = [to = out.data, frame_bytes](int frame, const RawFrame& f) {
            std::memcpy(to + std::size_t(frame) * frame_bytes, f.bytes.data(), frame_bytes);
        };
        cfg.output.aligned = job.keep_out;
    }
    RunOptions opt = module_options();
    const StackResult r = run_job(progress, [&] { return run_stack(cfg, opt, &held); });

    const std::size_t n = r.frames.size();
    const long long frames = (long long)(n);
    const Doubles shifts = doubles({frames, 2}), mi = doubles({frames}), sharpness = doubles({frames});
    const Doubles confidence = doubles({frames});
    const Doubles transforms = doubles({frames, 2, 3}), angles = doubles({frames});
    py::list status;
    for (std::size_t i = 0; i < n; ++i) {
        shifts.at[2 * i] = r.frames[i].offset.dx;
        shifts.at[2 * i + 1] = r.frames[i].offset.dy;
        const Transform& t = r.frames[i].offset;
        const double row[6] = {t.a11, t.a12, t.dx, t.a21, t.a22, t.dy};
        for (int k = 0; k < 6; ++k) transforms.at[6 * i + k] = row[k];
        angles.at[i] = angle_of(t);
        mi.at[i] = r.frames[i].mi;
        sharpness.at[i] = r.frames[i].sharpness;
        confidence.at[i] = r.frames[i].confidence;
        status.append(r.frames[i].status);
    }
    const std::string csv = read_file(job.out / "shifts.csv");
    py::object result = py::module_::import("types").attr("SimpleNamespace")(
        py::arg("shifts") = shifts.array, py::arg("transforms") = transforms.array, py::arg("angles") = angles.array,
        py::arg("aligned") = aligned, py::arg("mi") = mi.array,
        py::arg("sharpness") = sharpness.array, py::arg("confidence") = confidence.array,
        py::arg("verdict") = name_of(r.quality.verdict), py::arg("verdict_reasons") = r.quality.reasons,
        py::arg("status") = status, py::arg("table") = csv_rows(csv), py::arg("shifts_csv") = csv,
        py::arg("backend") = r.backend_description,
        py::arg("output_dir") = job.keep_out ? py::object(py::str(job.out.string())) : py::none());
    return result;
}

py::object match_landmarks(const py::object& source, const py::object& target, const py::object& points,
                           const py::object& names, const std::string& backend, const py::object& progress,
                           const py::kwargs& keys) {
    HeldLandmarks held;
    held.source = std::make_shared<const RawFrame>(volume_of(source, "source", "(z, y, x)"));
    held.target = std::make_shared<const RawFrame>(volume_of(target, "target", "(z, y, x)"));
    const HostArray p = host_array(py::module_::import("numpy").attr("asarray")(points, py::arg("dtype") = "float64"));
    if (p.shape.size() != 2 || p.shape[1] != 3)
        throw py::value_error("points: expected an (N, 3) array of x, y, z, got " + std::to_string(p.shape.size()) +
                              "D" + (p.shape.size() == 2 ? " with " + std::to_string(p.shape[1]) + " columns" : ""));
    const long long count = p.shape[0];
    if (count == 0) throw py::value_error("points: expected an (N, 3) array of x, y, z with N >= 1, got no points");
    std::vector<std::string> point_names;
    if (!names.is_none()) {
        point_names = names.cast<std::vector<std::string>>();
        if ((long long)(point_names.size()) != count)
            throw py::value_error("names: " + std::to_string(point_names.size()) + " names for " +
                                  std::to_string(count) + " points");
    }
    const double* xyz = reinterpret_cast<const double*>(p.data);  // C order (host_array)
    for (long long i = 0; i < count; ++i) {
        NamedPoint named;
        named.p = {xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]};
        for (const double v : named.p)
            if (!std::isfinite(v))
                throw py::value_error("points: row " + std::to_string(i) + " has a coordinate that is not a finite number");
        // As a points file names them: given, else P1..PN (the module's own
        // default); an empty name is a file's unnamed point.
        named.name = point_names.empty() ? "P" + std::to_string(i + 1)
                     : point_names[i].empty() ? default_point_name(std::size_t(i))
                                              : point_names[i];
        held.points.push_back(std::move(named));
    }
    Job job;
    // Name the inputs in the log; no such file is written or read.
    const Config cfg = job_config(job, UsedBy::landmarks, keys,
                                  {{"landmarks.source", (job.dir / "source.tif").string()},
                                   {"landmarks.target", (job.dir / "target.tif").string()},
                                   {"landmarks.points", (job.dir / "points.csv").string()},
                                   {"output.dir", job.out.string()},
                                   {"device.backend", backend}},
                                  {"landmarks.source", "landmarks.target", "landmarks.points"});
    RunOptions opt = module_options();
    const LandmarkResult r = run_job(progress, [&] { return run_landmarks(cfg, opt, &held); });

    const std::size_t n = r.matches.size();
    const long long points_n = (long long)(n);
    const Doubles dst = doubles({points_n, 3}), mi = doubles({points_n}), sharpness = doubles({points_n});
    const Doubles confidence = doubles({points_n});
    py::list status;
    for (std::size_t i = 0; i < n; ++i) {
        const LandmarkMatch& m = r.matches[i];
        for (int a = 0; a < 3; ++a) dst.at[3 * i + a] = m.matched() ? m.dst[a] : NAN;
        mi.at[i] = m.matched() ? m.mi : NAN;
        sharpness.at[i] = m.matched() ? m.sharpness : NAN;
        confidence.at[i] = m.matched() ? m.confidence : NAN;
        status.append(m.status);
    }
    py::object matrix = py::none(), fitted = py::none();
    if (r.fit.fit) {
        const Doubles m = doubles({3, 4}), f = doubles({points_n, 3});
        for (int row = 0; row < 3; ++row)
            for (int c = 0; c < 4; ++c) m.at[4 * row + c] = r.fit.fit->m[row][c];
        for (std::size_t i = 0; i < n; ++i) {
            const Point3 q = r.fit.fit->apply(r.matches[i].src);
            for (int a = 0; a < 3; ++a) f.at[3 * i + a] = q[a];
        }
        matrix = m.array, fitted = f.array;
    }
    const std::string csv = read_file(job.out / "matches.csv");
    return py::module_::import("types").attr("SimpleNamespace")(
        py::arg("matches") = dst.array, py::arg("mi") = mi.array, py::arg("sharpness") = sharpness.array,
        py::arg("confidence") = confidence.array, py::arg("status") = status, py::arg("fit") = matrix, py::arg("fitted") = fitted, py::arg("table") = csv_rows(csv),
        py::arg("matches_csv") = csv, py::arg("backend") = r.backend_description,
        py::arg("output_dir") = job.keep_out ? py::object(py::str(job.out.string())) : py::none());
}

// A config file run in this process as `stackalign run CONFIG` runs it: a
// stack, landmark or batch job, its outputs where the config says. Why:
// the process keeps its GPU context from call to call, so only the first
// call pays the GPU's start, which a lone CLI process pays every time
// (0.20-0.24 s on the H100 host, docs/benchmarks.md), and `auto` then
// charges no start (gpu_start_seconds). A failed job of a batch is a row
// with its error, as in batch.json; a lone job's failure is an exception.
py::list run_config(const py::object& config, const py::object& backend, bool resume, const py::object& progress) {
    const std::string path = path_of(config);
    RunOptions opt = module_options();
    opt.resume = resume;
    if (!backend.is_none()) {  // read while the GIL is held, as every Python object is
        const std::string name = py::str(backend);
        opt.backend = parse_name<BackendRequest>(name);
        if (!opt.backend) throw py::value_error("backend '" + name + "': expected \"auto\", \"cpu\" or \"cuda\"");
    }
    std::vector<JobOutcome> outcomes;
    run_job(progress, [&] {
        stackalign::Batch batch = load_jobs(path);
        check_outputs_spare_inputs(batch);
        if (!batch.is_batch) {
            outcomes.push_back(stackalign::run_job(batch.jobs.front(), opt));
        } else if (run_batch(batch, opt, &outcomes) == int(ExitCode::interrupted)) {
            throw Interrupted("interrupted");
        }
        return 0;
    });
    py::list rows;
    for (const JobOutcome& o : outcomes)
        rows.append(py::dict(py::arg("name") = o.name, py::arg("output") = o.output, py::arg("status") = o.status,
                             py::arg("error") = o.error, py::arg("exit_code") = o.exit_code,
                             py::arg("items") = o.items, py::arg("seconds") = o.seconds,
                             py::arg("backend") = o.backend, py::arg("verdict") = o.verdict()));
    return rows;
}

}  // namespace

PYBIND11_MODULE(stackalign, m) {
    m.doc() = "stackalign: mutual-information alignment of image stacks and tilt series, and landmark matching "
              "between 3D volumes, from numpy arrays. Keywords are the TOML keys of the CLI (`stackalign keys`).";
    m.attr("__version__") = STACKALIGN_VERSION;
    m.def("align_stack", &align_stack, py::arg("stack"), py::kw_only(), py::arg("backend") = "auto",
          py::arg("progress") = py::none(),
          "Aligns a (frames, rows, cols) stack as `stackalign run` would with these keys.\n"
          "Returns a namespace: shifts (N, 2) content offsets (dx, dy) of each frame relative to the reference,\n"
          "transforms (N, 2, 3) [A | d]: the reference's content at X lies in the frame at A (X - c) + c + d\n"
          "(A = I unless transform = \"rigid\" / \"similarity\"), angles (N) in degrees (IMOD's sense),\n"
          "aligned (same dtype; None with aligned=False), mi, sharpness, status (per frame), table (the rows of\n"
          "shifts.csv as dicts), shifts_csv (its text), backend. progress(what, done, total) is called as pairs finish.");
    m.def("match_landmarks", &match_landmarks, py::arg("source"), py::arg("target"), py::arg("points"), py::kw_only(),
          py::arg("names") = py::none(), py::arg("backend") = "auto", py::arg("progress") = py::none(),
          "Finds (N, 3) points (x, y, z) of the source volume (z, y, x array) in the target volume, as\n"
          "`stackalign run` in landmark mode (names: the points' names in the tables; default P1..PN).\n"
          "Returns a namespace: matches (N, 3; NaN where skipped), mi,\n"
          "sharpness, status, fit (3 x 4 [A | t] with fit=...), fitted (the fit applied to every point), table,\n"
          "matches_csv, backend.");
    m.def("run", &run_config, py::arg("config"), py::kw_only(), py::arg("backend") = py::none(),
          py::arg("resume") = false, py::arg("progress") = py::none(),
          "Runs a TOML config (a stack, landmark or batch job) in this process, as `stackalign run CONFIG`\n"
          "(backend: overrides [device] backend, as --backend; resume: as --resume). Outputs go where the\n"
          "config says. The GPU is started once for every call of the session. Returns one dict per job:\n"
          "name, output, status (ok | failed | skipped (up to date) | ...), error, exit_code, items, seconds,\n"
          "backend. A lone job's failure raises (ValueError for bad input, RuntimeError for what the machine\n"
          "refused); a batch's failed jobs are rows with their error, as in batch.json.");
    m.def("read", [](const py::object& path) {
        try {
            return read_array(path_of(path));
        } catch (const Error& e) {
            throw py::value_error(e.what());
        }
    }, py::arg("path"), "A TIFF or MRC stack as a (frames, rows, cols) array of its own pixel type.");
    m.def("write", [](const py::object& path, const py::object& a) {
        try {
            write_array(path_of(path), a);
        } catch (const Error& e) {
            throw py::value_error(e.what());
        }
    }, py::arg("path"), py::arg("array"), "Writes a (frames, rows, cols) array as TIFF, or MRC for .mrc/.st/... names.");
}
