// Point files (src/io/point_files): CSV, Amira .landmarkAscii and BigWarp
// CSV written and read back, and malformed files refused with the line.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../src/core/error.hpp"
#include "../src/io/point_files.hpp"
#include "test_support.hpp"

using namespace stackalign;
using namespace test_support;

namespace {

std::vector<Point3> coords(const std::vector<NamedPoint>& pts) {
    std::vector<Point3> out;
    for (const auto& p : pts) out.push_back(p.p);
    return out;
}

}  // namespace

TEST_CASE("point files: CSV, Amira and BigWarp read back what was written") {
    const std::vector<NamedPoint> pts = {{"a", {1.5, 2, 3}}, {"b,2", {-4.25, 5e-3, 60}}, {"Pt-2", {7, 8, 9.125}}};
    const std::vector<Point3> second = {{1, 1, 1}, {2, 2, 2}, {3, 3, 3}};

    const auto csv = parse_points(points_csv(pts), "p.csv");
    REQUIRE(csv.size() == 3);
    CHECK(csv[1].name == "b,2");
    CHECK(coords(csv) == coords(pts));
    CHECK(detect_point_format(points_csv(pts), "p.csv") == PointFormat::csv);

    const std::string am = amira_landmarks(coords(pts), second);
    CHECK(am.rfind("# AmiraMesh 3D ASCII 2.0\n", 0) == 0);
    CHECK(am.find("define Markers 3") != std::string::npos);
    CHECK(am.find("NumSets 2") != std::string::npos);
    CHECK(am.find("Markers { float[3] Coordinates2 } @2") != std::string::npos);
    CHECK(detect_point_format(am, "m.landmarkAscii") == PointFormat::amira);
    CHECK(coords(parse_points(am, "m.landmarkAscii")) == coords(pts));
    CHECK(parse_second_set(am, "m.landmarkAscii") == second);
    CHECK(parse_second_set(amira_landmarks(coords(pts), {}), "one.landmarkAscii").empty());

    const std::string bw = bigwarp_csv({"a", "b,2", "Pt-2"}, {true, false, true}, coords(pts), second);
    CHECK(bw.substr(0, bw.find('\n')) == "\"a\",\"true\",\"1.5\",\"2\",\"3\",\"1\",\"1\",\"1\"");
    CHECK(detect_point_format(bw, "landmarks.csv") == PointFormat::bigwarp);
    const auto bwp = parse_points(bw, "landmarks.csv");
    CHECK(bwp[1].name == "b,2");
    CHECK(coords(bwp) == coords(pts));
    CHECK(parse_second_set(bw, "landmarks.csv") == second);

    // Header columns in any order, name optional, comments and blank lines skipped.
    const auto loose = parse_points("z, X ,y\n# a comment\n3,1,2\n\n6,4,5\n", "loose.csv");
    REQUIRE(loose.size() == 2);
    CHECK(loose[0].name == "Pt-0");
    CHECK(loose[1].p == Point3{4, 5, 6});
}

TEST_CASE("point files: malformed files name the line and what was expected") {
    CHECK_THROWS_WITH_AS(parse_points("x,y,z\n1,2,3\n4,five,6\n", "p.csv"),
                         "p.csv:3: y: expected a number, got \"five\"", InputError);
    CHECK_THROWS_WITH_AS(parse_points("x,y,z\n1,2\n", "p.csv"), "p.csv:2: expected 3 fields as in the header, got 2",
                         InputError);
    CHECK_THROWS_WITH_AS(parse_points("a,b,c\n1,2,3\n", "p.csv"),
                         "p.csv:1: expected a header naming the columns x,y,z (and optionally name), got \"a,b,c\"",
                         InputError);
    CHECK_THROWS_WITH_AS(parse_points("\"Pt-0\",\"true\",\"1\",\"2\",\"3\",\"4\"\n", "bw.csv"),
                         "bw.csv:1: BigWarp landmark rows have 8 fields (\"name\",\"active\",mx,my,mz,fx,fy,fz), got 6 "
                         "(a 2D BigWarp file?)",
                         InputError);
    const std::string truncated = "# AmiraMesh 3D ASCII 2.0\ndefine Markers 3\nParameters { NumSets 1 }\n@1\n1 2 3\n4 5\n";
    CHECK_THROWS_WITH_AS(parse_points(truncated, "t.landmarkAscii"),
                         "t.landmarkAscii:6: expected three coordinates \"x y z\", got \"4 5\"", InputError);
    CHECK_THROWS_WITH_AS(parse_points("1 2 3\n", "x.landmarkAscii"),
                         "x.landmarkAscii:1: an Amira landmark file must start with \"# AmiraMesh 3D ASCII 2.0\"",
                         InputError);
}
