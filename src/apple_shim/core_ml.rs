//! Mirror of the `objc2-core-ml` 0.3.2 items the Core ML leaf uses (type checking only).
//! Method names keep Objective-C's selectors, as in the real crate.
// The `unsafe` markers mirror the real bindings; their safety contracts are those of
// objc2-core-ml (Apple's API rules), so no `# Safety` sections are repeated here.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_double, c_void};
use std::marker::PhantomData;
use std::ptr::NonNull;

use super::block2::DynBlock;
use super::foundation::{NSArray, NSDictionary, NSError, NSInteger, NSNumber, NSString, NSURL};
use super::never;
use super::objc2::rc::{Allocated, Retained};
use super::objc2::runtime::{AnyObject, NSObject, ProtocolObject};
use super::objc2::{AllocAnyThread, ClassType, DowncastTarget};

macro_rules! class {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub struct $name(PhantomData<*const u8>);
    };
}

class!(
    /// Mirrors `objc2-core-ml 0.3.2 src/generated/MLModel.rs` `MLModel`.
    MLModel
);

impl MLModel {
    /// Mirrors `src/generated/MLModel_MLModelCompilation.rs` `MLModel::compileModelAtURL_completionHandler`.
    pub unsafe fn compileModelAtURL_completionHandler(
        model_url: &NSURL,
        handler: &DynBlock<dyn Fn(*mut NSURL, *mut NSError)>,
    ) {
        let _ = (model_url, handler);
        never()
    }
    /// Mirrors `src/generated/MLModel.rs` `MLModel::modelWithContentsOfURL_configuration_error`.
    pub unsafe fn modelWithContentsOfURL_configuration_error(
        url: &NSURL,
        configuration: &MLModelConfiguration,
    ) -> Result<Retained<Self>, Retained<NSError>> {
        let _ = (url, configuration);
        never()
    }
    /// Mirrors `src/generated/MLModel.rs` `MLModel::modelDescription`.
    pub unsafe fn modelDescription(&self) -> Retained<MLModelDescription> {
        never()
    }
    /// Mirrors `src/generated/MLModel.rs` `MLModel::predictionFromFeatures_error`.
    pub unsafe fn predictionFromFeatures_error(
        &self,
        input: &ProtocolObject<dyn MLFeatureProvider>,
    ) -> Result<Retained<ProtocolObject<dyn MLFeatureProvider>>, Retained<NSError>> {
        let _ = input;
        never()
    }
}

/// Mirrors `objc2-core-ml 0.3.2 src/generated/MLModelConfiguration.rs` `MLComputeUnits`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MLComputeUnits(pub NSInteger);

class!(
    /// Mirrors `objc2-core-ml 0.3.2 src/generated/MLModelConfiguration.rs` `MLModelConfiguration`.
    MLModelConfiguration
);

impl MLModelConfiguration {
    /// Mirrors `src/generated/MLModelConfiguration.rs` `MLModelConfiguration::new`.
    pub unsafe fn new() -> Retained<Self> {
        never()
    }
    /// Mirrors `src/generated/MLModelConfiguration.rs` `MLModelConfiguration::setComputeUnits`.
    pub unsafe fn setComputeUnits(&self, compute_units: MLComputeUnits) {
        let _ = compute_units;
        never()
    }
}

class!(
    /// Mirrors `objc2-core-ml 0.3.2 src/generated/MLModelDescription.rs` `MLModelDescription`.
    MLModelDescription
);

impl MLModelDescription {
    /// Mirrors `src/generated/MLModelDescription.rs` `MLModelDescription::inputDescriptionsByName`.
    pub unsafe fn inputDescriptionsByName(&self) -> Retained<NSDictionary<NSString, MLFeatureDescription>> {
        never()
    }
    /// Mirrors `src/generated/MLModelDescription.rs` `MLModelDescription::outputDescriptionsByName`.
    pub unsafe fn outputDescriptionsByName(&self) -> Retained<NSDictionary<NSString, MLFeatureDescription>> {
        never()
    }
}

class!(
    /// Mirrors `objc2-core-ml 0.3.2 src/generated/MLFeatureDescription.rs` `MLFeatureDescription`.
    MLFeatureDescription
);

impl MLFeatureDescription {
    /// Mirrors `src/generated/MLFeatureDescription.rs` `MLFeatureDescription::multiArrayConstraint`.
    pub unsafe fn multiArrayConstraint(&self) -> Option<Retained<MLMultiArrayConstraint>> {
        never()
    }
}

class!(
    /// Mirrors `objc2-core-ml 0.3.2 src/generated/MLMultiArrayConstraint.rs` `MLMultiArrayConstraint`.
    MLMultiArrayConstraint
);

impl MLMultiArrayConstraint {
    /// Mirrors `src/generated/MLMultiArrayConstraint.rs` `MLMultiArrayConstraint::shape`.
    pub unsafe fn shape(&self) -> Retained<NSArray<NSNumber>> {
        never()
    }
    /// Mirrors `src/generated/MLMultiArrayConstraint.rs` `MLMultiArrayConstraint::dataType`.
    pub unsafe fn dataType(&self) -> MLMultiArrayDataType {
        never()
    }
}

/// Mirrors `objc2-core-ml 0.3.2 src/generated/MLMultiArray.rs` `MLMultiArrayDataType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MLMultiArrayDataType(pub NSInteger);

class!(
    /// Mirrors `objc2-core-ml 0.3.2 src/generated/MLMultiArray.rs` `MLMultiArray`.
    MLMultiArray
);

impl AllocAnyThread for MLMultiArray {}

impl MLMultiArray {
    /// Mirrors `src/generated/MLMultiArray.rs`
    /// `MLMultiArray::initWithDataPointer_shape_dataType_strides_deallocator_error`.
    pub unsafe fn initWithDataPointer_shape_dataType_strides_deallocator_error(
        this: Allocated<Self>,
        data_pointer: NonNull<c_void>,
        shape: &NSArray<NSNumber>,
        data_type: MLMultiArrayDataType,
        strides: &NSArray<NSNumber>,
        deallocator: Option<&DynBlock<dyn Fn(NonNull<c_void>)>>,
    ) -> Result<Retained<Self>, Retained<NSError>> {
        let _ = (this, data_pointer, shape, data_type, strides, deallocator);
        never()
    }
    /// Mirrors `src/generated/MLMultiArray.rs` `MLMultiArray::shape`.
    pub unsafe fn shape(&self) -> Retained<NSArray<NSNumber>> {
        never()
    }
    /// Mirrors `src/generated/MLMultiArray.rs` `MLMultiArray::strides`.
    pub unsafe fn strides(&self) -> Retained<NSArray<NSNumber>> {
        never()
    }
    /// Mirrors `src/generated/MLMultiArray.rs` `MLMultiArray::dataType`.
    pub unsafe fn dataType(&self) -> MLMultiArrayDataType {
        never()
    }
    /// Mirrors `src/generated/MLMultiArray.rs` `MLMultiArray::getBytesWithHandler`.
    pub unsafe fn getBytesWithHandler(&self, handler: &DynBlock<dyn Fn(NonNull<c_void>, NSInteger) + '_>) {
        let _ = handler;
        never()
    }
}

class!(
    /// Mirrors `objc2-core-ml 0.3.2 src/generated/MLFeatureValue.rs` `MLFeatureValue`.
    MLFeatureValue
);

impl ClassType for MLFeatureValue {
    type Super = NSObject;
}

impl MLFeatureValue {
    /// Mirrors `src/generated/MLFeatureValue.rs` `MLFeatureValue::featureValueWithMultiArray`.
    pub unsafe fn featureValueWithMultiArray(value: &MLMultiArray) -> Retained<Self> {
        let _ = value;
        never()
    }
    /// Mirrors `src/generated/MLFeatureValue.rs` `MLFeatureValue::multiArrayValue`.
    pub unsafe fn multiArrayValue(&self) -> Option<Retained<MLMultiArray>> {
        never()
    }
}

/// Mirrors `objc2-core-ml 0.3.2 src/generated/MLFeatureProvider.rs` `MLFeatureProvider`.
pub unsafe trait MLFeatureProvider {
    /// Mirrors `MLFeatureProvider::featureValueForName`.
    unsafe fn featureValueForName(&self, feature_name: &NSString) -> Option<Retained<MLFeatureValue>> {
        let _ = feature_name;
        never()
    }
}

unsafe impl MLFeatureProvider for ProtocolObject<dyn MLFeatureProvider> {}

class!(
    /// Mirrors `objc2-core-ml 0.3.2 src/generated/MLDictionaryFeatureProvider.rs` `MLDictionaryFeatureProvider`.
    MLDictionaryFeatureProvider
);

impl AllocAnyThread for MLDictionaryFeatureProvider {}

unsafe impl MLFeatureProvider for MLDictionaryFeatureProvider {}

impl MLDictionaryFeatureProvider {
    /// Mirrors `src/generated/MLDictionaryFeatureProvider.rs` `MLDictionaryFeatureProvider::initWithDictionary_error`.
    pub unsafe fn initWithDictionary_error(
        this: Allocated<Self>,
        dictionary: &NSDictionary<NSString, AnyObject>,
    ) -> Result<Retained<Self>, Retained<NSError>> {
        let _ = (this, dictionary);
        never()
    }
}

class!(
    /// Mirrors `objc2-core-ml 0.3.2 src/generated/MLComputePlan.rs` `MLComputePlan`.
    MLComputePlan
);

impl MLComputePlan {
    /// Mirrors `src/generated/MLComputePlan.rs` `MLComputePlan::loadContentsOfURL_configuration_completionHandler`.
    pub unsafe fn loadContentsOfURL_configuration_completionHandler(
        url: &NSURL,
        configuration: &MLModelConfiguration,
        handler: &DynBlock<dyn Fn(*mut MLComputePlan, *mut NSError)>,
    ) {
        let _ = (url, configuration, handler);
        never()
    }
    /// Mirrors `src/generated/MLComputePlan.rs` `MLComputePlan::modelStructure`.
    pub unsafe fn modelStructure(&self) -> Retained<MLModelStructure> {
        never()
    }
    /// Mirrors `src/generated/MLComputePlan.rs` `MLComputePlan::computeDeviceUsageForMLProgramOperation`.
    pub unsafe fn computeDeviceUsageForMLProgramOperation(
        &self,
        operation: &MLModelStructureProgramOperation,
    ) -> Option<Retained<MLComputePlanDeviceUsage>> {
        let _ = operation;
        never()
    }
    /// Mirrors `src/generated/MLComputePlan.rs` `MLComputePlan::estimatedCostOfMLProgramOperation`.
    pub unsafe fn estimatedCostOfMLProgramOperation(
        &self,
        operation: &MLModelStructureProgramOperation,
    ) -> Option<Retained<MLComputePlanCost>> {
        let _ = operation;
        never()
    }
}

class!(
    /// Mirrors `objc2-core-ml 0.3.2 src/generated/MLComputePlanDeviceUsage.rs` `MLComputePlanDeviceUsage`.
    MLComputePlanDeviceUsage
);

impl MLComputePlanDeviceUsage {
    /// Mirrors `src/generated/MLComputePlanDeviceUsage.rs` `MLComputePlanDeviceUsage::preferredComputeDevice`.
    pub unsafe fn preferredComputeDevice(&self) -> Retained<ProtocolObject<dyn MLComputeDeviceProtocol>> {
        never()
    }
}

class!(
    /// Mirrors `objc2-core-ml 0.3.2 src/generated/MLComputePlanCost.rs` `MLComputePlanCost`.
    MLComputePlanCost
);

impl MLComputePlanCost {
    /// Mirrors `src/generated/MLComputePlanCost.rs` `MLComputePlanCost::weight`.
    pub unsafe fn weight(&self) -> c_double {
        never()
    }
}

/// Mirrors `objc2-core-ml 0.3.2 src/generated/MLComputeDeviceProtocol.rs` `MLComputeDeviceProtocol`.
pub trait MLComputeDeviceProtocol {}

class!(
    /// Mirrors `objc2-core-ml 0.3.2 src/generated/MLNeuralEngineComputeDevice.rs` `MLNeuralEngineComputeDevice`.
    MLNeuralEngineComputeDevice
);
class!(
    /// Mirrors `objc2-core-ml 0.3.2 src/generated/MLGPUComputeDevice.rs` `MLGPUComputeDevice`.
    MLGPUComputeDevice
);
class!(
    /// Mirrors `objc2-core-ml 0.3.2 src/generated/MLCPUComputeDevice.rs` `MLCPUComputeDevice`.
    MLCPUComputeDevice
);

impl DowncastTarget for MLNeuralEngineComputeDevice {}
impl DowncastTarget for MLGPUComputeDevice {}
impl DowncastTarget for MLCPUComputeDevice {}

class!(
    /// Mirrors `objc2-core-ml 0.3.2 src/generated/MLModelStructure.rs` `MLModelStructure`.
    MLModelStructure
);

impl MLModelStructure {
    /// Mirrors `src/generated/MLModelStructure.rs` `MLModelStructure::program`.
    pub unsafe fn program(&self) -> Option<Retained<MLModelStructureProgram>> {
        never()
    }
}

class!(
    /// Mirrors `objc2-core-ml 0.3.2 src/generated/MLModelStructureProgram.rs` `MLModelStructureProgram`.
    MLModelStructureProgram
);

impl MLModelStructureProgram {
    /// Mirrors `src/generated/MLModelStructureProgram.rs` `MLModelStructureProgram::functions`.
    pub unsafe fn functions(&self) -> Retained<NSDictionary<NSString, MLModelStructureProgramFunction>> {
        never()
    }
}

class!(
    /// Mirrors `objc2-core-ml 0.3.2 src/generated/MLModelStructureProgramFunction.rs` `MLModelStructureProgramFunction`.
    MLModelStructureProgramFunction
);

impl MLModelStructureProgramFunction {
    /// Mirrors `src/generated/MLModelStructureProgramFunction.rs` `MLModelStructureProgramFunction::block`.
    pub unsafe fn block(&self) -> Retained<MLModelStructureProgramBlock> {
        never()
    }
}

class!(
    /// Mirrors `objc2-core-ml 0.3.2 src/generated/MLModelStructureProgramBlock.rs` `MLModelStructureProgramBlock`.
    MLModelStructureProgramBlock
);

impl MLModelStructureProgramBlock {
    /// Mirrors `src/generated/MLModelStructureProgramBlock.rs` `MLModelStructureProgramBlock::operations`.
    pub unsafe fn operations(&self) -> Retained<NSArray<MLModelStructureProgramOperation>> {
        never()
    }
}

class!(
    /// Mirrors `objc2-core-ml 0.3.2 src/generated/MLModelStructureProgramOperation.rs` `MLModelStructureProgramOperation`.
    MLModelStructureProgramOperation
);

impl MLModelStructureProgramOperation {
    /// Mirrors `src/generated/MLModelStructureProgramOperation.rs` `MLModelStructureProgramOperation::operatorName`.
    pub unsafe fn operatorName(&self) -> Retained<NSString> {
        never()
    }
    /// Mirrors `src/generated/MLModelStructureProgramOperation.rs` `MLModelStructureProgramOperation::blocks`.
    pub unsafe fn blocks(&self) -> Retained<NSArray<MLModelStructureProgramBlock>> {
        never()
    }
}
