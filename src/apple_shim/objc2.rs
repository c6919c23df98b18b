//! Mirror of the `objc2` 0.6.5 items the macOS leaves use (type checking only).

/// Reference counting (`objc2 0.6.5 src/rc/mod.rs`).
pub mod rc {
    use std::marker::PhantomData;
    use std::ops::Deref;

    use super::super::never;
    use super::ClassType;

    /// Mirrors `objc2 0.6.5 src/rc/retained.rs` `Retained<T>` (a strong reference; not `Send`).
    pub struct Retained<T: ?Sized>(PhantomData<*const T>);

    impl<T: ?Sized> Deref for Retained<T> {
        type Target = T;
        fn deref(&self) -> &T {
            never()
        }
    }

    impl<T: ClassType + 'static> Retained<T>
    where
        T::Super: 'static,
    {
        /// Mirrors `objc2 0.6.5 src/rc/retained.rs` `Retained::into_super`.
        pub fn into_super(self) -> Retained<T::Super> {
            never()
        }
    }

    /// Mirrors `objc2 0.6.5 src/rc/allocated.rs` `Allocated<T>` (an allocated, uninitialized object).
    pub struct Allocated<T: ?Sized>(PhantomData<*const T>);
}

/// The runtime types (`objc2 0.6.5 src/runtime/mod.rs`).
pub mod runtime {
    use std::ffi::CStr;
    use std::marker::PhantomData;

    use super::super::never;
    use super::{ClassType, DowncastTarget};

    /// Mirrors `objc2 0.6.5 src/runtime/mod.rs` `AnyObject`.
    pub struct AnyObject(PhantomData<*const u8>);

    impl AnyObject {
        /// Mirrors `objc2 0.6.5 src/runtime/mod.rs` `AnyObject::downcast_ref`.
        pub fn downcast_ref<T: DowncastTarget>(&self) -> Option<&T> {
            never()
        }
    }

    /// Mirrors `objc2 0.6.5 src/runtime/mod.rs` `AnyClass`.
    pub struct AnyClass(PhantomData<*const u8>);

    impl AnyClass {
        /// Mirrors `objc2 0.6.5 src/runtime/mod.rs` `AnyClass::get`.
        pub fn get(name: &CStr) -> Option<&'static Self> {
            let _ = name;
            never()
        }
    }

    /// Mirrors `objc2 0.6.5 src/runtime/protocol_object.rs` `ProtocolObject<P>`.
    pub struct ProtocolObject<P: ?Sized>(PhantomData<*const P>);

    impl<P: ?Sized> ProtocolObject<P> {
        /// Mirrors `objc2 0.6.5 src/runtime/protocol_object.rs` `ProtocolObject::from_ref`.
        pub fn from_ref<T: ?Sized>(obj: &T) -> &Self {
            let _ = obj;
            never()
        }
    }

    impl<P: ?Sized + 'static> AsRef<AnyObject> for ProtocolObject<P> {
        fn as_ref(&self) -> &AnyObject {
            never()
        }
    }

    /// Mirrors `objc2 0.6.5 src/runtime/nsobject.rs` `NSObject` (re-exported by objc2-foundation).
    pub struct NSObject(PhantomData<*const u8>);

    impl ClassType for NSObject {
        type Super = AnyObject;
    }
}

/// Mirrors `objc2 0.6.5 src/top_level_traits.rs` `ClassType` (only its `Super`).
pub trait ClassType {
    /// The superclass.
    type Super;
}

/// Mirrors `objc2 0.6.5 src/top_level_traits.rs` `AllocAnyThread`.
pub trait AllocAnyThread {
    /// Mirrors `AllocAnyThread::alloc`.
    fn alloc() -> rc::Allocated<Self>
    where
        Self: Sized,
    {
        super::never()
    }
}

/// Mirrors `objc2 0.6.5 src/top_level_traits.rs` `DowncastTarget`.
pub trait DowncastTarget {}
