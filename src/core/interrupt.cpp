#include "interrupt.hpp"

#include <csignal>
#include <string>

#include "error.hpp"

namespace stackalign {

namespace {
volatile std::sig_atomic_t received = 0;
extern "C" void on_signal(int signal) { received = signal; }
}  // namespace

void install_interrupt_handlers() {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
}

bool interrupt_requested() { return received != 0; }

void clear_interrupt() { received = 0; }

void throw_if_interrupted() {
    if (received)
        throw Interrupted(std::string("interrupted by ") + (received == SIGTERM ? "SIGTERM" : "SIGINT") +
                          "; the job in progress was abandoned (no run.json written for it)");
}

}  // namespace stackalign
