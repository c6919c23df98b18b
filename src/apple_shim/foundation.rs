//! Mirror of the `objc2-foundation` 0.3.2 items the macOS leaves use (type checking only).

use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use super::never;
use super::objc2::rc::Retained;
use super::objc2::runtime::AnyObject;

/// Mirrors `objc2-foundation 0.3.2 src/generated/NSObjCRuntime.rs` `NSInteger`.
pub type NSInteger = isize;

/// Mirrors `objc2-foundation 0.3.2 src/generated/NSString.rs` `NSString`.
pub struct NSString(PhantomData<*const u8>);

impl NSString {
    /// Mirrors `objc2-foundation 0.3.2 src/string.rs` `NSString::from_str`.
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(string: &str) -> Retained<Self> {
        let _ = string;
        never()
    }
}

/// Mirrors `objc2-foundation 0.3.2 src/string.rs` `impl Display for NSString`.
impl fmt::Display for NSString {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        never()
    }
}

/// Mirrors `objc2-foundation 0.3.2 src/generated/NSURL.rs` `NSURL`.
pub struct NSURL(PhantomData<*const u8>);

impl NSURL {
    /// Mirrors `objc2-foundation 0.3.2 src/url.rs` `NSURL::from_directory_path`.
    pub fn from_directory_path<P: AsRef<Path>>(path: P) -> Option<Retained<Self>> {
        let _ = path;
        never()
    }
    /// Mirrors `objc2-foundation 0.3.2 src/url.rs` `NSURL::to_file_path`.
    pub fn to_file_path(&self) -> Option<PathBuf> {
        never()
    }
}

/// Mirrors `objc2-foundation 0.3.2 src/generated/NSValue.rs` `NSNumber`.
pub struct NSNumber(PhantomData<*const u8>);

impl NSNumber {
    /// Mirrors `objc2-foundation 0.3.2 src/number.rs` `NSNumber::new_isize`.
    pub fn new_isize(val: isize) -> Retained<Self> {
        let _ = val;
        never()
    }
    /// Mirrors `objc2-foundation 0.3.2 src/number.rs` `NSNumber::as_isize`.
    pub fn as_isize(&self) -> isize {
        never()
    }
}

/// Mirrors `objc2-foundation 0.3.2 src/generated/NSArray.rs` `NSArray<ObjectType>`.
pub struct NSArray<ObjectType: ?Sized = AnyObject>(PhantomData<*const ObjectType>);

impl<ObjectType> NSArray<ObjectType> {
    /// Mirrors `objc2-foundation 0.3.2 src/array.rs` `NSArray::from_retained_slice`.
    pub fn from_retained_slice(slice: &[Retained<ObjectType>]) -> Retained<Self> {
        let _ = slice;
        never()
    }
    /// Mirrors `objc2-foundation 0.3.2 src/array.rs` `NSArray::to_vec`.
    pub fn to_vec(&self) -> Vec<Retained<ObjectType>> {
        never()
    }
}

/// Mirrors `objc2-foundation 0.3.2 src/generated/NSDictionary.rs` `NSDictionary<KeyType, ObjectType>`.
pub struct NSDictionary<KeyType: ?Sized = AnyObject, ObjectType: ?Sized = AnyObject>(
    PhantomData<(*const KeyType, *const ObjectType)>,
);

impl<KeyType, ObjectType> NSDictionary<KeyType, ObjectType> {
    /// Mirrors `objc2-foundation 0.3.2 src/dictionary.rs` `NSDictionary::from_retained_objects`
    /// (the real `CopiedKey: NSCopying` bound is left out).
    pub fn from_retained_objects<CopiedKey>(
        keys: &[&CopiedKey],
        objects: &[Retained<ObjectType>],
    ) -> Retained<Self> {
        let _ = (keys, objects);
        never()
    }
    /// Mirrors `objc2-foundation 0.3.2 src/dictionary.rs` `NSDictionary::to_vecs`.
    pub fn to_vecs(&self) -> (Vec<Retained<KeyType>>, Vec<Retained<ObjectType>>) {
        never()
    }
    /// Mirrors `objc2-foundation 0.3.2 src/generated/NSDictionary.rs` `NSDictionary::objectForKey`.
    #[allow(non_snake_case)]
    pub fn objectForKey(&self, a_key: &KeyType) -> Option<Retained<ObjectType>> {
        let _ = a_key;
        never()
    }
}

/// Mirrors `objc2-foundation 0.3.2 src/generated/NSError.rs` `NSError`.
pub struct NSError(PhantomData<*const u8>);

impl NSError {
    /// Mirrors `objc2-foundation 0.3.2 src/generated/NSError.rs` `NSError::localizedDescription`.
    #[allow(non_snake_case)]
    pub fn localizedDescription(&self) -> Retained<NSString> {
        never()
    }
}
