//! Finding a kind's own type behind a shared `dyn` trait (a channel's [`Waking`] state, a
//! client's kind settings): the shared code stores the trait object, and only the kind that
//! made it asks for its concrete type back.
//!
//! [`Waking`]: crate::hold::wake::Waking

use std::any::Any;

/// A value that can be asked for its concrete type (written once, for every type; a trait
/// object whose trait extends this one can then be downcast).
pub(crate) trait AsAny {
    fn as_any(&self) -> &dyn Any;
}

impl<T: Any> AsAny for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
}
