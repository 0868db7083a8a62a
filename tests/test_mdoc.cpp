// SerialEM .mdoc files: parsing (CRLF, any order, gaps, duplicates), a
// series saved in acquisition order aligned in tilt order, written back in
// the file's order, and views saved one file each, named by the .mdoc.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "../src/core/error.hpp"
#include "../src/io/mdoc.hpp"
#include "../src/io/tiff_io.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace stackalign;
using namespace test_support;

namespace {

const char* kTilt = "sample_data/haadf_tilt_91x64x64.tif";


// shifts.csv's rows: tilt -> "dx,dy" (and the tilts in row order).
std::map<std::string, std::string> shifts_by_tilt(const std::string& path, std::vector<std::string>* tilts = nullptr) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    std::map<std::string, std::string> out;
    while (std::getline(in, line)) {
        std::vector<std::string> f;
        std::stringstream cells(line);
        for (std::string c; std::getline(cells, c, ',');) f.push_back(c);
        out[f[8]] = f[1] + "," + f[2];  // frame,dx,dy,neighbour_dx,neighbour_dy,mi,sharpness,confidence,tilt
        if (tilts) tilts->push_back(f[8]);
    }
    return out;
}

}  // namespace

TEST_CASE("mdoc: CRLF, sections in any order, the header's axis and pixel size; gaps and duplicates are errors") {
    const std::string text =
        "PixelSpacing = 2.7\r\nImageFile = ts.mrc\r\n\r\n[T = SerialEM: Digitized on a Krios]\r\n"
        "[T =     Tilt axis angle = 85.3, binning = 1  spot = 8  camera = 0]\r\n\r\n"
        "[ZValue = 2]\r\nTiltAngle = -3.00\r\nSubFramePath = X:\\data\\ts_002_-3.0.tif\r\n\r\n"
        "[ZValue = 0]\r\nStagePosition = 1 2\r\nTiltAngle = 0.01\r\n\r\n"
        "[ZValue = 1]\r\nTiltAngle = 3.02\r\n";
    const Mdoc m = parse_mdoc(text, "ts.mrc.mdoc");
    CHECK(m.tilts() == std::vector<double>{0.01, 3.02, -3.0});
    REQUIRE(m.tilt_axis);
    CHECK(*m.tilt_axis == doctest::Approx(85.3));
    REQUIRE(m.pixel_spacing);
    CHECK(*m.pixel_spacing == doctest::Approx(2.7));
    CHECK(m.views[2].subframe_path == "X:\\data\\ts_002_-3.0.tif");
    CHECK_THROWS_WITH_AS(mdoc_view_files(m), doctest::Contains("ts.mrc.mdoc:11: section ZValue = 0 has no SubFramePath"),
                         InputError);
    CHECK_THROWS_WITH_AS(parse_mdoc("[ZValue = 0]\nTiltAngle = 1\n[ZValue = 0]\nTiltAngle = 2\n", "d.mdoc"),
                         doctest::Contains("d.mdoc:3: ZValue = 0 appears a second time (first at line 1)"), InputError);
    CHECK_THROWS_WITH_AS(parse_mdoc("[ZValue = 0]\nTiltAngle = 1\n[ZValue = 2]\nTiltAngle = 2\n", "g.mdoc"),
                         doctest::Contains("g.mdoc: ZValue = 1 is missing"), InputError);
    CHECK_THROWS_WITH_AS(parse_mdoc("[ZValue = 0]\nTiltAngle = 1\n[ZValue = 1]\nStagePosition = 1 2\n", "t.mdoc"),
                         doctest::Contains("t.mdoc:3: section ZValue = 1 has no TiltAngle"), InputError);
    CHECK_THROWS_WITH_AS(parse_mdoc("[ZValue = 0]\nTiltAngle = abc\n", "n.mdoc"),
                         doctest::Contains("n.mdoc:2: TiltAngle = 'abc' is not a number"), InputError);
    CHECK_THROWS_WITH_AS(parse_mdoc("PixelSpacing = 1\n", "e.mdoc"), doctest::Contains("no [ZValue = N] section"),
                         InputError);
    const std::string dir = temp_dir("mdoc_beside");
    write_text(dir + "/a.mrc", "x");
    CHECK(mdoc_beside(dir + "/a.mrc").empty());
    write_text(dir + "/a.mdoc", "x");
    CHECK(mdoc_beside(dir + "/a.mrc") == dir + "/a.mdoc");
    write_text(dir + "/a.mrc.mdoc", "x");
    CHECK(mdoc_beside(dir + "/a.mrc") == dir + "/a.mrc.mdoc");  // SerialEM's own name first
}

TEST_CASE("mdoc: a real series saved in acquisition order aligns as the same views in tilt order; outputs in the file's order") {
    // The HAADF series (-90..90, 2 degrees) as a dose-symmetric acquisition
    // would save it: 0, +2, -2, -4, +4, +6, -6, ... with its .mdoc beside it
    // (CRLF, sections shuffled), against the views in tilt order with a .tlt.
    const std::string dir = temp_dir("mdoc_acquisition");
    std::vector<int> order = {45};
    for (int k = 1, up = 1; int(order.size()) < 91; ++k, up = !up)
        for (int s : up ? std::vector<int>{1, -1} : std::vector<int>{-1, 1}) order.push_back(45 + s * k);
    std::vector<RawFrame> acquired, sorted;
    for (int f : order) acquired.push_back(sample_frame(kTilt, f));
    for (int v = 0; v < 91; ++v) sorted.push_back(sample_frame(kTilt, v));
    write_tiff_stack(dir + "/acq.tif", acquired);
    write_tiff_stack(dir + "/sorted.tif", sorted);
    std::string tlt, mdoc = "PixelSpacing = 179.9\r\n[T =     Tilt axis angle = 1.5, binning = 1]\r\n\r\n";
    for (int v = 0; v < 91; ++v) tlt += std::to_string(-90 + 2 * v) + "\n";
    for (int z = 90; z >= 0; z -= 2) mdoc += "[ZValue = " + std::to_string(z) + "]\r\nTiltAngle = " + std::to_string(-90 + 2 * order[z]) + "\r\n\r\n";
    for (int z = 89; z >= 0; z -= 2) mdoc += "[ZValue = " + std::to_string(z) + "]\r\nTiltAngle = " + std::to_string(-90 + 2 * order[z]) + "\r\n\r\n";
    write_text(dir + "/sorted.tlt", tlt);
    write_text(dir + "/acq.tif.mdoc", mdoc);
    const std::string common = "[search]\nwindow = [40, 40]\nmax_shift = 12\n[alignment]\ncosine_stretch = false\n"
                               "tilt_axis = 0\n[output]\nreport = false\n";
    write_text(dir + "/sorted.toml", "[input]\nstack = \"sorted.tif\"\nangles = \"sorted.tlt\"\n" + common + "dir = \"out_sorted\"\n");
    write_text(dir + "/acq.toml", "[input]\nstack = \"acq.tif\"\n" + common + "dir = \"out_acq\"\n");
    REQUIRE(run_cli("run " + dir + "/sorted.toml") == 0);
    REQUIRE(run_cli("run " + dir + "/acq.toml") == 0);
    std::vector<std::string> tilts;
    const auto a = shifts_by_tilt(dir + "/out_acq/shifts.csv", &tilts), s = shifts_by_tilt(dir + "/out_sorted/shifts.csv");
    REQUIRE(a.size() == 91);
    CHECK(a == s);  // every tilt's offset, bit for bit
    CHECK(tilts[0] == "0.00");
    CHECK(tilts[1] == "2.00");
    CHECK(tilts[2] == "-2.00");
    // The aligned stack in the file's order: frame k is the sorted run's frame order[k].
    const std::vector<RawFrame> al = read_tiff_stack(dir + "/out_acq/aligned.tif").frames,
                                so = read_tiff_stack(dir + "/out_sorted/aligned.tif").frames;
    REQUIRE(al.size() == 91);
    for (int k : {0, 1, 2, 50, 90}) CHECK(al[k].bytes == so[order[k]].bytes);
    const auto j = nlohmann::json::parse(read_text(dir + "/out_acq/run.json"));
    CHECK(j["plan"]["angles_from"].get<std::string>().find("acq.tif.mdoc (beside the stack)") != std::string::npos);
    CHECK(j["plan"]["view_order"][0] == 90);  // -90 degrees was acquired last
    // No tilt_axis in the config: "auto", the header's axis checked against the views.
    write_text(dir + "/auto.toml", "[input]\nstack = \"acq.tif\"\n[search]\nwindow = [40, 40]\nmax_shift = 12\n"
                                   "[alignment]\ncosine_stretch = false\n[output]\nreport = false\naligned = false\ndir = \"out_auto\"\n");
    REQUIRE(run_cli("run " + dir + "/auto.toml") == 0);
    const auto k = nlohmann::json::parse(read_text(dir + "/out_auto/run.json"));
    CHECK(k["plan"]["mdoc_tilt_axis"] == doctest::Approx(1.5));
    CHECK(k["plan"]["tilt_axis_from"] == "auto");
    // One file per view, named in acquisition order, with the .mdoc as angles.
    fs::create_directories(dir + "/views");
    for (int z = 0; z < 91; ++z) {
        char name[32];
        std::snprintf(name, sizeof name, "/views/acq_%03d.tif", z);
        write_tiff_stack(dir + name, {acquired[z]});
    }
    write_text(dir + "/files.toml", "[input]\nfiles = \"views/acq_*.tif\"\nangles = \"acq.tif.mdoc\"\n" + common +
                                        "dir = \"out_files\"\n");
    REQUIRE(run_cli("run " + dir + "/files.toml") == 0);
    CHECK(shifts_by_tilt(dir + "/out_files/shifts.csv") == s);
    // One file per view named by the .mdoc's SubFramePath (a Windows path,
    // found beside the .mdoc by its name; names whose natural order is not
    // the ZValues'), the angles from the same .mdoc.
    fs::create_directories(dir + "/named");
    std::string named;
    for (int z = 0; z < 91; ++z) {
        const std::string name = "tilt_" + std::to_string(-90 + 2 * order[z]) + ".tif";
        write_tiff_stack(dir + "/named/" + name, {acquired[z]});
        named += "[ZValue = " + std::to_string(z) + "]\r\nTiltAngle = " + std::to_string(-90 + 2 * order[z]) +
                 "\r\nSubFramePath = D:\\frames\\" + name + "\r\n\r\n";
    }
    write_text(dir + "/named/ts.mdoc", named);
    write_text(dir + "/named.toml", "[input]\nfiles = \"named/ts.mdoc\"\n" + common + "dir = \"out_named\"\n");
    REQUIRE(run_cli("run " + dir + "/named.toml") == 0);
    CHECK(shifts_by_tilt(dir + "/out_named/shifts.csv") == s);
    // A view whose file is not there: exit 3.
    fs::remove(dir + "/named/tilt_4.tif");
    CHECK(run_cli("run " + dir + "/named.toml") == int(ExitCode::input));
    // One view more in the stack than the .mdoc lists: exit 3, both named.
    acquired.push_back(sample_frame(kTilt, 0));
    write_tiff_stack(dir + "/acq.tif", acquired);
    CHECK(run_cli("run " + dir + "/acq.toml") == int(ExitCode::input));
}
