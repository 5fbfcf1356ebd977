//! `as_any()` for every component, written once.

use std::any::Any;

/// Gives every `'static` type an `as_any()`, so that code holding a `dyn Scorer`,
/// `dyn Slicer` or `dyn Placer` can recognise a built-in component by downcasting
/// (policy reflection, analytics). The component traits have it as a supertrait and the
/// blanket implementation below covers every implementor: a component never writes it.
///
/// This trait lives in a private module on purpose, and the crate names it only by its
/// path: where it is not imported, a call such as `pipeline.scorer().as_any()` always
/// resolves through the trait object to the component itself. Were it in scope, method
/// resolution would pick the implementation of the `Arc` around the component instead,
/// and every downcast would fail (the scorer tests would catch it).
pub trait AsAny: Any {
    /// The component as `&dyn Any`, for `downcast_ref` / `is`.
    fn as_any(&self) -> &dyn Any;
}

impl<T: Any> AsAny for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
}
