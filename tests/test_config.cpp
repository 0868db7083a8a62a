#include <doctest/doctest.h>

#include "../pipelines/plan/stack_plan.hpp"
#include "../src/config/config.hpp"
#include "../src/core/error.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;

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
          "(valid: histogram, max_shift, method, metric, mtb_band, subpixel, window, window_origin)");
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
