// SIGINT / SIGTERM: the handler only sets a flag; long loops look at it
// between steps (a pair, a group of points, a job) and stop by throwing
// Interrupted, so files being written are abandoned through the normal
// error path (temporary names removed, run.json never written).
#pragma once

namespace stackalign {

void install_interrupt_handlers();
// Forgets a signal that arrived (the Python module, after it has turned one
// into KeyboardInterrupt).
void clear_interrupt();
bool interrupt_requested();
// Throws Interrupted naming the signal when one arrived.
void throw_if_interrupted();

}  // namespace stackalign
