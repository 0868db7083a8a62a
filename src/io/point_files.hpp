// Landmark point files in the formats this community exchanges:
//  - CSV with a header naming x, y, z (and optionally name), any column order;
//  - Amira .landmarkAscii ("# AmiraMesh 3D ASCII 2.0", one or two sets);
//  - BigWarp landmarks CSV: no header, every field quoted,
//    "Pt-0","true",mx,my,mz,fx,fy,fz (moving point, then fixed point).
// Reading picks the format from the content (the extension only breaks ties)
// and names the file and line of anything malformed. Coordinates are kept as
// written; the caller converts units.
#pragma once
#include <array>
#include <string>
#include <vector>

namespace stackalign {

using Point3 = std::array<double, 3>;

struct NamedPoint {
    std::string name;
    Point3 p{};
};

enum class PointFormat { csv, amira, bigwarp };
std::string to_string(PointFormat f);

// The format of `text` (the contents of `path`).
PointFormat detect_point_format(const std::string& text, const std::string& path);

// The points of a file: CSV rows, the first Amira set, BigWarp's moving points.
// Unnamed points are called Pt-0, Pt-1, ... as BigWarp does.
// `format`, when given, receives the format that was detected.
std::vector<NamedPoint> read_points(const std::string& path, PointFormat* format = nullptr);
std::vector<NamedPoint> parse_points(const std::string& text, const std::string& path);
// The name of unnamed point i (from 0): Pt-i.
std::string default_point_name(std::size_t i);

// A paired set from Amira (Coordinates2) or BigWarp (fixed points); empty if the file has one set.
std::vector<Point3> parse_second_set(const std::string& text, const std::string& path);

// Writers. `active[i]` false marks a pair BigWarp should ignore (an outlier).
std::string amira_landmarks(const std::vector<Point3>& set1, const std::vector<Point3>& set2);
std::string bigwarp_csv(const std::vector<std::string>& names, const std::vector<bool>& active,
                        const std::vector<Point3>& moving, const std::vector<Point3>& fixed);
std::string points_csv(const std::vector<NamedPoint>& points);

// Six decimals at most, trailing zeros dropped ("41", "39.830931"): far below
// a voxel or a nanometre, and short enough to read.
std::string format_number(double v);
// A CSV field, quoted when it holds a comma or a quote.
std::string csv_field(const std::string& s);
// The fields of a CSV line, as csv_field writes them: "quoted" fields (""
// for a quote inside) kept as they are, others trimmed.
std::vector<std::string> split_csv(const std::string& line);

}  // namespace stackalign
