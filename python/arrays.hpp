// numpy arrays <-> the library's frames and volumes, for the Python module.
// Through numpy's Python API (dtype names, nbytes, ctypes.data), not
// pybind11's numpy headers: Debian's pybind11 2.10 reads numpy's C structs
// as numpy 1 laid them out, and numpy 2 changed them (the GPU machine's
// numpy 2 failed with "Bad address" when a stack was written).
#pragma once
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "../src/core/image.hpp"
#include "../src/io/stack_io.hpp"

namespace stackalign::python {

namespace py = pybind11;

struct HostArray {
    py::object array;                // keeps the memory alive
    std::string dtype;               // numpy's name: "uint16", ...
    std::vector<long long> shape;
    std::size_t nbytes = 0;
    unsigned char* data = nullptr;
};

HostArray host_array(const py::object& input);
// A new C-order numpy array of `dtype`, uninitialised.
HostArray new_array(const std::vector<long long>& shape, const std::string& dtype);
// A 3D array (depth, rows, cols) as one volume frame; `what` and `axes` name
// it in errors.
RawFrame volume_of(const py::object& input, const std::string& what, const std::string& axes);
// A (frames, rows, cols) array as the frames a TIFF stack of it would give.
std::shared_ptr<const MemoryStack> held_stack_of(const py::object& input);

// A float64 array to fill, and its first element.
struct Doubles {
    py::object array;
    double* at;
};
Doubles doubles(const std::vector<long long>& shape);

// A TIFF or MRC stack as a (frames, rows, cols) array; and back (TIFF, or
// MRC for MRC names), written atomically.
py::object read_array(const std::string& path);
void write_array(const std::string& path, const py::object& a);

// A str or os.PathLike, as Python's own file functions take.
std::string path_of(const py::object& path);

}  // namespace stackalign::python
