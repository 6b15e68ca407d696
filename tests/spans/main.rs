//! What relock's tracing spans record, in a binary of its own: its one test installs a global
//! subscriber (see the scenario for why).

mod t71_spans_record_outcome_wait_token_and_attempts;
