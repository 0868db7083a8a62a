#include "frame_tables.hpp"

#include <cmath>
#include <cstdio>

#include "../alignment/motion.hpp"

namespace stackalign {

namespace {
std::string fmt(const char* f, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}
}  // namespace

std::string shifts_csv(const std::vector<FrameResult>& frames, bool rotation, bool projection) {
    auto num = [](const char* f, double v) { return std::isfinite(v) ? fmt(f, v) : std::string(); };
    std::string out = rotation ? "frame,dx,dy,angle,scale,neighbour_dx,neighbour_dy,neighbour_angle,mi,sharpness,confidence,tilt,"
                               : "frame,dx,dy,neighbour_dx,neighbour_dy,mi,sharpness,confidence,tilt,";
    out += projection ? "coarse_dx,coarse_dy,projection_residual,status\n" : "status\n";
    for (std::size_t k = 0; k < frames.size(); ++k) {
        const FrameResult& f = frames[k];
        out += std::to_string(k) + "," + fmt("%.4f", f.offset.dx) + "," + fmt("%.4f", f.offset.dy) + ",";
        if (rotation) out += fmt("%.5f", angle_of(f.offset)) + "," + fmt("%.6f", scale_of(f.offset)) + ",";
        out += num("%.4f", f.neighbour.dx) + "," + num("%.4f", f.neighbour.dy) + ",";
        if (rotation) out += num("%.5f", f.neighbour.finite() ? angle_of(f.neighbour) : NAN) + ",";
        out += num("%.6f", f.mi) + "," + num("%.3f", f.sharpness) + "," + num("%.3f", f.confidence) + "," + num("%.2f", f.tilt) + ",";
        if (projection)
            out += fmt("%.4f", f.coarse.dx) + "," + fmt("%.4f", f.coarse.dy) + "," + num("%.4f", f.projection_residual) + ",";
        out += f.status + "\n";
    }
    return out;
}

std::string xf_line(double a11, double a12, double a21, double a22, double dx, double dy) {
    char buf[128];
    // Avoid printing "-0.000" for values that round to zero.
    auto z = [](double v, double q) { return std::fabs(v) < q ? 0.0 : v; };
    std::snprintf(buf, sizeof buf, "%12.7f%12.7f%12.7f%12.7f%12.3f%12.3f\n", z(a11, 5e-8), z(a12, 5e-8), z(a21, 5e-8),
                  z(a22, 5e-8), z(dx, 5e-4), z(dy, 5e-4));
    return buf;
}

std::string xf_line(const Transform& t) { return xf_line(t.a11, t.a12, t.a21, t.a22, t.dx, t.dy); }

std::string imod_xf(const std::vector<FrameResult>& frames) {
    std::string out;
    for (const FrameResult& f : frames) out += xf_line(f.offset.inverse());
    return out;
}

std::string imod_tlt(const std::vector<FrameResult>& frames) {
    std::string out;
    char buf[32];
    for (const FrameResult& f : frames) {
        std::snprintf(buf, sizeof buf, "%.3f\n", f.tilt);
        out += buf;
    }
    return out;
}

std::string imod_prexf(const std::vector<FrameResult>& frames) {
    std::string out;
    for (std::size_t k = 0; k < frames.size(); ++k) {
        // onto the previous view: T_k = R after T_(k-1), so R = T_(k-1)^-1 then T_k
        const Transform onto_previous = k ? frames[k - 1].offset.inverse().then(frames[k].offset) : Transform{};
        out += xf_line(onto_previous.inverse());
    }
    return out;
}

}  // namespace stackalign
