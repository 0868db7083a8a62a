#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "../pipelines/plan/stack_plan.hpp"
#include "../src/config/config.hpp"
#include "../src/config/schema.hpp"
#include "../src/core/error.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;
namespace fs = std::filesystem;

namespace {

std::string config_error(const std::string& text) {
    try {
        parse_config(text, "/data/job.toml");
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "(no ConfigError)";
}

const char* minimal = "[input]\nstack = \"a.tif\"\n";

}  // namespace

TEST_CASE("config: the sample config parses with its documented values") {
    const Config c = load_config(source_path("configs/sample_tilt_series.toml"));
    CHECK(c.mode == Mode::stack);
    CHECK(c.input.stack == source_path("sample_data/haadf_tilt_91x64x64.tif"));
    CHECK(c.preprocess.mean_radius == 1);
    CHECK(c.preprocess.sobel);
    CHECK(c.preprocess.threshold == 20.0);
    CHECK(c.search.window_width == 40);
    CHECK(c.search.max_shift == 12);
    CHECK_FALSE(c.alignment.reference.has_value());
    CHECK(c.output.dir == source_path("out/sample_tilt_series"));
}

TEST_CASE("config: defaults and relative paths") {
    const Config c = parse_config(minimal, "/data/job.toml");
    CHECK(c.input.stack == "/data/a.tif");
    CHECK(c.preprocess.bins == 64);
    CHECK(c.search.max_shift == 16);
    CHECK(c.search.subpixel);
    CHECK(c.output.dir == "/data/out");
    CHECK(c.device.backend == BackendRequest::automatic);
    const Config abs = parse_config("[input]\nfiles = \"/x/*.tif\"\n[alignment]\nreference = 3\n", "job.toml");
    CHECK(abs.input.files == "/x/*.tif");
    CHECK(abs.alignment.reference == 3);
}

TEST_CASE("config: errors name the file, line, key and what was expected") {
    CHECK(config_error(std::string(minimal) + "[search]\nmax_shfit = 3\n") ==
          "/data/job.toml:4: [search] max_shfit: unknown key; did you mean max_shift? "
          "(valid: angle_range, angle_step, binning, coarse_to_fine, histogram, max_shift, method, metric, mtb_band, refine_metric, refine_side, refine_sigma, "
          "scale_range, scale_step, subpixel, transform, window, window_origin)");
    CHECK(config_error(std::string(minimal) + "[preprocess]\nbins = \"64\"\n") ==
          "/data/job.toml:4: [preprocess] bins: expected an integer, got a string");
    CHECK(config_error(std::string(minimal) + "[preprocess]\nbins = 1000\n") ==
          "/data/job.toml:4: [preprocess] bins: value 1000 is out of range; expected 2 to 256");
    CHECK(config_error(std::string(minimal) + "[preprocess]\nsobel = 1\n") ==
          "/data/job.toml:4: [preprocess] sobel: expected true or false, got an integer");
    CHECK(config_error(std::string(minimal) + "[serch]\n") ==
          "/data/job.toml:3: serch: unknown section or key; did you mean search? "
          "(sections: [input] [preprocess] [search] [landmarks] [alignment] [output] [device])");
    CHECK(config_error(std::string(minimal) + "bins = 3\n").find("did you mean [preprocess] bins?") != std::string::npos);
    CHECK(config_error(std::string(minimal) + "[device]\nbackend = \"gpu\"\n") ==
          "/data/job.toml:4: [device] backend: \"gpu\" is not valid; expected one of \"auto\", \"cpu\", \"cuda\" (did you mean \"cuda\"?)");
    CHECK(config_error(std::string(minimal) + "[search]\nwindow = [10]\n") ==
          "/data/job.toml:4: [search] window: expected an array of two integers [width, height]");
    CHECK(config_error(std::string(minimal) + "[alignment]\nreference = \"first\"\n").find(
              "expected \"middle\" or a 0-based frame index") != std::string::npos);
    CHECK(config_error("[input]\nstack = \"a.tif\"\nfiles = \"*.tif\"\n").find("give exactly one of") != std::string::npos);
    CHECK(config_error("[input\n").find("/data/job.toml:1:") == 0);
    CHECK(config_error("[input]\nstack = \"a.tif\"\n[input]\n").find("TOML syntax error") != std::string::npos);
}

TEST_CASE("config: a window that does not fit the frames names its line") {
    const std::string dir = temp_dir("config_window");
    write_text(dir + "/job.toml", "[input]\nstack = \"" + source_path("sample_data/haadf_tilt_91x64x64.tif") +
                                      "\"\n[search]\nwindow = [60, 40]\nmax_shift = 4\n");
    const Config c = load_config(dir + "/job.toml");
    try {
        plan_stack(c, RunOptions{});
        FAIL("expected a ConfigError");
    } catch (const ConfigError& e) {
        const std::string m = e.what();
        CHECK(m.find(dir + "/job.toml:4: [search] window: search window 60x40") == 0);
        CHECK(m.find("window + 2*max_shift must fit") != std::string::npos);
    }
    write_text(dir + "/ref.toml", "[input]\nstack = \"" + source_path("sample_data/haadf_tilt_91x64x64.tif") +
                                      "\"\n[alignment]\nreference = 91\n");
    CHECK_THROWS_WITH_AS(plan_stack(load_config(dir + "/ref.toml"), RunOptions{}),
                         doctest::Contains("ref.toml:4: [alignment] reference: frame 91 does not exist"), ConfigError);
}

TEST_CASE("config: edit distance") {
    CHECK(edit_distance("max_shfit", "max_shift") == 2);
    CHECK(edit_distance("", "abc") == 3);
    CHECK(edit_distance("bins", "bins") == 0);
}

TEST_CASE("config: control characters are syntax errors with their place, not a crash in the TOML parser") {
    // toml++ 3.3 aborts on this table header; found by `make fuzz`.
    CHECK_THROWS_WITH_AS(parse_config("mode = \"stack\"\n[\x01landmarks]\n", "c.toml"),
                         "c.toml:2:2: TOML syntax error: control character 0x01 (is this a text file?)", ConfigError);
    CHECK_THROWS_AS(parse_jobs(std::string("a = 1\0b", 7), "c.toml"), ConfigError);
}

TEST_CASE("config: a table header with a character TOML does not allow is a config error") {
    // toml++ 3.3 asserts here (abort, or undefined behaviour with NDEBUG); found by `make fuzz`.
    for (const char* text : {"[preprocess]\nbins = 32\n[\n", "[=]\n", "[[\n"}) {
        CAPTURE(text);
        CHECK_THROWS_WITH_AS(parse_config(text, "c.toml"), doctest::Contains("c.toml: TOML syntax error: not valid TOML"),
                             ConfigError);
    }
}

TEST_CASE("config: non-ASCII outside strings and comments is a syntax error with its place; inside them it is text") {
    // toml++ 3.3 reaches __builtin_unreachable on U+00A1..U+0499 there; found by `make fuzz`.
    CHECK_THROWS_WITH_AS(parse_config("[output]\ndir = \"out\"\ncafé = 1\n", "c.toml"),
                         doctest::Contains("c.toml:3:4: TOML syntax error: a non-ASCII character outside"), ConfigError);
    const Config cfg = parse_config("# réglages — ±2°\n[input]\nstack = \"séries été.tif\"  # ü\n", "/d/c.toml");
    CHECK(cfg.input.stack == "/d/séries été.tif");
    // A line-ending backslash in a multi-line string, then non-ASCII: the same string as written.
    CHECK(parse_config("[input]\nstack = \"\"\"a\\\n  é\"\"\"\n", "/d/c.toml").input.stack == "/d/aé");
    CHECK(parse_config("[input]\nstack = \"😀\"\n", "/d/c.toml").input.stack == "/d/😀");
    CHECK_THROWS_WITH_AS(parse_config("[input]\nstack = 'é'\n", "c.toml"), doctest::Contains("double-quoted"), ConfigError);
    CHECK_THROWS_WITH_AS(parse_config("[input]\nstack = \"\xC3\"\n", "c.toml"), doctest::Contains("invalid UTF-8"),
                         ConfigError);
}

TEST_CASE("schema: every key reaches the typed config and comes back out in run.json's config") {
    // One valid, non-default value per key; the few that only make sense
    // together get their partner (`also`).
    struct Sample {
        std::string key, toml, also;
        nlohmann::json expect;
    };
    const std::vector<Sample> stack = {
        {"input.files", "\"f/*.tif\"", "", "/d/f/*.tif"},
        {"input.allow_gaps", "true", "", true},
        {"input.angles", "\"a.tlt\"", "", "/d/a.tlt"},
        {"preprocess.mean_radius", "2", "", 2},
        {"preprocess.sobel", "false", "", false},
        {"preprocess.threshold", "7.5", "", 7.5},
        {"preprocess.bins", "32", "", 32},
        {"search.window", "[30, 20]", "", {30, 20}},
        {"search.window_origin", "[3, 4]", "[search]\nwindow = [30, 20]\n", {3, 4}},
        {"search.max_shift", "5", "", 5},
        {"search.coarse_to_fine", "true", "", "on"},
        {"search.coarse_to_fine", "false", "", "off"},
        {"search.binning", "4", "", 4},
        {"search.subpixel", "false", "", "off"},
        {"search.subpixel", "\"parabola\"", "", "parabola"},
        {"search.method", "\"mtb-projection\"", "", "mtb-projection"},
        {"search.histogram", "\"cr-atomic\"", "[search]\nmetric = \"cr\"\n", "cr-atomic"},
        {"search.metric", "\"ncc\"", "", "ncc"},
        {"search.refine_metric", "\"ncc\"", "", "ncc"},
        {"search.refine_sigma", "0.8", "", 0.8},
        {"search.refine_sigma", "\"auto\"", "", "auto"},
        {"search.refine_side", "2048", "", 2048},
        {"search.mtb_band", "9", "[search]\nmethod = \"mtb-projection\"\n", 9},
        {"search.transform", "\"similarity\"", "", "similarity"},
        {"search.angle_range", "4.5", "", 4.5},
        {"search.angle_step", "0.5", "", 0.5},
        {"search.scale_range", "0.1", "", 0.1},
        {"search.scale_step", "0.02", "", 0.02},
        {"alignment.reference", "\"middle\"", "", "middle"},
        {"alignment.tilt_axis", "-84.5", "", -84.5},
        {"alignment.tilt_axis", "\"auto\"", "", "auto"},
        {"alignment.tilt_offset", "1.5", "", 1.5},
        {"alignment.tilt_offset", "\"auto\"", "", "auto"},
        {"alignment.cosine_stretch", "false", "", "off"},
        {"alignment.cosine_stretch", "true", "", "on"},
        {"alignment.exclude", "[1, 4]", "", {1, 4}},
        {"alignment.on_outlier", "\"interpolate\"", "", "interpolate"},
        {"alignment.min_sharpness", "1.5", "", 1.5},
        {"alignment.min_confidence", "0.25", "", 0.25},
        {"alignment.outlier_z", "4", "", 4.0},
        {"alignment.solve", "\"chain\"", "", "chain"},
        {"alignment.unreliable_px", "0.5", "", 0.5},
        {"alignment.center_of_mass", "false", "", "off"},
        {"alignment.axis_place", "false", "", false},
        {"alignment.slab_fit", "false", "", "off"},
        {"alignment.slab_fit", "true", "", "on"},
        {"alignment.projection_matching", "true", "", "on"},
        {"alignment.projection_matching", "false", "", "off"},
        {"alignment.projection_moves", "\"sine\"", "", "sine"},
        {"alignment.projection_iterations", "7", "", 7},
        {"alignment.projection_tolerance", "0.2", "", 0.2},
        {"alignment.projection_binning", "2", "", 2},
        {"alignment.projection_thickness", "\"auto\"", "", "auto"},
        {"output.dir", "\"res\"", "", "/d/res"},
        {"output.aligned", "false", "", false},
        {"output.format", "\"mrc\"", "", "mrc"},
        {"output.report", "false", "", false},
        {"device.backend", "\"cpu\"", "", "cpu"},
        {"device.gpu", "3", "", 3},
        {"device.gpus", "\"all\"", "", "all"},
        {"device.searchers", "2", "", 2},
    };
    const std::vector<Sample> landmarks = {
        {"landmarks.window", "[9, 9, 5]", "", {9, 9, 5}},
        {"landmarks.max_shift", "[2, 3, 1]", "", {2, 3, 1}},
        {"landmarks.voxel_size", "[0.5, 0.5, 2]", "", {0.5, 0.5, 2.0}},
        {"landmarks.subpixel", "\"parabola\"", "", "parabola"},
        {"landmarks.refine", "\"global\"", "", "global"},
        {"landmarks.min_confidence", "0.5", "", 0.5},
        {"output.fit", "\"rigid\"", "", "rigid"},
    };
    const std::string lm = "mode = \"landmarks\"\n[landmarks]\nsource = \"s.tif\"\ntarget = \"t.tif\"\npoints = \"p.csv\"\n";
    std::set<std::string> covered = {"mode", "input.stack", "input.glob", "landmarks.source", "landmarks.target",
                                     "landmarks.points"};
    for (const auto* list : {&stack, &landmarks}) {
        for (const Sample& s : *list) {
            CAPTURE(s.key);
            const std::string section = s.key.substr(0, s.key.find('.')), name = s.key.substr(s.key.find('.') + 1);
            std::string text = list == &stack ? (s.key == "input.files" ? "" : std::string(minimal)) : lm;
            text += s.also;
            // The key's section may already be open (from `also` or the base).
            text += (text.find("[" + section + "]") != std::string::npos ? "" : "[" + section + "]\n");
            const std::string line = name + " = " + s.toml + "\n";
            const auto at = text.find("[" + section + "]\n") + section.size() + 3;
            text.insert(at, line);
            const Config c = parse_config(text, "/d/job.toml");
            CHECK(config_values(c)[section][name] == s.expect);
            covered.insert(s.key);
        }
    }
    // Every row of the schema was exercised above.
    for (const KeySpec& k : config_schema()) CHECK_MESSAGE(covered.count(k.key()), k.key() << " has no sample here");
}

TEST_CASE("schema: docs/config.md's table is the one `stackalign keys` prints") {
    const std::string readme = read_text(source_path("docs/config.md"));
    const std::string begin = "-->\n", end = "<!-- /keys -->";
    const auto a = readme.find("<!-- keys:");
    REQUIRE(a != std::string::npos);
    const auto b = readme.find(begin, a) + begin.size(), e = readme.find(end, b);
    CHECK_MESSAGE(readme.substr(b, e - b) == schema_markdown(),
                  "regenerate the table in docs/config.md with `build/stackalign keys`");
}

TEST_CASE("docs/architecture.md: the Layout section names every source folder, and every path it names exists") {
    const std::string readme = read_text(source_path("docs/architecture.md"));
    const auto a = readme.find("## Layout\n");
    REQUIRE(a != std::string::npos);
    const auto b = readme.find("```\n", a) + 4, e = readme.find("```", b);
    const std::string block = readme.substr(b, e - b);
    std::istringstream lines(block);
    std::string line;
    std::set<std::string> named;
    while (std::getline(lines, line))
        if (!line.empty() && line[0] != ' ') named.insert(line.substr(0, line.find(' ')));
    for (const std::string& folder : named) CHECK_MESSAGE(fs::is_directory(source_path(folder)), folder << " is not a folder");
    for (const char* top : {"src", "kernels", "pipelines"})
        for (const auto& entry : fs::directory_iterator(source_path(top))) {
            // A folder with no files (one left behind by a move) holds no source.
            if (!entry.is_directory() || fs::is_empty(entry.path())) continue;
            const std::string rel = std::string(top) + "/" + entry.path().filename().string() + "/";
            const bool inside_kernels = std::string(top) == "kernels";  // kernels/<op>/ are described in its row
            CHECK_MESSAGE((named.count(rel) || (inside_kernels && block.find(entry.path().filename().string() + "/") != std::string::npos)),
                          rel << " is missing from docs/architecture.md's Layout");
        }
}

TEST_CASE("schema: `stackalign check -v` lists every key of the job's mode as resolved") {
    const std::string out = temp_dir("check_keys") + "/out.txt";
    const std::string cmd = cli_path() + " check -v " + source_path("configs/sample_timelapse.toml") + " >" + out + " 2>&1";
    REQUIRE(std::system(cmd.c_str()) == 0);
    const std::string text = read_text(out);
    CHECK(text.find("  [alignment] solve = \"least-squares\"\n") != std::string::npos);
    CHECK(text.find("  [search] window = [384,384]\n") != std::string::npos);
    CHECK(text.find("[landmarks]") == std::string::npos);  // the other mode's keys are not this job's
    int listed = 0;
    for (const KeySpec& k : config_schema()) listed += k.used_by != UsedBy::landmarks && text.find("  " + k.label() + " = ") != std::string::npos;
    int expected = 0;
    for (const KeySpec& k : config_schema()) expected += k.used_by != UsedBy::landmarks;
    CHECK(listed == expected);
}
