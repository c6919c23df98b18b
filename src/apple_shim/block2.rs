//! Mirror of the `block2` 0.6.2 items the macOS leaves use (type checking only).

use std::marker::PhantomData;
use std::ops::Deref;

use super::never;

/// Mirrors `block2 0.6.2 src/block.rs` `Block<F>`.
pub struct Block<F: ?Sized>(PhantomData<*const F>);

/// Mirrors `block2 0.6.2 src/lib.rs` `DynBlock<F>`.
pub type DynBlock<F> = Block<F>;

/// Mirrors `block2 0.6.2 src/traits.rs` `IntoBlock` (the closure → block type mapping; the
/// mirror covers the two-argument closures the leaves use).
pub trait IntoBlock<'f, A, R> {
    /// The `dyn Fn` type of the block.
    type Dyn: ?Sized;
}

impl<'f, A0, A1, R, C> IntoBlock<'f, (A0, A1), R> for C
where
    C: Fn(A0, A1) -> R + 'f,
{
    type Dyn = dyn Fn(A0, A1) -> R + 'f;
}

/// Mirrors `block2 0.6.2 src/rc_block.rs` `RcBlock<F>`.
pub struct RcBlock<F: ?Sized>(PhantomData<*const F>);

impl<F: ?Sized> RcBlock<F> {
    /// Mirrors `block2 0.6.2 src/rc_block.rs` `RcBlock::new`.
    pub fn new<'f, A, R, Closure>(closure: Closure) -> Self
    where
        Closure: IntoBlock<'f, A, R, Dyn = F>,
    {
        let _ = closure;
        never()
    }
}

impl<F: ?Sized> Deref for RcBlock<F> {
    type Target = Block<F>;
    fn deref(&self) -> &Block<F> {
        never()
    }
}
