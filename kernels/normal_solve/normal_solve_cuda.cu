// The CUDA twin of normal_solve.hpp: R scattered into a dense matrix on the
// GPU, R^T R formed there (cuBLAS's syrk) with the weight on its diagonal,
// factored (cuSOLVER's potrf) and kept, and solved by its two triangular
// solves (potrs) for each batch of columns. The slab fit forms and factors
// a matrix of up to ~4,000 unknowns per depth tried and solves hundreds of
// columns against each: dense double-precision work that took most of the
// host's share of the default tilt-series job (`build/bench slab`).
//
// Both libraries are opened at their first use, not linked: loading them
// (cuBLASLt beneath both) cost every process 0.08-0.13 s and 260 MB
// before main, slab fit or not (an empty program linked with them, on the
// 2-core machine), where a lone job's whole CUDA start is 0.2-0.3 s.
#include <cublas_v2.h>
#include <cusolverDn.h>
#include <dlfcn.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "../cuda_common.cuh"
#include "normal_solve_gpu.hpp"

namespace stackalign::cuda {
namespace {

constexpr int kThreads = 256;

void check_library(int status, const char* what) {
    if (status != 0) throw InternalError(std::string("CUDA library error ") + std::to_string(status) + " in " + what);
}

#define STACKALIGN_STR2(x) #x
#define STACKALIGN_STR(x) STACKALIGN_STR2(x)

// The calls this file makes, from the libraries of the toolkit it was
// built with (their major versions in the names).
struct Libraries {
    decltype(&cusolverDnCreate) solver_create = nullptr;
    decltype(&cusolverDnSetStream) solver_stream = nullptr;
    decltype(&cusolverDnDpotrf_bufferSize) potrf_size = nullptr;
    decltype(&cusolverDnDpotrf) potrf = nullptr;
    decltype(&cusolverDnDpotrs) potrs = nullptr;
    decltype(&cublasCreate_v2) blas_create = nullptr;
    decltype(&cublasSetStream_v2) blas_stream = nullptr;
    decltype(&cublasDsyrk_v2) syrk = nullptr;
};

void* open_library(const std::string& name) {
    // The RUNPATH the build gives the program and the Python module first,
    // then the toolkit's folder it was built against.
    if (void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
#ifdef STACKALIGN_CUDA_LIBDIR
    if (void* h = dlopen((std::string(STACKALIGN_CUDA_LIBDIR) + "/" + name).c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
#endif
    throw UnsupportedError("the slab fit on the GPU needs " + name + " (the CUDA toolkit's, as built against): " +
                           dlerror() + "; set [alignment] slab_fit = false or use --backend cpu");
}

template <typename F>
void find(void* library, const char* symbol, F& into) {
    into = reinterpret_cast<F>(dlsym(library, symbol));
    if (!into) throw UnsupportedError(std::string("the CUDA library has no ") + symbol + ": not the toolkit built against");
}

const Libraries& libraries() {
    static const Libraries l = [] {
        Libraries x;
        void* blas = open_library("libcublas.so." STACKALIGN_STR(CUBLAS_VER_MAJOR));
        void* solver = open_library("libcusolver.so." STACKALIGN_STR(CUSOLVER_VER_MAJOR));
        find(solver, "cusolverDnCreate", x.solver_create);
        find(solver, "cusolverDnSetStream", x.solver_stream);
        find(solver, "cusolverDnDpotrf_bufferSize", x.potrf_size);
        find(solver, "cusolverDnDpotrf", x.potrf);
        find(solver, "cusolverDnDpotrs", x.potrs);
        find(blas, "cublasCreate_v2", x.blas_create);
        find(blas, "cublasSetStream_v2", x.blas_stream);
        find(blas, "cublasDsyrk_v2", x.syrk);
        return x;
    }();
    return l;
}

// Library handles kept for reuse, per GPU: making one costs milliseconds,
// and the slab fit forms a matrix per depth tried. Never destroyed: the
// process's end releases them with its contexts.
template <typename H>
class HandlePool {
public:
    using Create = int (*)(H*);
    explicit HandlePool(Create create) : create_(create) {}
    H take(int gpu) {
        std::lock_guard<std::mutex> lock(m_);
        for (std::size_t i = 0; i < free_.size(); ++i)
            if (free_[i].second == gpu) {
                const H h = free_[i].first;
                free_.erase(free_.begin() + long(i));
                return h;
            }
        H h{};
        check_library(create_(&h), "creating a handle");
        return h;
    }
    void give(H h, int gpu) noexcept {
        std::lock_guard<std::mutex> lock(m_);
        free_.emplace_back(h, gpu);
    }

private:
    Create create_;
    std::mutex m_;
    std::vector<std::pair<H, int>> free_;
};

int create_solver(cusolverDnHandle_t* h) { return int(libraries().solver_create(h)); }
int create_blas(cublasHandle_t* h) { return int(libraries().blas_create(h)); }
HandlePool<cusolverDnHandle_t>& solver_handles() {
    static auto* p = new HandlePool<cusolverDnHandle_t>(create_solver);
    return *p;
}
HandlePool<cublasHandle_t>& blas_handles() {
    static auto* p = new HandlePool<cublasHandle_t>(create_blas);
    return *p;
}

// A pooled handle of `gpu`, working on `stream`, for one scope.
template <typename H>
class Handle {
public:
    Handle(HandlePool<H>& pool, int gpu, cudaStream_t stream) : pool_(pool), gpu_(gpu), h_(pool.take(gpu)) {
        if constexpr (std::is_same_v<H, cusolverDnHandle_t>)
            check_library(int(libraries().solver_stream(h_, stream)), "cusolverDnSetStream");
        else
            check_library(int(libraries().blas_stream(h_, stream)), "cublasSetStream");
    }
    ~Handle() { pool_.give(h_, gpu_); }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    operator H() const { return h_; }

private:
    HandlePool<H>& pool_;
    int gpu_;
    H h_;
};

// Row r of R into column-major `dense` (rows x columns, zeroed): a thread a
// row, its columns distinct.
__global__ void scatter_rows(const int* start, const int* column, const double* value, int rows, double* dense) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    for (int e = start[r]; e < start[r + 1]; ++e) dense[std::size_t(column[e]) * rows + r] = value[e];
}

__global__ void add_to_diagonal(double* a, int n, double weight) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[std::size_t(i) * n + i] += weight;
}

template <typename T>
void upload(DeviceBuffer<T>& to, const T* from, std::size_t n, cudaStream_t stream) {
    to.reserve(std::max<std::size_t>(n, 1));
    if (n) CUDA_CHECK(cudaMemcpyAsync(to.get(), from, n * sizeof(T), cudaMemcpyHostToDevice, stream));
}

class CudaCholesky final : public GpuCholesky {
public:
    CudaCholesky(int n, int gpu) : n_(n), gpu_(gpu), l_(std::max<std::size_t>(std::size_t(n) * n, 1)), info_(1) {}

    // False where R^T R + weight I is not positive definite.
    bool factor(const CompressedRows& r, double weight) {
        const Stream stream;
        const std::size_t entries = std::size_t(r.start[r.rows]);
        DeviceBuffer<int> start, column;
        DeviceBuffer<double> value, dense(std::max<std::size_t>(std::size_t(r.rows) * n_, 1));
        upload(start, r.start, std::size_t(r.rows) + 1, stream);
        upload(column, r.column, entries, stream);
        upload(value, r.value, entries, stream);
        CUDA_CHECK(cudaMemsetAsync(dense.get(), 0, sizeof(double) * std::size_t(r.rows) * n_, stream));
        scatter_rows<<<(r.rows + kThreads - 1) / kThreads, kThreads, 0, stream>>>(start.get(), column.get(),
                                                                                value.get(), r.rows, dense.get());
        CUDA_CHECK_LAUNCH("scatter_rows");
        {
            const Handle<cublasHandle_t> blas(blas_handles(), gpu_, stream);
            const double one = 1, zero = 0;
            check_library(int(libraries().syrk(blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, n_, r.rows, &one, dense.get(),
                                          std::max(r.rows, 1), &zero, l_.get(), n_)),
                          "cublasDsyrk");
        }
        add_to_diagonal<<<(n_ + kThreads - 1) / kThreads, kThreads, 0, stream>>>(l_.get(), n_, weight);
        CUDA_CHECK_LAUNCH("add_to_diagonal");
        const Handle<cusolverDnHandle_t> solver(solver_handles(), gpu_, stream);
        int lwork = 0;
        check_library(int(libraries().potrf_size(solver, CUBLAS_FILL_MODE_LOWER, n_, l_.get(), n_, &lwork)),
                      "cusolverDnDpotrf_bufferSize");
        DeviceBuffer<double> work(std::size_t(std::max(lwork, 1)));
        check_library(int(libraries().potrf(solver, CUBLAS_FILL_MODE_LOWER, n_, l_.get(), n_, work.get(), lwork,
                                           info_.get())),
                      "cusolverDnDpotrf");
        int info = 0;
        CUDA_CHECK(cudaMemcpyAsync(&info, info_.get(), sizeof info, cudaMemcpyDeviceToHost, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        return info == 0;
    }

    void solve_in_place(double* x, int cols) const override {
        if (cols <= 0 || n_ == 0) return;
        select_device(gpu_);
        const Stream stream;
        const Handle<cusolverDnHandle_t> solver(solver_handles(), gpu_, stream);
        const std::size_t count = std::size_t(n_) * cols;
        DeviceBuffer<double> b;
        upload(b, x, count, stream);
        check_library(int(libraries().potrs(solver, CUBLAS_FILL_MODE_LOWER, n_, cols, l_.get(), n_, b.get(), n_,
                                           info_.get())),
                      "cusolverDnDpotrs");
        CUDA_CHECK(cudaMemcpyAsync(x, b.get(), count * sizeof(double), cudaMemcpyDeviceToHost, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
    }

private:
    int n_, gpu_;
    DeviceBuffer<double> l_;
    DeviceBuffer<int> info_;
};

}  // namespace

std::unique_ptr<GpuCholesky> factor_on_gpu(const CompressedRows& r, double weight, int gpu) {
    select_device(gpu);  // the factor's memory on `gpu`
    auto c = std::make_unique<CudaCholesky>(r.columns, gpu);
    if (!c->factor(r, weight)) return nullptr;
    return c;
}

}  // namespace stackalign::cuda
