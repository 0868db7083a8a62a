// How fast this machine's page cache takes a file: N MB written by 1 and by
// 4 threads (pwrite at each thread's offsets, 4 MB calls) into a new file,
// the floor under the aligned stack's write stage. Usage: page_cache_write DIR MB
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
    const std::string path = std::string(argc > 1 ? argv[1] : ".") + "/page_cache_write.tmp";
    const std::size_t total = std::size_t(argc > 2 ? std::atoi(argv[2]) : 128) << 20, chunk = std::size_t(4) << 20;
    std::vector<char> data(chunk, 7);
    for (int threads : {1, 4, 1, 4}) {
        unlink(path.c_str());
        const int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0644);
        const auto t = std::chrono::steady_clock::now();
        std::vector<std::thread> pool;
        for (int k = 0; k < threads; ++k)
            pool.emplace_back([&, k] {
                for (std::size_t at = k * chunk; at < total; at += threads * chunk)
                    if (pwrite(fd, data.data(), chunk, off_t(at)) != off_t(chunk)) std::perror("pwrite");
            });
        for (std::thread& p : pool) p.join();
        close(fd);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
        std::printf("%zu MB, %d thread%s: %.3f s, %.1f GB/s\n", total >> 20, threads, threads > 1 ? "s" : "", s, total / s / 1e9);
    }
    unlink(path.c_str());
}
