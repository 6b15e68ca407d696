//! What one handoff costs, counted exactly, in a binary of its own: its one test installs a
//! global subscriber for relock's handoff steps (tracing caches each callsite's interest
//! process-wide, so a thread-local subscriber beside other tests in one process saw no steps
//! at all: found by review).

mod t99_one_handoff_costs_one_wake_up_and_only_the_server_calls_it_needs;
