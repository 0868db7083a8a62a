// The CUDA twin of least_squares.hpp: each half's rows scattered into a
// dense matrix on the GPU, its normal matrix formed there (cuBLAS's syrk)
// with the weight on its diagonal, factored (cuSOLVER's potrf) and kept
// with P and P^T; a residual is then P^T b, the fold into the halves, their
// triangular solves (potrs), the unfold and b - P x, all on the GPU. The
// slab fit forms and factors matrices of up to ~4,000 unknowns per depth
// tried and solves hundreds of columns against each: dense double-
// precision work that took most of the host's share of the default
// tilt-series job, and once that ran here, the products on the host took
// as long as the rest of the stage (`build/bench slab`).
//
// Both libraries are opened at their first use, not linked: loading them
// (cuBLASLt beneath both) cost every process 0.08-0.13 s and 260 MB
// before main, slab fit or not (an empty program linked with them, on the
// 2-core machine), where a lone job's whole CUDA start is 0.2-0.3 s.
#include <cublas_v2.h>
#include <cusolverDn.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>
#include <vector>

#include "../cuda_common.cuh"
#include "least_squares_gpu.hpp"

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

// Columns a thread of sparse_product sums at once: each entry of A is read
// once for them all rather than once a column. A residual of the depth
// scan's deepest support (64 x 32, 405 columns) took 8.1-8.2 ms against
// 12.4 with one column a thread (`build/bench slab`, H100, both builds in
// one call).
constexpr int kProductColumns = 8;

// out = A x (or from - A x), column-major, a thread per row and group of
// kProductColumns columns. Each column's sum in the row's order, rounded at
// every step as the CPU twin's product (least_squares_cpu.cpp) is: the same
// bits.
__global__ void sparse_product(const int* start, const int* column, const double* value, int rows, const double* x,
                               int x_rows, int cols, const double* from, double* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows) return;
    const int first = int(blockIdx.y) * kProductColumns, n = min(kProductColumns, cols - first);
    double sum[kProductColumns];
#pragma unroll
    for (int k = 0; k < kProductColumns; ++k) sum[k] = 0;
    const double* x0 = x + std::size_t(first) * x_rows;
    for (int e = start[i]; e < start[i + 1]; ++e) {
        const double v = value[e];
        const double* xc = x0 + column[e];
#pragma unroll
        for (int k = 0; k < kProductColumns; ++k)
            if (k < n) sum[k] = __dadd_rn(sum[k], __dmul_rn(v, xc[std::size_t(k) * x_rows]));
    }
#pragma unroll
    for (int k = 0; k < kProductColumns; ++k) {
        if (k >= n) break;
        const std::size_t at = std::size_t(first + k) * rows + i;
        out[at] = from ? __dsub_rn(from[at], sum[k]) : sum[k];
    }
}

// c (cells x k) into the halves' bases: even (cells - half rows, the middle
// cell last) and odd (half rows); a thread per (cell pair, column).
__global__ void fold(const double* c, int cells, double r, double* even, double* odd) {
    const int half = cells / 2, i = blockIdx.x * blockDim.x + threadIdx.x;
    const std::size_t k = blockIdx.y;
    const double* cc = c + k * cells;
    if (i < half) {
        const double a = cc[i], t = cc[cells - 1 - i];
        even[k * (cells - half) + i] = __dmul_rn(__dadd_rn(a, t), r);
        odd[k * half + i] = __dmul_rn(__dsub_rn(a, t), r);
    } else if (i == half && cells % 2) {
        even[k * (cells - half) + half] = cc[half];
    }
}

// fold's inverse: x (cells x k) from the halves.
__global__ void unfold(const double* even, const double* odd, int cells, double r, double* x) {
    const int half = cells / 2, i = blockIdx.x * blockDim.x + threadIdx.x;
    const std::size_t k = blockIdx.y;
    double* xc = x + k * cells;
    if (i < half) {
        const double e = even[k * (cells - half) + i], o = odd[k * half + i];
        xc[i] = __dmul_rn(__dadd_rn(e, o), r);
        xc[cells - 1 - i] = __dmul_rn(__dsub_rn(e, o), r);
    } else if (i == half && cells % 2) {
        xc[half] = even[k * (cells - half) + half];
    }
}

// sums[g]: the squares of r's elements g * length .. (g + 1) * length - 1
// summed, a block a group, in a fixed order (the same sums every run).
__global__ void group_sums(const double* r, std::size_t length, double* sums) {
    __shared__ double part[kThreads];
    const double* x = r + blockIdx.x * length;
    double sum = 0;
    for (std::size_t i = threadIdx.x; i < length; i += kThreads) sum = __dadd_rn(sum, __dmul_rn(x[i], x[i]));
    part[threadIdx.x] = sum;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
        if (int(threadIdx.x) < half) part[threadIdx.x] = __dadd_rn(part[threadIdx.x], part[threadIdx.x + half]);
        __syncthreads();
    }
    if (threadIdx.x == 0) sums[blockIdx.x] = part[0];
}

// Page-locked host memory the columns cross through, kept for reuse:
// from pageable memory the copies run at a fraction of the bus's speed,
// and the slab fit sends tens of megabytes each way per residual.
class PinnedPool {
public:
    std::pair<double*, std::size_t> take(std::size_t n) {
        std::lock_guard<std::mutex> lock(m_);
        for (std::size_t i = 0; i < free_.size(); ++i)
            if (free_[i].second >= n) {
                const auto b = free_[i];
                free_.erase(free_.begin() + long(i));
                return b;
            }
        void* p = nullptr;
        CUDA_CHECK(cudaMallocHost(&p, std::max<std::size_t>(n, 1) * sizeof(double)));
        return {static_cast<double*>(p), n};
    }
    void give(std::pair<double*, std::size_t> b) noexcept {
        std::lock_guard<std::mutex> lock(m_);
        free_.push_back(b);
    }

private:
    std::mutex m_;
    std::vector<std::pair<double*, std::size_t>> free_;
};

PinnedPool& pinned_pool() {
    static auto* p = new PinnedPool;  // never freed: the process's end releases it
    return *p;
}

class Pinned {
public:
    explicit Pinned(std::size_t n) : b_(pinned_pool().take(n)) {}
    ~Pinned() { pinned_pool().give(b_); }
    Pinned(const Pinned&) = delete;
    Pinned& operator=(const Pinned&) = delete;
    double* get() const { return b_.first; }

private:
    std::pair<double*, std::size_t> b_;
};

// n doubles copied by the host's threads (one thread's copy of the fit's
// tens of megabytes took longer than their way over the bus).
void copy_on_threads(double* to, const double* from, std::size_t n) {
    constexpr std::size_t kChunk = std::size_t(1) << 16;
    const long long chunks = (long long)((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
    for (long long c = 0; c < chunks; ++c) {
        const std::size_t first = std::size_t(c) * kChunk;
        std::copy(from + first, from + std::min(n, first + kChunk), to + first);
    }
}

template <typename T>
void upload(DeviceBuffer<T>& to, const T* from, std::size_t n, cudaStream_t stream) {
    to.reserve(std::max<std::size_t>(n, 1));
    if (n) CUDA_CHECK(cudaMemcpyAsync(to.get(), from, n * sizeof(T), cudaMemcpyHostToDevice, stream));
}

// A sparse matrix kept on the GPU.
struct DeviceRows {
    int rows = 0, columns = 0;
    DeviceBuffer<int> start, column;
    DeviceBuffer<double> value;
    void give_back_idle() noexcept {
        start.give_back_idle();
        column.give_back_idle();
        value.give_back_idle();
    }
    void upload_from(const CompressedRows& r, cudaStream_t stream) {
        rows = r.rows, columns = r.columns;
        const std::size_t entries = std::size_t(r.start[r.rows]);
        upload(start, r.start, std::size_t(r.rows) + 1, stream);
        upload(column, r.column, entries, stream);
        upload(value, r.value, entries, stream);
    }
    // out = this * x (or from - this * x) for `cols` columns of x.
    void times(const double* x, int cols, const double* from, double* out, cudaStream_t stream) const {
        if (rows == 0 || cols == 0) return;
        const dim3 grid((rows + kThreads - 1) / kThreads, (cols + kProductColumns - 1) / kProductColumns);
        sparse_product<<<grid, kThreads, 0, stream>>>(start.get(), column.get(), value.get(), rows, x, columns, cols,
                                                     from, out);
        CUDA_CHECK_LAUNCH("sparse_product");
    }
};

class CudaLeastSquares final : public GpuLeastSquares {
public:
    CudaLeastSquares(int gpu, int cells) : gpu_(gpu), cells_(cells), info_(1) {}

    // False where a half's normal matrix is not positive definite.
    bool factor(const MirroredRows& s) {
        const Stream stream;
        p_.upload_from(s.p, stream);
        pt_.upload_from(s.pt, stream);
        return factor_half(s.even, s.weight, even_, stream) && factor_half(s.odd, s.weight, odd_, stream);
    }

    void residual(const double* b, int cols, double* residual) const override {
        if (cols <= 0) return;
        select_device(gpu_);
        const Stream stream;
        const std::size_t data = std::size_t(p_.rows) * cols;
        DeviceBuffer<double> db(std::max<std::size_t>(data, 1)), r(std::max<std::size_t>(data, 1));
        const Pinned staged(data);
        upload_columns(b, cols, staged.get(), db.get(), stream);
        residual_on_gpu(db.get(), cols, r.get(), stream);
        CUDA_CHECK(cudaMemcpyAsync(staged.get(), r.get(), data * sizeof(double), cudaMemcpyDeviceToHost, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        db.give_back_idle();
        r.give_back_idle();
        copy_on_threads(residual, staged.get(), data);
    }

    void sums_of_squares(const double* b, int cols, int group, double* sums) const override {
        if (cols <= 0) return;
        select_device(gpu_);
        const Pinned staged(std::size_t(p_.rows) * cols);
        sums_of_squares_written(
            [&](double* columns, void* stream) {
                upload_columns(b, cols, staged.get(), columns, static_cast<cudaStream_t>(stream));
            },
            cols, group, sums);
    }

    void sums_of_squares_written(const WriteColumns& write, int cols, int group, double* sums) const override {
        if (cols <= 0) return;
        select_device(gpu_);
        const Stream stream;
        const std::size_t data = std::size_t(p_.rows) * cols;
        const int groups = cols / group;
        DeviceBuffer<double> db(std::max<std::size_t>(data, 1)), r(std::max<std::size_t>(data, 1)),
            d_sums(static_cast<std::size_t>(groups));
        write(db.get(), static_cast<cudaStream_t>(stream));
        residual_on_gpu(db.get(), cols, r.get(), stream);
        group_sums<<<groups, kThreads, 0, stream>>>(r.get(), std::size_t(p_.rows) * group, d_sums.get());
        CUDA_CHECK_LAUNCH("group_sums");
        CUDA_CHECK(cudaMemcpyAsync(sums, d_sums.get(), std::size_t(groups) * sizeof(double), cudaMemcpyDeviceToHost,
                                   stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        for (DeviceBuffer<double>* b : {&db, &r, &d_sums}) b->give_back_idle();
    }

private:
    // b (host, p.rows x cols) to `db` on the GPU through `staged` (pinned).
    void upload_columns(const double* b, int cols, double* staged, double* db, cudaStream_t stream) const {
        const std::size_t data = std::size_t(p_.rows) * cols;
        copy_on_threads(staged, b, data);
        CUDA_CHECK(cudaMemcpyAsync(db, staged, data * sizeof(double), cudaMemcpyHostToDevice, stream));
    }

    // r = b - P (P^T P + w I)^-1 P^T b on the GPU, b at `db`.
    void residual_on_gpu(const double* db, int cols, double* r, cudaStream_t stream) const {
        const int half = cells_ / 2;
        auto size = [cols](int rows_of) { return std::max<std::size_t>(std::size_t(rows_of) * cols, 1); };
        DeviceBuffer<double> c(size(cells_)), even(size(cells_ - half)), odd(size(half));
        pt_.times(db, cols, nullptr, c.get(), stream);
        const double root_half = std::sqrt(0.5);  // the CPU twin's factor, bit for bit
        const dim3 grid((half + 1 + kThreads - 1) / kThreads, cols);
        fold<<<grid, kThreads, 0, stream>>>(c.get(), cells_, root_half, even.get(), odd.get());
        CUDA_CHECK_LAUNCH("fold");
        {
            const Handle<cusolverDnHandle_t> solver(solver_handles(), gpu_, stream);
            solve(solver, cells_ - half, even_, even.get(), cols);
            solve(solver, half, odd_, odd.get(), cols);
        }
        unfold<<<grid, kThreads, 0, stream>>>(even.get(), odd.get(), cells_, root_half, c.get());
        CUDA_CHECK_LAUNCH("unfold");
        p_.times(c.get(), cols, db, r, stream);
        // The buffers go back to the pool done with, so that the next
        // residual takes them without waiting for the whole device: the
        // depth scan's factors run on other streams meanwhile, and a block
        // given back as pending is served again only after a
        // synchronisation of the device (device_pool.cu).
        CUDA_CHECK(cudaStreamSynchronize(stream));
        for (DeviceBuffer<double>* b : {&c, &even, &odd}) b->give_back_idle();
    }

    bool factor_half(const CompressedRows& r, double weight, DeviceBuffer<double>& l, cudaStream_t stream) {
        const int n = r.columns;
        l.reserve(std::max<std::size_t>(std::size_t(n) * n, 1));
        if (n == 0) return true;
        DeviceRows rows;
        rows.upload_from(r, stream);
        DeviceBuffer<double> dense(std::max<std::size_t>(std::size_t(r.rows) * n, 1));
        CUDA_CHECK(cudaMemsetAsync(dense.get(), 0, sizeof(double) * std::size_t(r.rows) * n, stream));
        scatter_rows<<<(r.rows + kThreads - 1) / kThreads, kThreads, 0, stream>>>(
            rows.start.get(), rows.column.get(), rows.value.get(), r.rows, dense.get());
        CUDA_CHECK_LAUNCH("scatter_rows");
        {
            const Handle<cublasHandle_t> blas(blas_handles(), gpu_, stream);
            const double one = 1, zero = 0;
            check_library(int(libraries().syrk(blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, n, r.rows, &one, dense.get(),
                                          std::max(r.rows, 1), &zero, l.get(), n)),
                          "cublasDsyrk");
        }
        add_to_diagonal<<<(n + kThreads - 1) / kThreads, kThreads, 0, stream>>>(l.get(), n, weight);
        CUDA_CHECK_LAUNCH("add_to_diagonal");
        const Handle<cusolverDnHandle_t> solver(solver_handles(), gpu_, stream);
        int lwork = 0;
        check_library(int(libraries().potrf_size(solver, CUBLAS_FILL_MODE_LOWER, n, l.get(), n, &lwork)),
                      "cusolverDnDpotrf_bufferSize");
        DeviceBuffer<double> work(std::size_t(std::max(lwork, 1)));
        check_library(int(libraries().potrf(solver, CUBLAS_FILL_MODE_LOWER, n, l.get(), n, work.get(), lwork,
                                           info_.get())),
                      "cusolverDnDpotrf");
        int info = 0;
        CUDA_CHECK(cudaMemcpyAsync(&info, info_.get(), sizeof info, cudaMemcpyDeviceToHost, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        rows.give_back_idle();
        dense.give_back_idle();
        work.give_back_idle();
        return info == 0;
    }

    void solve(cusolverDnHandle_t solver, int n, const DeviceBuffer<double>& l, double* x, int cols) const {
        if (n == 0) return;
        check_library(int(libraries().potrs(solver, CUBLAS_FILL_MODE_LOWER, n, cols, l.get(), n, x, n, info_.get())),
                      "cusolverDnDpotrs");
    }

    int gpu_, cells_;
    DeviceRows p_, pt_;
    DeviceBuffer<double> even_, odd_;  // the halves' lower factors
    DeviceBuffer<int> info_;
};

}  // namespace

void open_least_squares(int gpu, int handles) {
    select_device(gpu);
    libraries();
    std::vector<cusolverDnHandle_t> solvers;
    std::vector<cublasHandle_t> blas;
    for (int i = 0; i < handles; ++i) solvers.push_back(solver_handles().take(gpu)), blas.push_back(blas_handles().take(gpu));
    for (auto h : solvers) solver_handles().give(h, gpu);
    for (auto h : blas) blas_handles().give(h, gpu);
}

std::unique_ptr<GpuLeastSquares> factor_on_gpu(const MirroredRows& system, int gpu) {
    select_device(gpu);  // the factors' memory on `gpu`
    auto c = std::make_unique<CudaLeastSquares>(gpu, system.p.columns);
    if (!c->factor(system)) return nullptr;
    return c;
}

}  // namespace stackalign::cuda
