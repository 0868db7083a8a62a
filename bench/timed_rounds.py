"""Calls timed in rounds, for the bench scripts that time jobs one after
another in one process or one process each (resident.py, held_arrays.py,
held_landmarks.py): every item once a round, in the order given, so that
the machine's drift during a run touches them alike.
"""
import statistics
import time


def timed_rounds(rounds, items, call):
    """{item: [(seconds, call(item)), ...]}: a call's wall time and what it returned, a round each."""
    calls = {item: [] for item in items}
    for _ in range(rounds):
        for item in items:
            t = time.perf_counter()
            result = call(item)
            calls[item].append((time.perf_counter() - t, result))
    return calls


def spread(seconds):
    """'median [lowest-highest]' of some timings, as the tables print them."""
    seconds = list(seconds)
    return f"{statistics.median(seconds):.3f} [{min(seconds):.3f}-{max(seconds):.3f}]"
