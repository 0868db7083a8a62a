#include "stack_io.hpp"

#include "mrc_io.hpp"
#include "tiff_io.hpp"

namespace stackalign {

StackInfo probe_stack_file(const std::string& path) {
    StackInfo s;
    if (is_mrc_path(path)) {
        const MrcInfo m = probe_mrc(path);
        s.format = "mrc";
        s.frames = m.nz;
        s.width = m.nx;
        s.height = m.ny;
        s.type = m.type;
        s.pixel_size = m.pixel_size[0];
        s.mrc_mode = m.mode;
        s.signed_bytes = m.signed_bytes;
    } else {
        const TiffInfo t = probe_tiff(path);
        s.format = "tiff";
        s.frames = t.pages;
        s.width = t.width;
        s.height = t.height;
        s.type = t.type;
    }
    return s;
}

Stack read_stack_file(const std::string& path) {
    return is_mrc_path(path) ? read_mrc_stack(path) : read_tiff_stack(path);
}

void write_stack_file(const std::string& path, const std::vector<RawFrame>& frames, const std::string& format,
                      const StackInfo& like) {
    if (format != "mrc") {
        write_tiff_stack(path, frames);
        return;
    }
    const PixelType type = frames.empty() ? PixelType::u8 : frames[0].type;
    // The input's mode when the frames still hold its pixel type (mode 0
    // signed and 12 widen to i16 / f32 on reading and narrow back here).
    const bool keep = like.format == "mrc" && like.type == type;
    write_mrc_stack(path, frames, keep ? like.mrc_mode : mrc_mode_for(type), like.pixel_size,
                    keep && like.signed_bytes);
}

}  // namespace stackalign
