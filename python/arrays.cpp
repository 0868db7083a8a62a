// numpy arrays <-> frames (arrays.hpp says why through numpy's Python API).
#include "arrays.hpp"

#include <cstring>
#include <sstream>

#include "../src/core/atomic_file.hpp"
#include "../src/io/mrc_io.hpp"
#include "../src/io/tiff_io.hpp"

namespace stackalign::python {

HostArray host_array(const py::object& input) {
    HostArray h;
    h.array = py::module_::import("numpy").attr("ascontiguousarray")(input);
    h.dtype = h.array.attr("dtype").attr("name").cast<std::string>();
    h.shape = h.array.attr("shape").cast<std::vector<long long>>();
    h.nbytes = h.array.attr("nbytes").cast<std::size_t>();
    h.data = reinterpret_cast<unsigned char*>(h.array.attr("ctypes").attr("data").cast<std::uintptr_t>());
    return h;
}

HostArray new_array(const std::vector<long long>& shape, const std::string& dtype) {
    py::tuple dims(shape.size());
    for (std::size_t k = 0; k < shape.size(); ++k) dims[k] = py::int_(shape[k]);
    return host_array(py::module_::import("numpy").attr("empty")(dims, py::arg("dtype") = dtype));
}

// numpy's dtype names are the pixel types' own (to_string).
PixelType pixel_type_of(const HostArray& a, const std::string& what) {
    for (PixelType t : {PixelType::u8, PixelType::u16, PixelType::i16, PixelType::i32, PixelType::f32})
        if (a.dtype == to_string(t)) return t;
    throw py::type_error(what + ": dtype " + a.dtype +
                         " is not supported; expected uint8, uint16, int16, int32 or float32 (the pixel types the "
                         "CLI reads; convert with .astype(numpy.float32))");
}

// A 3D array (depth, rows, cols) with at least one pixel a slice.
HostArray array_3d(const py::object& input, const std::string& what, const std::string& axes) {
    HostArray a = host_array(input);
    std::ostringstream shape;
    for (std::size_t k = 0; k < a.shape.size(); ++k) shape << (k ? ", " : "") << a.shape[k];
    if (a.shape.size() != 3)
        throw py::value_error(what + ": expected a 3D array " + axes + ", got a " + std::to_string(a.shape.size()) +
                              "D array of shape (" + shape.str() + ")");
    if (a.shape[1] < 1 || a.shape[2] < 1)
        throw py::value_error(what + ": expected frames of at least 1 x 1 pixels, got shape (" + shape.str() + ")");
    return a;
}

// Slice z of a contiguous (depth, height, width) volume of `type` as a frame.
RawFrame slice_of(const unsigned char* volume, PixelType type, int width, int height, int z) {
    const std::size_t bytes = std::size_t(width) * height * bytes_per_pixel(type);
    const unsigned char* from = volume + std::size_t(z) * bytes;
    return RawFrame{type, width, height, 1, std::vector<unsigned char>(from, from + bytes)};
}

// A 3D array (depth, rows, cols) as one volume frame.
RawFrame volume_of(const py::object& input, const std::string& what, const std::string& axes) {
    const HostArray a = array_3d(input, what, axes);
    RawFrame f{pixel_type_of(a, what), int(a.shape[2]), int(a.shape[1]), int(a.shape[0]), {}};
    f.bytes.assign(a.data, a.data + a.nbytes);
    return f;
}

std::shared_ptr<const MemoryStack> held_stack_of(const py::object& input) {
    const HostArray a = array_3d(input, "stack", "(frames, rows, cols)");
    auto held = std::make_shared<MemoryStack>();
    StackInfo& info = held->info;
    info.format = "tiff";  // what the aligned stack is written as where `dir` keeps it
    info.type = pixel_type_of(a, "stack");
    info.frames = int(a.shape[0]);
    info.height = int(a.shape[1]);
    info.width = int(a.shape[2]);
    for (int z = 0; z < info.frames; ++z)
        held->frames.push_back(std::make_shared<const RawFrame>(slice_of(a.data, info.type, info.width, info.height, z)));
    return held;
}

py::object array_of(const std::vector<RawFrame>& frames) {
    if (frames.empty()) return new_array({0, 0, 0}, "float32").array;
    const RawFrame& first = frames.front();
    HostArray out = new_array({(long long)(frames.size()), first.height, first.width}, to_string(first.type));
    unsigned char* p = out.data;
    for (const RawFrame& f : frames) {
        std::memcpy(p, f.bytes.data(), f.bytes.size());
        p += f.bytes.size();
    }
    return out.array;
}

Doubles doubles(const std::vector<long long>& shape) {
    const HostArray h = new_array(shape, "float64");
    return {h.array, reinterpret_cast<double*>(h.data)};
}

// A volume's z slices as frames.
std::vector<RawFrame> slices_of(const RawFrame& v) {
    std::vector<RawFrame> frames;
    for (int z = 0; z < v.depth; ++z) frames.push_back(slice_of(v.bytes.data(), v.type, v.width, v.height, z));
    return frames;
}

py::object read_array(const std::string& path) {
    return array_of(is_mrc_path(path) ? read_mrc_stack(path).frames : slices_of(read_tiff_volume(path)));
}

void write_array(const std::string& path, const py::object& a) {
    const RawFrame v = volume_of(a, "write", "(frames, rows, cols)");
    write_atomically(path, [&](const std::string& tmp) {
        if (!is_mrc_path(path)) return write_tiff_volume(tmp, v);
        write_mrc_stack(tmp, slices_of(v), mrc_mode_for(v.type), 0.0, false);
    });
}

std::string path_of(const py::object& path) { return py::module_::import("os").attr("fspath")(path).cast<std::string>(); }

}  // namespace stackalign::python
