//! Launching any kernel handle through the driver (`cuLaunchKernelEx`) or the runtime
//! (`cudaLaunchKernelExC`), with the arguments checked against the kernel's parameters.

use crate::cuda::{driver, runtime, sys, Api};
use crate::error::{Error, Result, Status};
use crate::handles::{EventHandle, GraphDeviceNodeHandle};
use crate::hot;
use crate::kernel::{Kernel, Param};
use crate::registry::{self, Access};
use static_assertions::{assert_eq_align, assert_eq_size, const_assert_eq};
use std::ffi::c_void;
use std::mem::{align_of, offset_of, size_of, MaybeUninit};
use std::os::raw::c_int;

pub use crate::enums::{AccessProperty, ClusterSchedulingPolicy, LaunchAttributeId, MemSyncDomain};

/// Grid, block or cluster extent; the same layout as CUDA's `dim3`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Dim3 {
    /// Extent in x.
    pub x: u32,
    /// Extent in y.
    pub y: u32,
    /// Extent in z.
    pub z: u32,
}

impl Dim3 {
    /// The extent `x` by `y` by `z`.
    pub const fn new(x: u32, y: u32, z: u32) -> Dim3 {
        Dim3 { x, y, z }
    }
    /// The one-dimensional extent `x` (y and z are 1).
    pub const fn x(x: u32) -> Dim3 {
        Dim3 { x, y: 1, z: 1 }
    }
    fn is_zero(&self) -> bool {
        self.x == 0 && self.y == 0 && self.z == 0
    }
    fn any_zero(&self) -> bool {
        self.x == 0 || self.y == 0 || self.z == 0
    }
}

/// `cudyn_api` as it crosses the C boundary: a plain integer, checked before use (a C enum
/// holding an unknown value must never become a Rust enum).
pub type RawApi = u32;

/// `cudyn_launch_attribute_id` as it crosses the C boundary: checked before use.
pub type RawLaunchAttributeId = u32;

/// Number of reserved words at the end of `LaunchConfig`.
pub const LAUNCH_CONFIG_RESERVED: usize = 4;
const_assert_eq!(LAUNCH_CONFIG_RESERVED, 4);

/// The most entries a launch's attribute list may have (CUDYN_MAX_LAUNCH_ATTRIBUTES): every
/// attribute at most once is 14 entries, and the rest can only be CUDYN_LAUNCH_ATTRIBUTE_IGNORE.
/// It bounds what a launch reads of a count it was given.
pub const MAX_LAUNCH_ATTRIBUTES: u32 = 64;

/// The caller's launch attributes: a pointer to an array and its length, CUDA's own way
/// (CUlaunchConfig's `attrs` and `numAttrs`). Zero-initialised: none. Set in C as
/// `cfg.attributes.attrs = list; cfg.attributes.count = n;`.
/// The entries are copied at each launch, after they are checked; CUDA never reads the
/// caller's array, and cudyn writes to it only to hand back what CUDA returns (the node of
/// CUDYN_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchAttributes {
    /// `count` entries; may be NULL when `count` is 0.
    attrs: *mut LaunchAttribute,
    /// Entries at `attrs`, at most CUDYN_MAX_LAUNCH_ATTRIBUTES (64).
    count: u32,
    /// Must be zero.
    reserved: u32,
}

impl Default for LaunchAttributes {
    fn default() -> Self {
        LaunchAttributes::NONE
    }
}

impl LaunchAttributes {
    /// No attributes.
    pub const NONE: LaunchAttributes = LaunchAttributes { attrs: std::ptr::null_mut(), count: 0, reserved: 0 };

    /// The attributes in `attrs`, for a config's `attributes` field (or see
    /// [`LaunchConfig::with_attributes`]). More than [`MAX_LAUNCH_ATTRIBUTES`] entries is an
    /// error.
    ///
    /// # Safety
    /// The returned value (and every copy of it, or of a config holding it) is used only while
    /// `attrs` lives and nothing else writes to it: a launch or a `validate` reads the entries,
    /// and a launch writes the device-updatable node back into them.
    pub unsafe fn new(attrs: &mut [LaunchAttribute]) -> Result<LaunchAttributes> {
        let count = u32::try_from(attrs.len()).ok().filter(|&n| n <= MAX_LAUNCH_ATTRIBUTES).ok_or_else(|| {
            Error::invalid(format!("{} launch attributes: at most {MAX_LAUNCH_ATTRIBUTES} are taken", attrs.len()))
        })?;
        Ok(LaunchAttributes { attrs: attrs.as_mut_ptr(), count, reserved: 0 })
    }

    /// How many entries the list holds.
    pub fn len(&self) -> u32 {
        self.count
    }

    /// Whether the list holds no entry.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// How to launch. Zero-initialise it, then set what you need: every field added later is
/// carved from the reserved words, so zero keeps meaning "not set" and the size never changes.
/// Launch attributes beyond the named fields go in `attributes` (CUDA's way: an array and a
/// count), which is how the config grows from now on (in Rust: `LaunchConfig::with_attributes`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LaunchConfig {
    /// Blocks in the grid (each dimension at least 1).
    pub grid: Dim3,
    /// Threads per block (each dimension at least 1).
    pub block: Dim3,
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem_bytes: usize,
    /// NULL: the legacy default stream.
    pub stream: crate::handles::StreamHandle,
    /// Who launches: CUDYN_API_RUNTIME (0) or CUDYN_API_DRIVER (1).
    pub api: RawApi,
    /// Thread-block cluster shape; {0,0,0}: no cluster. The same as the attribute
    /// CUDYN_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION (give one or the other).
    pub cluster: Dim3,
    /// Non-zero: a cooperative launch (grid-wide sync allowed). The same as
    /// CUDYN_LAUNCH_ATTRIBUTE_COOPERATIVE.
    pub cooperative: c_int,
    /// Launch priority (lower is higher priority, as in CUDA); 0: not set. Priority 0 itself
    /// is asked for with the attribute CUDYN_LAUNCH_ATTRIBUTE_PRIORITY.
    pub priority: c_int,
    /// Non-zero: allow programmatic stream serialization (programmatic dependent launch). The
    /// same as CUDYN_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION.
    pub programmatic_serialization: c_int,
    /// Must be zero.
    pub reserved0: u32,
    /// Any further launch attributes (none when zeroed).
    pub attributes: LaunchAttributes,
    /// Must be zero.
    pub reserved: [u32; 4],
}

impl Default for LaunchConfig {
    fn default() -> Self {
        LaunchConfig {
            grid: Dim3::x(1),
            block: Dim3::x(1),
            shared_mem_bytes: 0,
            stream: std::ptr::null_mut(),
            api: Api::Runtime as u32,
            cluster: Dim3::default(),
            cooperative: 0,
            priority: 0,
            programmatic_serialization: 0,
            reserved0: 0,
            attributes: LaunchAttributes::NONE,
            reserved: [0; LAUNCH_CONFIG_RESERVED],
        }
    }
}

// Layout proofs: Dim3 is dim3; the launch config's layout is frozen (the C side checks too).
assert_eq_size!(Dim3, sys::dim3);
assert_eq_align!(Dim3, sys::dim3);
const_assert_eq!(offset_of!(Dim3, x), offset_of!(sys::dim3, x));
const_assert_eq!(offset_of!(Dim3, y), offset_of!(sys::dim3, y));
const_assert_eq!(offset_of!(Dim3, z), offset_of!(sys::dim3, z));
const_assert_eq!(size_of::<LaunchConfig>(), 104);
const_assert_eq!(align_of::<LaunchConfig>(), 8);
const_assert_eq!(offset_of!(LaunchConfig, grid), 0);
const_assert_eq!(offset_of!(LaunchConfig, block), 12);
const_assert_eq!(offset_of!(LaunchConfig, shared_mem_bytes), 24);
const_assert_eq!(offset_of!(LaunchConfig, stream), 32);
const_assert_eq!(offset_of!(LaunchConfig, api), 40);
const_assert_eq!(offset_of!(LaunchConfig, cluster), 44);
const_assert_eq!(offset_of!(LaunchConfig, cooperative), 56);
const_assert_eq!(offset_of!(LaunchConfig, priority), 60);
const_assert_eq!(offset_of!(LaunchConfig, programmatic_serialization), 64);
const_assert_eq!(offset_of!(LaunchConfig, reserved0), 68);
const_assert_eq!(offset_of!(LaunchConfig, attributes), 72);
const_assert_eq!(offset_of!(LaunchConfig, reserved), 88);
const_assert_eq!(size_of::<LaunchAttributes>(), 16);
const_assert_eq!(align_of::<LaunchAttributes>(), 8);
const_assert_eq!(offset_of!(LaunchAttributes, attrs), 0);
const_assert_eq!(offset_of!(LaunchAttributes, count), 8);
const_assert_eq!(offset_of!(LaunchAttributes, reserved), 12);
// The driver's and the runtime's launch attributes are interchangeable, so one array serves both.
assert_eq_size!(sys::CUlaunchAttribute, sys::cudaLaunchAttribute);
assert_eq_align!(sys::CUlaunchAttribute, sys::cudaLaunchAttribute);
const_assert_eq!(offset_of!(sys::CUlaunchAttribute, id), offset_of!(sys::cudaLaunchAttribute, id));
const_assert_eq!(offset_of!(sys::CUlaunchAttribute, value), offset_of!(sys::cudaLaunchAttribute, val));

// ---- Launch attributes ------------------------------------------------------------------------

/// An L2 access policy window: `cudyn_access_policy_window`, CUDA's `CUaccessPolicyWindow`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AccessPolicyWindow {
    /// Start of the window (a device address).
    pub base_ptr: *mut c_void,
    /// Bytes in the window (at most the device's CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE).
    pub num_bytes: usize,
    /// Share of the window's accesses that get `hit_prop`, 0.0 to 1.0.
    pub hit_ratio: f32,
    /// A cudyn_access_property for the hits.
    pub hit_prop: u32,
    /// A cudyn_access_property for the rest.
    pub miss_prop: u32,
}

/// The value of CUDYN_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgrammaticEvent {
    /// A live event created with timing disabled (CU_EVENT_DISABLE_TIMING), not an
    /// interprocess or interop event.
    pub event: EventHandle,
    /// Record flags: must be 0 (CUDA takes no other here).
    pub flags: c_int,
    /// Non-zero: every block triggers the event as it starts.
    pub trigger_at_block_start: c_int,
}

/// The value of CUDYN_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchCompletionEvent {
    /// A live event created with timing disabled, not an interprocess or interop event.
    pub event: EventHandle,
    /// Record flags: must be 0.
    pub flags: c_int,
}

/// The value of CUDYN_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP: domain ids (below the device's
/// CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemSyncDomainMap {
    /// The domain id of the default domain.
    pub default_: u8,
    /// The domain id of the remote domain.
    pub remote: u8,
}

/// The value of CUDYN_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceUpdatableKernelNode {
    /// 1: make the captured node device-updatable (0 or 1).
    pub device_updatable: c_int,
    /// Written by a successful launch: the node's handle for device-side updates.
    pub dev_node: GraphDeviceNodeHandle,
}

/// A launch attribute's value: `cudyn_launch_attribute_value`, CUDA's `CUlaunchAttributeValue`.
/// The member `id` names is the one read; the rest of the 64 bytes is never read.
#[repr(C)]
#[derive(Clone, Copy)]
pub union LaunchAttributeValue {
    /// The value's size, as CUDA pads it.
    pub pad: [u8; 64],
    /// CUDYN_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW.
    pub access_policy_window: AccessPolicyWindow,
    /// CUDYN_LAUNCH_ATTRIBUTE_COOPERATIVE.
    pub cooperative: c_int,
    /// CUDYN_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION.
    pub cluster_dim: Dim3,
    /// CUDYN_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: a cudyn_cluster_scheduling_policy.
    pub cluster_scheduling_policy_preference: u32,
    /// CUDYN_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION.
    pub programmatic_stream_serialization_allowed: c_int,
    /// CUDYN_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT.
    pub programmatic_event: ProgrammaticEvent,
    /// CUDYN_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT.
    pub launch_completion_event: LaunchCompletionEvent,
    /// CUDYN_LAUNCH_ATTRIBUTE_PRIORITY.
    pub priority: c_int,
    /// CUDYN_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP.
    pub mem_sync_domain_map: MemSyncDomainMap,
    /// CUDYN_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN: a cudyn_mem_sync_domain.
    pub mem_sync_domain: u32,
    /// CUDYN_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION.
    pub preferred_cluster_dim: Dim3,
    /// CUDYN_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE.
    pub device_updatable_kernel_node: DeviceUpdatableKernelNode,
    /// CUDYN_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: percent, 0-100.
    pub shared_mem_carveout: u32,
    /// CUDYN_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING: 0 or 1.
    pub nvlink_util_centric_scheduling: u32,
}

/// One launch attribute: `cudyn_launch_attribute`, laid out exactly as CUDA's
/// `CUlaunchAttribute` and `cudaLaunchAttribute` (proven in Rust and in C), so an array of
/// CUDA's own may be passed by a cast.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct LaunchAttribute {
    /// A cudyn_launch_attribute_id (CUDA's CU_LAUNCH_ATTRIBUTE_* number).
    pub id: RawLaunchAttributeId,
    /// Padding, as in CUDA's struct; never read.
    pub pad: MaybeUninit<[u8; 4]>,
    /// The value, in the member `id` names.
    pub value: LaunchAttributeValue,
}

assert_eq_size!(LaunchAttribute, sys::CUlaunchAttribute);
assert_eq_align!(LaunchAttribute, sys::CUlaunchAttribute);
const_assert_eq!(offset_of!(LaunchAttribute, id), offset_of!(sys::CUlaunchAttribute, id));
const_assert_eq!(offset_of!(LaunchAttribute, value), offset_of!(sys::CUlaunchAttribute, value));
assert_eq_size!(LaunchAttributeValue, sys::CUlaunchAttributeValue);
assert_eq_size!(AccessPolicyWindow, sys::CUaccessPolicyWindow);
const_assert_eq!(offset_of!(AccessPolicyWindow, num_bytes), offset_of!(sys::CUaccessPolicyWindow, num_bytes));
const_assert_eq!(offset_of!(AccessPolicyWindow, hit_ratio), offset_of!(sys::CUaccessPolicyWindow, hitRatio));
const_assert_eq!(offset_of!(AccessPolicyWindow, hit_prop), offset_of!(sys::CUaccessPolicyWindow, hitProp));
const_assert_eq!(offset_of!(AccessPolicyWindow, miss_prop), offset_of!(sys::CUaccessPolicyWindow, missProp));
assert_eq_size!(ProgrammaticEvent, sys::CUlaunchAttributeValue_union__bindgen_ty_2);
const_assert_eq!(offset_of!(ProgrammaticEvent, flags), 8);
const_assert_eq!(offset_of!(ProgrammaticEvent, trigger_at_block_start), 12);
assert_eq_size!(LaunchCompletionEvent, sys::CUlaunchAttributeValue_union__bindgen_ty_3);
const_assert_eq!(offset_of!(LaunchCompletionEvent, flags), 8);
assert_eq_size!(MemSyncDomainMap, sys::CUlaunchMemSyncDomainMap);
const_assert_eq!(offset_of!(MemSyncDomainMap, remote), 1);
assert_eq_size!(DeviceUpdatableKernelNode, sys::CUlaunchAttributeValue_union__bindgen_ty_5);
const_assert_eq!(offset_of!(DeviceUpdatableKernelNode, dev_node), 8);
// cudyn's attribute numbers and value enums are CUDA's (driver and runtime alike).
const_assert_eq!(
    sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING.0,
    LaunchAttributeId::NvlinkUtilCentricScheduling as u32
);
const_assert_eq!(
    sys::cudaLaunchAttributeID::cudaLaunchAttributeNvlinkUtilCentricScheduling.0,
    LaunchAttributeId::NvlinkUtilCentricScheduling as u32
);
const_assert_eq!(
    sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT.0,
    LaunchAttributeId::PreferredSharedMemoryCarveout as u32
);
const_assert_eq!(
    sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE.0,
    LaunchAttributeId::DeviceUpdatableKernelNode as u32
);
const_assert_eq!(
    sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT.0,
    LaunchAttributeId::LaunchCompletionEvent as u32
);
const_assert_eq!(
    sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION.0,
    LaunchAttributeId::PreferredClusterDimension as u32
);
const_assert_eq!(
    sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN.0,
    LaunchAttributeId::MemSyncDomain as u32
);
const_assert_eq!(
    sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP.0,
    LaunchAttributeId::MemSyncDomainMap as u32
);
const_assert_eq!(sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PRIORITY.0, LaunchAttributeId::Priority as u32);
const_assert_eq!(
    sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT.0,
    LaunchAttributeId::ProgrammaticEvent as u32
);
const_assert_eq!(
    sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION.0,
    LaunchAttributeId::ProgrammaticStreamSerialization as u32
);
const_assert_eq!(
    sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE.0,
    LaunchAttributeId::ClusterSchedulingPolicyPreference as u32
);
const_assert_eq!(
    sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION.0,
    LaunchAttributeId::ClusterDimension as u32
);
const_assert_eq!(sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE.0, LaunchAttributeId::Cooperative as u32);
const_assert_eq!(
    sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW.0,
    LaunchAttributeId::AccessPolicyWindow as u32
);
const_assert_eq!(sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_IGNORE.0, LaunchAttributeId::Ignore as u32);
const_assert_eq!(sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY.0, SYNCHRONIZATION_POLICY);
const_assert_eq!(sys::CUaccessProperty::CU_ACCESS_PROPERTY_PERSISTING.0, AccessProperty::Persisting as u32);
const_assert_eq!(
    sys::CUclusterSchedulingPolicy::CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING.0,
    ClusterSchedulingPolicy::LoadBalancing as u32
);
const_assert_eq!(sys::CUlaunchMemSyncDomain::CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE.0, MemSyncDomain::Remote as u32);

/// CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY: a stream attribute, refused at a launch.
const SYNCHRONIZATION_POLICY: u32 = 3;

impl std::fmt::Debug for LaunchAttribute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match LaunchAttributeId::from_c(self.id.into()) {
            Some(id) => write!(f, "LaunchAttribute({})", id.c_name()),
            None => write!(f, "LaunchAttribute(unknown id {})", self.id),
        }
    }
}

impl LaunchAttribute {
    /// An attribute of `id` with its value set by `set` on a zeroed value.
    fn with(id: LaunchAttributeId, set: impl FnOnce(&mut LaunchAttributeValue)) -> LaunchAttribute {
        let mut value = LaunchAttributeValue { pad: [0; 64] };
        set(&mut value);
        LaunchAttribute { id: id as u32, pad: MaybeUninit::new([0; 4]), value }
    }
    /// An entry to skip.
    pub fn ignore() -> LaunchAttribute {
        LaunchAttribute::with(LaunchAttributeId::Ignore, |_| {})
    }
    /// An L2 access policy window.
    pub fn access_policy_window(w: AccessPolicyWindow) -> LaunchAttribute {
        LaunchAttribute::with(LaunchAttributeId::AccessPolicyWindow, |v| v.access_policy_window = w)
    }
    /// A cooperative launch (`on`) or explicitly not one.
    pub fn cooperative(on: bool) -> LaunchAttribute {
        LaunchAttribute::with(LaunchAttributeId::Cooperative, |v| v.cooperative = on as c_int)
    }
    /// The cluster shape.
    pub fn cluster_dimension(d: Dim3) -> LaunchAttribute {
        LaunchAttribute::with(LaunchAttributeId::ClusterDimension, |v| v.cluster_dim = d)
    }
    /// The cluster scheduling policy preference.
    pub fn cluster_scheduling_policy(p: ClusterSchedulingPolicy) -> LaunchAttribute {
        LaunchAttribute::with(LaunchAttributeId::ClusterSchedulingPolicyPreference, |v| {
            v.cluster_scheduling_policy_preference = p as u32
        })
    }
    /// Programmatic stream serialization allowed (`on`) or not.
    pub fn programmatic_stream_serialization(on: bool) -> LaunchAttribute {
        LaunchAttribute::with(LaunchAttributeId::ProgrammaticStreamSerialization, |v| {
            v.programmatic_stream_serialization_allowed = on as c_int
        })
    }
    /// Record `event` once every block of the kernel triggered it (or, with
    /// `trigger_at_block_start`, once every block started).
    ///
    /// # Safety
    /// `event` is a live event, created with timing disabled, that outlives every launch of
    /// this attribute: CUDA does not check event handles.
    pub unsafe fn programmatic_event(event: EventHandle, trigger_at_block_start: bool) -> LaunchAttribute {
        LaunchAttribute::with(LaunchAttributeId::ProgrammaticEvent, |v| {
            v.programmatic_event =
                ProgrammaticEvent { event, flags: 0, trigger_at_block_start: trigger_at_block_start as c_int }
        })
    }
    /// The launch's priority: any value, 0 included (lower is higher; CUDA clamps it).
    pub fn priority(p: i32) -> LaunchAttribute {
        LaunchAttribute::with(LaunchAttributeId::Priority, |v| v.priority = p)
    }
    /// The domain ids of the default and the remote memory synchronisation domain.
    pub fn mem_sync_domain_map(map: MemSyncDomainMap) -> LaunchAttribute {
        LaunchAttribute::with(LaunchAttributeId::MemSyncDomainMap, |v| v.mem_sync_domain_map = map)
    }
    /// The memory synchronisation domain the kernel runs in.
    pub fn mem_sync_domain(d: MemSyncDomain) -> LaunchAttribute {
        LaunchAttribute::with(LaunchAttributeId::MemSyncDomain, |v| v.mem_sync_domain = d as u32)
    }
    /// A preferred substitute cluster shape.
    pub fn preferred_cluster_dimension(d: Dim3) -> LaunchAttribute {
        LaunchAttribute::with(LaunchAttributeId::PreferredClusterDimension, |v| v.preferred_cluster_dim = d)
    }
    /// Record `event` once every block of the kernel has begun.
    ///
    /// # Safety
    /// As for [`LaunchAttribute::programmatic_event`].
    pub unsafe fn launch_completion_event(event: EventHandle) -> LaunchAttribute {
        LaunchAttribute::with(LaunchAttributeId::LaunchCompletionEvent, |v| {
            v.launch_completion_event = LaunchCompletionEvent { event, flags: 0 }
        })
    }
    /// Make the graph node a launch in a capturing stream records device-updatable; the
    /// launch writes its handle back ([`LaunchAttribute::device_node`]).
    pub fn device_updatable_kernel_node(on: bool) -> LaunchAttribute {
        LaunchAttribute::with(LaunchAttributeId::DeviceUpdatableKernelNode, |v| {
            v.device_updatable_kernel_node =
                DeviceUpdatableKernelNode { device_updatable: on as c_int, dev_node: std::ptr::null_mut() }
        })
    }
    /// The shared-memory carveout for this launch, percent (0-100).
    pub fn preferred_shared_memory_carveout(percent: u32) -> LaunchAttribute {
        LaunchAttribute::with(LaunchAttributeId::PreferredSharedMemoryCarveout, |v| v.shared_mem_carveout = percent)
    }
    /// Hint that the kernel's blocks carry even NVLink traffic (`on`), or not.
    pub fn nvlink_util_centric_scheduling(on: bool) -> LaunchAttribute {
        LaunchAttribute::with(LaunchAttributeId::NvlinkUtilCentricScheduling, |v| {
            v.nvlink_util_centric_scheduling = on as u32
        })
    }
    /// The attribute's id, when it is one cudyn knows.
    pub fn id(&self) -> Option<LaunchAttributeId> {
        LaunchAttributeId::from_c(self.id.into())
    }
    /// The node a launch wrote back into a CUDYN_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE
    /// entry (None for any other attribute, or before such a launch).
    pub fn device_node(&self) -> Option<GraphDeviceNodeHandle> {
        if self.id != LaunchAttributeId::DeviceUpdatableKernelNode as u32 {
            return None;
        }
        // SAFETY: this id's member, which every constructor of it (and C) initialises.
        let n = unsafe { self.value.device_updatable_kernel_node.dev_node };
        (!n.is_null()).then_some(n)
    }
}

/// What is wrong with a config's launch attributes (small and Copy: the launch path decides
/// without a message; `AttrProblem::error` writes one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AttrProblem {
    /// `attributes.count` is not 0 but `attributes.attrs` is NULL.
    NullList,
    /// More than MAX_LAUNCH_ATTRIBUTES entries.
    TooMany(u32),
    /// Entry `index` has an id CUDA 13.0 does not define for a launch.
    Unknown { index: u32, id: u32 },
    /// Entry `index` is CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY.
    StreamOnly { index: u32 },
    /// Entry `index` repeats an attribute given before in the list.
    Twice { index: u32, id: LaunchAttributeId },
    /// Entry `index` repeats what a named field of the config sets.
    Named { index: u32, id: LaunchAttributeId },
    /// Entry `index` has a value CUDA does not take.
    Value { index: u32, id: LaunchAttributeId, why: BadValue },
    /// The cluster shape (a named field's or an attribute's) does not divide the grid.
    ClusterGrid,
}

/// Why an attribute's value is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BadValue {
    HitRatio,
    Property,
    ClusterZero,
    Policy,
    NullEvent,
    EventFlags,
    Domain,
    PreferredCluster,
    ZeroOrOne,
    Carveout,
}

impl AttrProblem {
    /// The refusal as an error, for the full path.
    #[cold]
    fn error(self, cfg: &LaunchConfig) -> Error {
        let name = |id: LaunchAttributeId| id.c_name();
        let msg = match self {
            AttrProblem::NullList => {
                format!("cudyn_launch_config.attributes.attrs is NULL but its count is {}", cfg.attributes.count)
            }
            AttrProblem::TooMany(n) => format!("{n} launch attributes: at most {MAX_LAUNCH_ATTRIBUTES} are taken"),
            AttrProblem::Unknown { index, id } => {
                format!("launch attribute {index}: id {id} is not a launch attribute of CUDA 13.0")
            }
            AttrProblem::StreamOnly { index } => format!(
                "launch attribute {index}: id 3 (CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY) is a stream attribute \
                 (cuStreamSetAttribute), not one CUDA takes at a launch"
            ),
            AttrProblem::Twice { index, id } => format!("launch attribute {index}: {} is given twice", name(id)),
            AttrProblem::Named { index, id } => {
                let field = match id {
                    LaunchAttributeId::ClusterDimension => "cluster",
                    LaunchAttributeId::Cooperative => "cooperative",
                    LaunchAttributeId::Priority => "priority",
                    _ => "programmatic_serialization",
                };
                format!(
                    "launch attribute {index}: {} is also set by the config's `{field}` field: give one or the other",
                    name(id)
                )
            }
            AttrProblem::Value { index, id, why } => {
                let what = match why {
                    BadValue::HitRatio => "hit_ratio must be between 0.0 and 1.0",
                    BadValue::Property => "hit_prop and miss_prop must each be a cudyn_access_property (0, 1 or 2)",
                    BadValue::ClusterZero => "each extent must be at least 1",
                    BadValue::Policy => "the policy must be a cudyn_cluster_scheduling_policy (0, 1 or 2)",
                    BadValue::NullEvent => "the event is NULL",
                    BadValue::EventFlags => "flags must be 0 (CUDA takes no other record flag here)",
                    BadValue::Domain => "the domain must be a cudyn_mem_sync_domain (0 or 1)",
                    BadValue::PreferredCluster => {
                        "each extent must divide the grid's and be a multiple of the cluster's, with the same z"
                    }
                    BadValue::ZeroOrOne => "the value must be 0 or 1",
                    BadValue::Carveout => "the carveout must be a percentage, 0 to 100",
                }
                .to_string();
                format!("launch attribute {index}: {}: {what}", name(id))
            }
            AttrProblem::ClusterGrid => {
                "the cluster shape must divide the grid in every dimension (CUDA groups whole clusters)".to_string()
            }
        };
        Error::invalid(msg)
    }
}

/// The most attributes CUDA is handed: every launch attribute once (IGNORE entries are dropped).
const MAX_CUDA_ATTRS: usize = 16;

/// Launch attributes as CUDA takes them, built on the stack: the named fields' first, then the
/// caller's list, each checked.
pub(crate) struct CudaAttrs {
    a: [MaybeUninit<sys::CUlaunchAttribute>; MAX_CUDA_ATTRS],
    n: usize,
    /// Where a DEVICE_UPDATABLE_KERNEL_NODE entry came from in the caller's list, and where it
    /// is in `a`: the node CUDA writes is handed back there.
    updatable: Option<(usize, usize)>,
}

fn attr(id: sys::CUlaunchAttributeID) -> sys::CUlaunchAttribute {
    sys::CUlaunchAttribute { id, ..Default::default() }
}

/// Whether `c` divides `g` in every extent (false for a zero extent; no division can fail:
/// the launch fast path, which runs this, must not be able to panic).
fn divides(c: &Dim3, g: &Dim3) -> bool {
    g.x.checked_rem(c.x) == Some(0) && g.y.checked_rem(c.y) == Some(0) && g.z.checked_rem(c.z) == Some(0)
}

impl CudaAttrs {
    pub(crate) fn new() -> CudaAttrs {
        CudaAttrs { a: [const { MaybeUninit::uninit() }; MAX_CUDA_ATTRS], n: 0, updatable: None }
    }

    /// Append `a`; false when full (never, for a list that passed the duplicate check).
    #[inline]
    fn push(&mut self, a: &sys::CUlaunchAttribute) -> bool {
        match self.a.get_mut(self.n) {
            Some(slot) => {
                slot.write(*a);
                self.n += 1;
                true
            }
            None => false,
        }
    }

    pub(crate) fn as_mut_ptr(&mut self) -> *mut sys::CUlaunchAttribute {
        self.a.as_mut_ptr().cast()
    }

    pub(crate) fn len(&self) -> u32 {
        self.n as u32
    }

    /// Fill from `cfg`: its named fields, then its list, checked on the way. Allocation- and
    /// panic-free (the launch fast path runs it). None: all written.
    ///
    /// # Safety
    /// `cfg.attributes` holds `count` readable entries (its constructor's or the C caller's
    /// contract).
    pub(crate) unsafe fn fill(&mut self, cfg: &LaunchConfig) -> Option<AttrProblem> {
        let mut seen: u32 = 0;
        let mut cluster = None;
        if !cfg.cluster.is_zero() {
            cluster = Some(cfg.cluster);
            seen |= 1 << LaunchAttributeId::ClusterDimension as u32;
            let mut a = attr(sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
            a.value.clusterDim.x = cfg.cluster.x;
            a.value.clusterDim.y = cfg.cluster.y;
            a.value.clusterDim.z = cfg.cluster.z;
            self.push(&a);
        }
        if cfg.cooperative != 0 {
            seen |= 1 << LaunchAttributeId::Cooperative as u32;
            let mut a = attr(sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
            a.value.cooperative = 1;
            self.push(&a);
        }
        if cfg.priority != 0 {
            seen |= 1 << LaunchAttributeId::Priority as u32;
            let mut a = attr(sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PRIORITY);
            a.value.priority = cfg.priority;
            self.push(&a);
        }
        if cfg.programmatic_serialization != 0 {
            seen |= 1 << LaunchAttributeId::ProgrammaticStreamSerialization as u32;
            let mut a = attr(sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
            a.value.programmaticStreamSerializationAllowed = 1;
            self.push(&a);
        }
        let named = seen;
        let list = cfg.attributes;
        if list.count == 0 {
            // The named fields alone (the common launch with attributes).
            return match cluster {
                Some(c) if !divides(&c, &cfg.grid) => Some(AttrProblem::ClusterGrid),
                _ => None,
            };
        }
        if list.count > MAX_LAUNCH_ATTRIBUTES {
            return Some(AttrProblem::TooMany(list.count));
        }
        if list.count != 0 && list.attrs.is_null() {
            return Some(AttrProblem::NullList);
        }
        let mut preferred: Option<(u32, Dim3)> = None;
        for index in 0..list.count {
            // SAFETY: `index` < count entries are readable (this function's contract); the id
            // and the member it names are read through the pointer, never the padding.
            let p = unsafe { list.attrs.add(index as usize) };
            // SAFETY: as above.
            let raw = unsafe { std::ptr::addr_of!((*p).id).read() };
            let Some(id) = LaunchAttributeId::from_c(raw.into()) else {
                return Some(if raw == SYNCHRONIZATION_POLICY {
                    AttrProblem::StreamOnly { index }
                } else {
                    AttrProblem::Unknown { index, id: raw }
                });
            };
            if id == LaunchAttributeId::Ignore {
                continue;
            }
            let bit = 1u32.wrapping_shl(raw);
            if seen & bit != 0 {
                return Some(if named & bit != 0 {
                    AttrProblem::Named { index, id }
                } else {
                    AttrProblem::Twice { index, id }
                });
            }
            seen |= bit;
            // SAFETY: as above; `v` points at the entry's value.
            let v = unsafe { std::ptr::addr_of!((*p).value) };
            let bad = |why| Some(AttrProblem::Value { index, id, why });
            // SAFETY (each read below): the member `id` names, read through the pointer.
            match id {
                LaunchAttributeId::AccessPolicyWindow => {
                    let w = unsafe { std::ptr::addr_of!((*v).access_policy_window).read() };
                    if !(w.hit_ratio >= 0.0 && w.hit_ratio <= 1.0) {
                        return bad(BadValue::HitRatio);
                    }
                    if w.hit_prop > 2 || w.miss_prop > 2 {
                        return bad(BadValue::Property);
                    }
                }
                LaunchAttributeId::ClusterDimension => {
                    let d = unsafe { std::ptr::addr_of!((*v).cluster_dim).read() };
                    if d.any_zero() {
                        return bad(BadValue::ClusterZero);
                    }
                    cluster = Some(d);
                }
                LaunchAttributeId::ClusterSchedulingPolicyPreference => {
                    if unsafe { std::ptr::addr_of!((*v).cluster_scheduling_policy_preference).read() } > 2 {
                        return bad(BadValue::Policy);
                    }
                }
                LaunchAttributeId::ProgrammaticEvent => {
                    let e = unsafe { std::ptr::addr_of!((*v).programmatic_event).read() };
                    if e.event.is_null() {
                        return bad(BadValue::NullEvent);
                    }
                    if e.flags != 0 {
                        return bad(BadValue::EventFlags);
                    }
                }
                LaunchAttributeId::LaunchCompletionEvent => {
                    let e = unsafe { std::ptr::addr_of!((*v).launch_completion_event).read() };
                    if e.event.is_null() {
                        return bad(BadValue::NullEvent);
                    }
                    if e.flags != 0 {
                        return bad(BadValue::EventFlags);
                    }
                }
                LaunchAttributeId::MemSyncDomain => {
                    if unsafe { std::ptr::addr_of!((*v).mem_sync_domain).read() } > 1 {
                        return bad(BadValue::Domain);
                    }
                }
                LaunchAttributeId::PreferredClusterDimension => {
                    let d = unsafe { std::ptr::addr_of!((*v).preferred_cluster_dim).read() };
                    if d.any_zero() || !divides(&d, &cfg.grid) {
                        return bad(BadValue::PreferredCluster);
                    }
                    preferred = Some((index, d));
                }
                LaunchAttributeId::DeviceUpdatableKernelNode => {
                    let on = unsafe { std::ptr::addr_of!((*v).device_updatable_kernel_node.device_updatable).read() };
                    if !(0..=1).contains(&on) {
                        return bad(BadValue::ZeroOrOne);
                    }
                    self.updatable = Some((index as usize, self.n));
                }
                LaunchAttributeId::PreferredSharedMemoryCarveout => {
                    if unsafe { std::ptr::addr_of!((*v).shared_mem_carveout).read() } > 100 {
                        return bad(BadValue::Carveout);
                    }
                }
                LaunchAttributeId::NvlinkUtilCentricScheduling => {
                    if unsafe { std::ptr::addr_of!((*v).nvlink_util_centric_scheduling).read() } > 1 {
                        return bad(BadValue::ZeroOrOne);
                    }
                }
                // Any int: CUDA reads non-zero as on; the map's ids are the device's to judge.
                LaunchAttributeId::Cooperative
                | LaunchAttributeId::ProgrammaticStreamSerialization
                | LaunchAttributeId::Priority
                | LaunchAttributeId::MemSyncDomainMap
                | LaunchAttributeId::Ignore => {}
            }
            // The entry as CUDA takes it: the same layout (asserted above), copied byte for
            // byte so that padding is never read as a value.
            let mut a = MaybeUninit::<sys::CUlaunchAttribute>::zeroed();
            // SAFETY: both point to size_of::<LaunchAttribute>() bytes, which is
            // size_of::<CUlaunchAttribute>(); the source is readable (contract above).
            unsafe {
                std::ptr::copy_nonoverlapping(p.cast::<u8>(), a.as_mut_ptr().cast::<u8>(), size_of::<LaunchAttribute>())
            };
            // SAFETY: fully written just above.
            if !self.push(unsafe { a.assume_init_ref() }) {
                return Some(AttrProblem::TooMany(list.count));
            }
        }
        if let Some(c) = cluster {
            if !divides(&c, &cfg.grid) {
                return Some(AttrProblem::ClusterGrid);
            }
            if let Some((index, d)) = preferred {
                if d.x.checked_rem(c.x) != Some(0) || d.y.checked_rem(c.y) != Some(0) || d.z != c.z {
                    return Some(AttrProblem::Value {
                        index,
                        id: LaunchAttributeId::PreferredClusterDimension,
                        why: BadValue::PreferredCluster,
                    });
                }
            }
        }
        None
    }

    /// After a successful launch: the node CUDA wrote into the copy of a
    /// DEVICE_UPDATABLE_KERNEL_NODE entry, handed back to the caller's entry.
    ///
    /// # Safety
    /// As for `fill`, with the caller's entries writable; `fill` ran on this config.
    pub(crate) unsafe fn hand_back(&self, cfg: &LaunchConfig) {
        let Some((from, at)) = self.updatable else { return };
        let Some(copy) = self.a.get(at) else { return };
        // SAFETY: entry `at` was written by `fill`; CUDA wrote the node into it.
        let node = unsafe { copy.assume_init_ref().value.deviceUpdatableKernelNode.devNode };
        // SAFETY: entry `from` of the caller's list exists and is writable (contract).
        unsafe {
            let p = cfg.attributes.attrs.add(from);
            std::ptr::addr_of_mut!((*p).value.device_updatable_kernel_node.dev_node).write(node);
        }
    }
}

impl LaunchConfig {
    /// The one check of a config: its API when it is valid (every grid and block extent at
    /// least 1, no cluster or one of at least 1 in every extent, the reserved words zero, the
    /// dynamic shared memory within 32 bits, a known API). Decided in one pass with a single
    /// branch and no message, so the fast path can ask it; `check` explains a refusal. The
    /// attribute list is checked where it is copied (`CudaAttrs::fill`).
    #[inline]
    fn valid_api(&self) -> Option<Api> {
        let (g, b, c) = (&self.grid, &self.block, &self.cluster);
        let dims = (g.x != 0) & (g.y != 0) & (g.z != 0) & (b.x != 0) & (b.y != 0) & (b.z != 0);
        // No cluster, or one of at least 1 in every dimension.
        let cluster = ((c.x | c.y | c.z) == 0) | ((c.x != 0) & (c.y != 0) & (c.z != 0));
        let extra = self.reserved.iter().fold(self.reserved0 | self.attributes.reserved, |acc, &r| acc | r)
            | ((self.shared_mem_bytes as u64) >> 32) as u32;
        match (dims && cluster && extra == 0, self.api) {
            (true, 0) => Some(Api::Runtime),
            (true, 1) => Some(Api::Driver),
            _ => None,
        }
    }

    /// `valid_api` and the attribute list, with a refusal explained: what is wrong, in the
    /// order a reader checks.
    ///
    /// # Safety
    /// `self.attributes` holds `count` readable entries.
    #[inline(always)]
    unsafe fn check(&self) -> Result<Api> {
        match self.valid_api() {
            // SAFETY: this function's contract.
            Some(api) if !self.wants_attributes() || unsafe { self.attributes_ok() } => Ok(api),
            // SAFETY: as above.
            _ => Err(unsafe { self.why_refused() }),
        }
    }

    /// Whether the attribute list passes (`check_attributes` says why not).
    ///
    /// # Safety
    /// As `check`.
    #[inline(never)]
    unsafe fn attributes_ok(&self) -> bool {
        // SAFETY: this function's contract.
        unsafe { CudaAttrs::new().fill(self) }.is_none()
    }

    /// Why `check` refuses this config.
    ///
    /// # Safety
    /// As `check`.
    #[cold]
    #[inline(never)]
    unsafe fn why_refused(&self) -> Error {
        if self.valid_api().is_none() {
            return self.why_invalid();
        }
        // SAFETY: this function's contract.
        match unsafe { self.check_attributes() } {
            Err(e) => e,
            Ok(()) => Error::new(Status::Internal, "the launch attributes were refused without a reason"),
        }
    }

    /// The launch attributes, checked as a launch copies them (apart, so that a launch without
    /// any pays nothing for them).
    ///
    /// # Safety
    /// As `check`.
    #[inline(never)]
    unsafe fn check_attributes(&self) -> Result<()> {
        // SAFETY: this function's contract.
        match unsafe { CudaAttrs::new().fill(self) } {
            Some(p) => Err(p.error(self)),
            None => Ok(()),
        }
    }

    /// The first thing `valid_api` refuses in this config, as an error.
    #[cold]
    fn why_invalid(&self) -> Error {
        if let Err(e) = Api::try_from(self.api) {
            return e;
        }
        if self.grid.any_zero() || self.block.any_zero() {
            return Error::invalid(format!(
                "grid {{{}, {}, {}}} and block {{{}, {}, {}}} must be at least 1 in every dimension",
                self.grid.x, self.grid.y, self.grid.z, self.block.x, self.block.y, self.block.z
            ));
        }
        if !self.cluster.is_zero() && self.cluster.any_zero() {
            return Error::invalid("cluster must be {0,0,0} (none) or at least 1 in every dimension");
        }
        if self.reserved0 != 0 || self.attributes.reserved != 0 || self.reserved.iter().any(|&r| r != 0) {
            return Error::invalid(
                "cudyn_launch_config's reserved words are not zero: zero-initialise the config (e.g. `cudyn_launch_config cfg = {0};`)",
            );
        }
        if self.shared_mem_bytes > u32::MAX as usize {
            return Error::invalid("shared_mem_bytes does not fit in 32 bits");
        }
        Error::new(Status::Internal, "the launch configuration was refused without a reason")
    }

    /// Whether any launch attribute is asked for (most launches: none).
    #[inline]
    fn wants_attributes(&self) -> bool {
        let c = &self.cluster;
        (c.x | c.y
            | c.z
            | self.cooperative as u32
            | self.priority as u32
            | self.programmatic_serialization as u32
            | self.attributes.count)
            != 0
    }

    /// This config with the launch attributes `attrs` (replacing any it had).
    ///
    /// # Safety
    /// As for [`LaunchAttributes::new`]: the config returned, and every copy of it, is used
    /// only while `attrs` lives and nothing else writes to it.
    pub unsafe fn with_attributes(mut self, attrs: &mut [LaunchAttribute]) -> Result<LaunchConfig> {
        // SAFETY: this function's contract is `new`'s.
        self.attributes = unsafe { LaunchAttributes::new(attrs) }?;
        Ok(self)
    }

    /// The attributes CUDA would be given, as an initialised array (tests).
    #[cfg(test)]
    fn attributes_for_cuda(&self) -> std::result::Result<Vec<sys::CUlaunchAttribute>, AttrProblem> {
        let mut a = CudaAttrs::new();
        // SAFETY: tests build their lists from live slices.
        if let Some(p) = unsafe { a.fill(self) } {
            return Err(p);
        }
        // SAFETY: the first n entries were written.
        Ok(a.a[..a.n].iter().map(|x| unsafe { x.assume_init() }).collect())
    }
}

/// What is wrong with a launch's arguments (small, so the happy path moves nothing big).
enum ArgProblem {
    Count { params: usize },
    Null { index: usize },
    Size { index: usize, given: usize, param: u32 },
}

/// What is wrong with `args` (and `sizes`) for a kernel of `params`, in the order a reader
/// checks: the count, a NULL entry, each size.
fn problem(params: &[Param], args: &[*mut c_void], sizes: Option<&[usize]>) -> Option<ArgProblem> {
    if params.len() != args.len() {
        return Some(ArgProblem::Count { params: params.len() });
    }
    if let Some(index) = args.iter().position(|a| a.is_null()) {
        return Some(ArgProblem::Null { index });
    }
    let s = sizes?;
    s.iter().zip(params.iter()).position(|(&given, p)| given != p.size as usize).map(|index| ArgProblem::Size {
        index,
        given: s[index],
        param: params[index].size,
    })
}

fn refuse(p: ArgProblem, nargs: usize) -> Error {
    match p {
        ArgProblem::Count { params } => Error::new(
            Status::ArgumentMismatch,
            format!("the kernel takes {params} parameter(s) but {nargs} argument(s) were given"),
        ),
        ArgProblem::Null { index } => {
            Error::invalid(format!("argument {index} is NULL (each entry must point at the value)"))
        }
        ArgProblem::Size { index, given, param } => Error::new(
            Status::ArgumentMismatch,
            format!("argument {index} is {given} bytes but parameter {index} is {param} bytes"),
        ),
    }
}

/// Check the arguments against the kernel's parameters, the count always and each size when
/// `sizes` is given, with the registry's read lock held (`a` comes from `with_kernel`): a
/// known kernel against its layout (remembered, and entered in the launch table), a foreign
/// one against CUDA's answers now (the count takes two of them, the sizes one more each;
/// nothing of a foreign kernel can be remembered, see `registry`). Nothing is allocated
/// unless there is an error to describe.
fn check_args(a: &Access<'_>, k: Kernel, args: &[*mut c_void], sizes: Option<&[usize]>) -> Result<()> {
    let found = match a {
        Access::Known(known) => problem(known.layout()?, args, sizes),
        Access::Foreign => {
            let nulls = args.iter().any(|a| a.is_null());
            // SAFETY: not a kernel cudyn knows is dead; any other handle is the caller's
            // promise (a live kernel).
            if !nulls && unsafe { driver::kernel_has_params(k.0, args.len(), sizes) } {
                return Ok(());
            }
            // SAFETY: as above.
            problem(&unsafe { driver::kernel_params(k.0) }?, args, sizes)
        }
    };
    found.map_or(Ok(()), |p| Err(refuse(p, args.len())))
}

/// The checks that need no kernel: a non-NULL handle, the config (its API, its attribute
/// list), one size per argument. Allocation-free on success (tests/launch_alloc.rs proves it).
pub(crate) fn prepare(k: Kernel, cfg: &LaunchConfig, args: &[*mut c_void], sizes: Option<&[usize]>) -> Result<Api> {
    if k.0.is_null() {
        return Err(Error::invalid("kernel handle is NULL"));
    }
    // SAFETY: the config's attribute list is readable (its constructor's or the C caller's
    // contract).
    let api = unsafe { cfg.check() }?;
    if let Some(s) = sizes {
        if s.len() != args.len() {
            return Err(Error::invalid("arg_sizes must have one entry per argument"));
        }
    }
    Ok(api)
}

/// `cfg` checked as a launch checks it (the one check, then the attribute list), for the other
/// calls that take a launch config (the cluster occupancy queries).
///
/// # Safety
/// The config's attribute list is readable.
pub(crate) unsafe fn check_config(cfg: &LaunchConfig) -> Result<Api> {
    // SAFETY: this function's contract.
    unsafe { cfg.check() }
}

/// The full path's launch: under the registry's read lock, the kernel is judged (refused if
/// cudyn knows it is dead), the arguments checked against it, and CUDA's launch made, so no
/// unload through cudyn can come between the check and the launch. CUDA's result code, or
/// None when nothing was called (the attribute list refused, or the entry point missing).
///
/// # Safety
/// As `launch`; `resolve(api, cfg)` succeeded.
unsafe fn checked_call(
    k: Kernel,
    api: Api,
    cfg: &LaunchConfig,
    args: &[*mut c_void],
    sizes: Option<&[usize]>,
) -> Result<Option<u32>> {
    registry::with_kernel(k.0, |a| {
        check_args(&a, k, args, sizes)?;
        // SAFETY: this function's contract; the arguments were checked against the kernel,
        // which stays live until the lock is released.
        Ok(unsafe { call(api, k, cfg, kernel_params(args)) })
    })
}

/// CUDA_ERROR_INVALID_CONTEXT: the thread has no current context.
const CUDA_ERROR_INVALID_CONTEXT: u32 = 201;

/// Launch `k` as `cfg` says. `args` holds one pointer per parameter (CUDA's kernelParams);
/// `sizes`, when given, the size of each argument, checked against the parameter's.
///
/// The common launch (a valid config, a kernel already launched, CUDA already open) takes
/// the fast path (`fast`). Everything else, and every error to describe, goes through
/// `launch_full`.
///
/// # Safety
/// `k` is a live kernel (or one of a library cudyn unloaded); each of `args` points to a
/// value of its parameter's size that stays valid for the call; `cfg.stream` is NULL, a
/// special stream, or a live stream. cudyn checks the count (and with `sizes`, the sizes it is
/// told) against the kernel's parameters, but CUDA reads through the pointers.
#[inline]
pub unsafe fn launch(k: Kernel, cfg: &LaunchConfig, args: &[*mut c_void], sizes: Option<&[usize]>) -> Result<()> {
    // SAFETY (all three): this function's contract.
    match unsafe { fast(k, cfg, args, sizes) } {
        Fast::Launched => Ok(()),
        Fast::NotTaken => unsafe { launch_full(k, cfg, args, sizes) },
        Fast::Failed(api, code) => unsafe { failed(api, code, k, cfg, args, sizes) },
    }
}

/// What `fast` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fast {
    /// Launched: CUDA returned success.
    Launched,
    /// Not the common case: nothing was called; the full path decides.
    NotTaken,
    /// CUDA was called through `Api` and returned this error code (see `failed`).
    Failed(Api, u32),
}

/// The common launch, and nothing else: a valid config, a kernel in the launch table with
/// matching arguments, the API's launch entry point already resolved. The same checks as
/// `launch_full`, made without a lock, an allocation, a thread-local or an error message; then
/// CUDA's launch. It calls nothing that can panic, so the C entry points run it before their
/// panic guard.
///
/// # Safety
/// As `launch`.
#[inline(always)]
pub(crate) unsafe fn fast(k: Kernel, cfg: &LaunchConfig, args: &[*mut c_void], sizes: Option<&[usize]>) -> Fast {
    let Some(api) = cfg.valid_api() else { return Fast::NotTaken };
    if k.0.is_null() {
        return Fast::NotTaken;
    }
    // Held until CUDA's launch returns: an unload through cudyn waits for it (see `hot`).
    let Some(_launching) = hot::enter() else { return Fast::NotTaken };
    if !k.args_match_hot(args.len(), sizes) || args.iter().any(|a| a.is_null()) {
        return Fast::NotTaken;
    }
    // SAFETY: this function's contract; the arguments were checked against the kernel's
    // remembered layout, and its library cannot be unloaded through cudyn before the launch
    // returns (`_launching`).
    match unsafe { call(api, k, cfg, kernel_params(args)) } {
        None => Fast::NotTaken,
        Some(0) => Fast::Launched,
        Some(code) => Fast::Failed(api, code),
    }
}

/// CUDA's launch through `api`, with the entry points in the hot line: CUDA's result, or None
/// when the entry point it needs is not resolved yet (`resolve`). The launch attributes the
/// config asks for are built on the stack, in a function of their own so the common launch
/// stays small.
///
/// # Safety
/// As `launch`, with `params` holding one pointer per parameter of `k` (or NULL for none).
#[inline(always)]
unsafe fn call(api: Api, k: Kernel, cfg: &LaunchConfig, params: *mut *mut c_void) -> Option<u32> {
    if cfg.wants_attributes() {
        // SAFETY: this function's contract.
        return unsafe { call_with_attributes(api, k, cfg, params) };
    }
    // SAFETY: as above; no attributes.
    unsafe { call_with(api, k, cfg, params, std::ptr::null_mut(), 0) }
}

/// The launch with attributes: the named fields' and the caller's list's, checked and copied
/// onto the stack. None when the list is refused (nothing is called; the full path explains)
/// or the entry point is not resolved yet.
///
/// # Safety
/// As `call`, and the config's attribute list holds `count` readable (and, for a
/// device-updatable node, writable) entries.
#[inline(never)]
unsafe fn call_with_attributes(api: Api, k: Kernel, cfg: &LaunchConfig, params: *mut *mut c_void) -> Option<u32> {
    // Written only as far as used (no zeroing).
    let mut attrs = CudaAttrs::new();
    // SAFETY: this function's contract.
    if unsafe { attrs.fill(cfg) }.is_some() {
        return None;
    }
    let num = attrs.len();
    // SAFETY: this function's contract; the first `num` attributes were written.
    let code = unsafe { call_with(api, k, cfg, params, attrs.as_mut_ptr(), num) }?;
    if code == 0 {
        // SAFETY: `fill` ran on this config; the list's contract.
        unsafe { attrs.hand_back(cfg) };
    }
    Some(code)
}

/// `call` with `num` attributes at `attrs` (which outlive the call).
///
/// # Safety
/// As `call`, and the first `num` attributes at `attrs` are written.
#[inline(always)]
unsafe fn call_with(
    api: Api,
    k: Kernel,
    cfg: &LaunchConfig,
    params: *mut *mut c_void,
    attrs: *mut sys::CUlaunchAttribute,
    num: u32,
) -> Option<u32> {
    // SAFETY (all three): each entry point is the one its getter names (hot); `k` is a live
    // kernel and the stream NULL, special or live (the launch's contract); params holds one
    // non-NULL pointer per parameter (checked by the caller); the first `num` attributes are
    // written, and the driver's and the runtime's attribute arrays are layout-identical
    // (asserted above).
    let code = match api {
        Api::Driver => {
            let f = hot::LINE.cu_launch()?;
            let c = driver_config(cfg, attrs, num);
            // SAFETY: as above.
            unsafe { driver::launch_kernel_ex(f, &c, k.0, params) }
        }
        Api::Runtime if num == 0 => {
            // No attributes: the plain launch, CUDA's cheapest runtime entry point.
            let f = hot::LINE.cuda_launch()?;
            let (grid, block) = dims(cfg);
            // SAFETY: as above.
            unsafe { runtime::launch_kernel(f, k.0, grid, block, params, cfg.shared_mem_bytes, cfg.stream) }
        }
        Api::Runtime => {
            let f = hot::LINE.cuda_launch_ex()?;
            let c = runtime_config(cfg, attrs, num);
            // SAFETY: as above.
            unsafe { runtime::launch_kernel_ex(f, &c, k.0, params) }
        }
    };
    Some(code)
}

/// Open CUDA for `api` and put the launch entry point `cfg` needs in the hot line.
fn resolve(api: Api, cfg: &LaunchConfig) -> Result<()> {
    match api {
        Api::Driver => hot::LINE.set_cu_launch(driver::launch_entry()?),
        Api::Runtime if cfg.wants_attributes() => {
            hot::LINE.set_cuda_launch_ex(runtime::launch_ex_entry()?);
            // A list of nothing but IGNORE entries launches without attributes.
            hot::LINE.set_cuda_launch(runtime::launch_entry()?);
        }
        Api::Runtime => hot::LINE.set_cuda_launch(runtime::launch_entry()?),
    }
    Ok(())
}

/// A launch returned `code` (not success). Through the driver, CUDA_ERROR_INVALID_CONTEXT
/// means the thread has no current context and nothing was launched: make the one the runtime
/// would use current for one more try, checked again under the registry's lock, then restore
/// the thread's state (checking first would cost every launch a driver call; this costs only
/// the launches of threads without a context). Anything else is reported.
///
/// # Safety
/// As `launch`: the same kernel, config, arguments and sizes that returned `code`.
#[cold]
#[inline(never)]
pub(crate) unsafe fn failed(
    api: Api,
    code: u32,
    k: Kernel,
    cfg: &LaunchConfig,
    args: &[*mut c_void],
    sizes: Option<&[usize]>,
) -> Result<()> {
    let code = match api {
        Api::Driver if code == CUDA_ERROR_INVALID_CONTEXT => {
            // The context is current for this launch only: the thread's state is restored
            // when the scope ends (a primary context stays retained: the work lives in it).
            // SAFETY: the stream is NULL, special or live (this function's contract).
            let _scope = unsafe { driver::driver()?.context_for_stream(cfg.stream) }?;
            // SAFETY: this function's contract; `api`'s entry point was resolved (it returned
            // `code`).
            unsafe { checked_call(k, api, cfg, args, sizes) }?.unwrap_or(code)
        }
        _ => code,
    };
    match (code, api) {
        (0, _) => Ok(()),
        (_, Api::Driver) => Err(driver::launch_error(code)),
        (_, Api::Runtime) => Err(runtime::launch_error(code)),
    }
}

/// CUDA's kernelParams for `args`: NULL for a kernel without parameters.
fn kernel_params(args: &[*mut c_void]) -> *mut *mut c_void {
    if args.is_empty() {
        std::ptr::null_mut()
    } else {
        args.as_ptr() as *mut *mut c_void
    }
}

fn driver_config(cfg: &LaunchConfig, attrs: *mut sys::CUlaunchAttribute, num: u32) -> sys::CUlaunchConfig {
    sys::CUlaunchConfig {
        gridDimX: cfg.grid.x,
        gridDimY: cfg.grid.y,
        gridDimZ: cfg.grid.z,
        blockDimX: cfg.block.x,
        blockDimY: cfg.block.y,
        blockDimZ: cfg.block.z,
        sharedMemBytes: cfg.shared_mem_bytes as u32,
        hStream: cfg.stream,
        attrs,
        numAttrs: num,
    }
}

fn runtime_config(cfg: &LaunchConfig, attrs: *mut sys::CUlaunchAttribute, num: u32) -> sys::cudaLaunchConfig_t {
    let (grid, block) = dims(cfg);
    sys::cudaLaunchConfig_t {
        gridDim: grid,
        blockDim: block,
        dynamicSmemBytes: cfg.shared_mem_bytes,
        stream: cfg.stream,
        attrs: attrs as *mut sys::cudaLaunchAttribute,
        numAttrs: num,
    }
}

fn dims(cfg: &LaunchConfig) -> (sys::dim3, sys::dim3) {
    (
        sys::dim3 { x: cfg.grid.x, y: cfg.grid.y, z: cfg.grid.z },
        sys::dim3 { x: cfg.block.x, y: cfg.block.y, z: cfg.block.z },
    )
}

/// Every launch the fast path does not take: all checks with their messages, attributes,
/// opening CUDA on first use. Called once `fast` said `NotTaken` (by `launch`, and by the C
/// entry points, which try `fast` before their panic guard): it does not try the fast path
/// again.
///
/// # Safety
/// As `launch`.
#[inline(never)]
pub(crate) unsafe fn launch_full(
    k: Kernel,
    cfg: &LaunchConfig,
    args: &[*mut c_void],
    sizes: Option<&[usize]>,
) -> Result<()> {
    let api = prepare(k, cfg, args, sizes)?;
    resolve(api, cfg)?;
    // Opened outside the registry's lock; the foreign check reads parameters through the driver.
    driver::open();
    // SAFETY: this function's contract; `api`'s entry point is resolved.
    match unsafe { checked_call(k, api, cfg, args, sizes) }? {
        Some(0) => Ok(()),
        // SAFETY: as above.
        Some(code) => unsafe { failed(api, code, k, cfg, args, sizes) },
        // `prepare` accepted the attributes, so the caller changed them while this ran (or the
        // entry point vanished): say which.
        // SAFETY: as above.
        None => Err(unsafe { cfg.check() }
            .err()
            .unwrap_or_else(|| Error::new(Status::Internal, "the launch entry point was resolved but is missing"))),
    }
}

/// Check a launch as `launch` would, without launching: for tests and for callers that want
/// to validate a configuration ahead of a hot loop.
pub fn validate(k: Kernel, cfg: &LaunchConfig, args: &[*mut c_void], sizes: Option<&[usize]>) -> Result<()> {
    // `prepare` checks the attribute list too (a non-empty list can only be made with an
    // unsafe constructor whose contract keeps it readable).
    prepare(k, cfg, args, sizes)?;
    driver::open();
    registry::with_kernel(k.0, |a| check_args(&a, k, args, sizes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Param;

    /// `check`, for configs whose attribute lists are live slices.
    fn check(c: &LaunchConfig) -> Result<Api> {
        // SAFETY: every list in these tests points into a live slice.
        unsafe { c.check() }
    }

    #[test]
    fn config_checks() {
        let ok = LaunchConfig::default();
        assert_eq!(check(&ok).unwrap(), Api::Runtime);
        let mut c = ok;
        c.api = 7;
        assert_eq!(check(&c).unwrap_err().status, Status::InvalidArgument);
        let mut c = ok;
        c.grid.y = 0;
        assert_eq!(check(&c).unwrap_err().status, Status::InvalidArgument);
        let mut c = ok;
        c.cluster = Dim3::new(2, 0, 1);
        assert_eq!(check(&c).unwrap_err().status, Status::InvalidArgument);
        let mut c = ok;
        c.reserved[3] = 1;
        assert!(check(&c).unwrap_err().message.contains("zero-initialise"));
        let mut c = ok;
        c.reserved0 = 1;
        assert!(check(&c).unwrap_err().message.contains("zero-initialise"));
        let mut c = ok;
        c.attributes.reserved = 1;
        assert!(check(&c).unwrap_err().message.contains("zero-initialise"));
    }

    #[test]
    fn attributes_only_for_what_is_set() {
        let mut c = LaunchConfig { grid: Dim3::x(4), ..Default::default() };
        assert!(c.attributes_for_cuda().unwrap().is_empty());
        c.cluster = Dim3::new(2, 1, 1);
        c.cooperative = 1;
        c.priority = -1;
        c.programmatic_serialization = 1;
        let a = c.attributes_for_cuda().unwrap();
        assert_eq!(a.len(), 4);
        assert_eq!(a[0].id, sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
        // SAFETY: reading the union member that was written.
        unsafe {
            assert_eq!(a[0].value.clusterDim.x, 2);
            assert_eq!(a[2].value.priority, -1);
        }
    }

    /// Every launch attribute reaches CUDA as CUDA's own struct, byte for byte in its value, the
    /// named fields first; IGNORE entries are dropped; priority 0 is a priority.
    #[test]
    fn every_attribute_is_copied_for_cuda() {
        let ev = 0x5000 as EventHandle;
        let mut list = vec![
            LaunchAttribute::access_policy_window(AccessPolicyWindow {
                base_ptr: 0x1000 as *mut c_void,
                num_bytes: 4096,
                hit_ratio: 0.5,
                hit_prop: AccessProperty::Persisting as u32,
                miss_prop: AccessProperty::Streaming as u32,
            }),
            LaunchAttribute::ignore(),
            LaunchAttribute::cooperative(false),
            LaunchAttribute::cluster_dimension(Dim3::new(2, 1, 1)),
            LaunchAttribute::cluster_scheduling_policy(ClusterSchedulingPolicy::Spread),
            LaunchAttribute::programmatic_stream_serialization(true),
            // SAFETY: never launched.
            unsafe { LaunchAttribute::programmatic_event(ev, true) },
            LaunchAttribute::priority(0),
            LaunchAttribute::mem_sync_domain_map(MemSyncDomainMap { default_: 1, remote: 2 }),
            LaunchAttribute::mem_sync_domain(MemSyncDomain::Remote),
            LaunchAttribute::preferred_cluster_dimension(Dim3::new(4, 1, 1)),
            // SAFETY: never launched.
            unsafe { LaunchAttribute::launch_completion_event(ev) },
            LaunchAttribute::device_updatable_kernel_node(true),
            LaunchAttribute::preferred_shared_memory_carveout(50),
            LaunchAttribute::nvlink_util_centric_scheduling(true),
            LaunchAttribute::ignore(),
        ];
        let base = LaunchConfig { grid: Dim3::new(8, 2, 1), ..Default::default() };
        // SAFETY: `list` outlives every use of the config.
        let c = unsafe { base.with_attributes(&mut list) }.unwrap();
        let a = c.attributes_for_cuda().unwrap();
        let want: Vec<u32> = vec![1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16];
        assert_eq!(a.iter().map(|x| x.id.0).collect::<Vec<_>>(), want);
        // SAFETY: reading the union members the ids name (CUDA's names for cudyn's fields).
        unsafe {
            assert_eq!(a[0].value.accessPolicyWindow.num_bytes, 4096);
            assert_eq!(a[0].value.accessPolicyWindow.hitRatio, 0.5);
            assert_eq!(a[0].value.accessPolicyWindow.hitProp.0, 2);
            assert_eq!(a[0].value.accessPolicyWindow.missProp.0, 1);
            assert_eq!(a[1].value.cooperative, 0);
            assert_eq!(a[2].value.clusterDim.x, 2);
            assert_eq!(a[3].value.clusterSchedulingPolicyPreference.0, 1);
            assert_eq!(a[5].value.programmaticEvent.event as usize, 0x5000);
            assert_eq!(a[5].value.programmaticEvent.triggerAtBlockStart, 1);
            assert_eq!(a[6].value.priority, 0);
            assert_eq!((a[7].value.memSyncDomainMap.default_, a[7].value.memSyncDomainMap.remote), (1, 2));
            assert_eq!(a[8].value.memSyncDomain.0, 1);
            assert_eq!(a[9].value.preferredClusterDim.x, 4);
            assert_eq!(a[10].value.launchCompletionEvent.event as usize, 0x5000);
            assert_eq!(a[11].value.deviceUpdatableKernelNode.deviceUpdatable, 1);
            assert_eq!(a[12].value.sharedMemCarveout, 50);
            assert_eq!(a[13].value.nvlinkUtilCentricScheduling, 1);
        }
        // With the named fields too: theirs first, then the list's.
        let mut list = vec![LaunchAttribute::priority(0), LaunchAttribute::mem_sync_domain(MemSyncDomain::Default)];
        let base = LaunchConfig { grid: Dim3::x(2), cooperative: 1, ..Default::default() };
        // SAFETY: as above.
        let c = unsafe { base.with_attributes(&mut list) }.unwrap();
        let ids: Vec<u32> = c.attributes_for_cuda().unwrap().iter().map(|x| x.id.0).collect();
        assert_eq!(ids, vec![2, 8, 10]);
    }

    /// Unknown ids, the stream-only one, duplicates (within the list and against a named field)
    /// and every refused value: refused, each with its own message, before CUDA is called.
    #[test]
    fn bad_attribute_lists_are_refused_with_a_reason() {
        let ev = 0x5000 as EventHandle;
        let raw = |id: u32| {
            let mut a = LaunchAttribute::ignore();
            a.id = id;
            a
        };
        let with = |f: &dyn Fn(&mut LaunchAttribute), base: LaunchAttribute| {
            let mut a = base;
            f(&mut a);
            a
        };
        let grid = LaunchConfig { grid: Dim3::new(6, 2, 1), ..Default::default() };
        let named =
            LaunchConfig { cluster: Dim3::x(2), cooperative: 1, priority: 3, programmatic_serialization: 1, ..grid };
        let cases: Vec<(LaunchConfig, Vec<LaunchAttribute>, &str)> = vec![
            (grid, vec![raw(15)], "id 15 is not a launch attribute"),
            (grid, vec![raw(17)], "id 17 is not a launch attribute"),
            (grid, vec![raw(u32::MAX)], "is not a launch attribute"),
            (grid, vec![raw(3)], "stream attribute"),
            (
                grid,
                vec![LaunchAttribute::priority(1), LaunchAttribute::ignore(), LaunchAttribute::priority(2)],
                "given twice",
            ),
            (named, vec![LaunchAttribute::cluster_dimension(Dim3::x(2))], "`cluster` field"),
            (named, vec![LaunchAttribute::cooperative(true)], "`cooperative` field"),
            (named, vec![LaunchAttribute::priority(0)], "`priority` field"),
            (
                named,
                vec![LaunchAttribute::programmatic_stream_serialization(false)],
                "`programmatic_serialization` field",
            ),
            (
                grid,
                vec![with(
                    &|a| a.value.access_policy_window.hit_ratio = 1.5,
                    LaunchAttribute::access_policy_window(AccessPolicyWindow {
                        base_ptr: std::ptr::null_mut(),
                        num_bytes: 0,
                        hit_ratio: 0.0,
                        hit_prop: 0,
                        miss_prop: 0,
                    }),
                )],
                "hit_ratio",
            ),
            (
                grid,
                vec![LaunchAttribute::access_policy_window(AccessPolicyWindow {
                    base_ptr: std::ptr::null_mut(),
                    num_bytes: 0,
                    hit_ratio: f32::NAN,
                    hit_prop: 0,
                    miss_prop: 0,
                })],
                "hit_ratio",
            ),
            (
                grid,
                vec![LaunchAttribute::access_policy_window(AccessPolicyWindow {
                    base_ptr: std::ptr::null_mut(),
                    num_bytes: 0,
                    hit_ratio: 0.5,
                    hit_prop: 3,
                    miss_prop: 0,
                })],
                "cudyn_access_property",
            ),
            (grid, vec![LaunchAttribute::cluster_dimension(Dim3::new(2, 0, 1))], "at least 1"),
            (grid, vec![LaunchAttribute::cluster_dimension(Dim3::x(4))], "divide the grid"),
            (LaunchConfig { cluster: Dim3::x(4), ..grid }, vec![], "divide the grid"),
            (
                grid,
                vec![with(
                    &|a| a.value.cluster_scheduling_policy_preference = 3,
                    LaunchAttribute::cluster_scheduling_policy(ClusterSchedulingPolicy::Default),
                )],
                "cudyn_cluster_scheduling_policy",
            ),
            // SAFETY: never launched.
            (grid, vec![unsafe { LaunchAttribute::programmatic_event(std::ptr::null_mut(), false) }], "event is NULL"),
            (
                grid,
                vec![with(&|a| a.value.programmatic_event.flags = 1, unsafe {
                    LaunchAttribute::programmatic_event(ev, false)
                })],
                "flags must be 0",
            ),
            (grid, vec![unsafe { LaunchAttribute::launch_completion_event(std::ptr::null_mut()) }], "event is NULL"),
            (
                grid,
                vec![with(&|a| a.value.launch_completion_event.flags = 1, unsafe {
                    LaunchAttribute::launch_completion_event(ev)
                })],
                "flags must be 0",
            ),
            (
                grid,
                vec![with(&|a| a.value.mem_sync_domain = 2, LaunchAttribute::mem_sync_domain(MemSyncDomain::Default))],
                "cudyn_mem_sync_domain",
            ),
            (grid, vec![LaunchAttribute::preferred_cluster_dimension(Dim3::x(4))], "divide the grid's"),
            (
                grid,
                vec![
                    LaunchAttribute::cluster_dimension(Dim3::new(2, 2, 1)),
                    LaunchAttribute::preferred_cluster_dimension(Dim3::new(3, 2, 1)),
                ],
                "multiple of the cluster's",
            ),
            (
                grid,
                vec![with(
                    &|a| a.value.device_updatable_kernel_node.device_updatable = 2,
                    LaunchAttribute::device_updatable_kernel_node(true),
                )],
                "0 or 1",
            ),
            (grid, vec![LaunchAttribute::preferred_shared_memory_carveout(101)], "0 to 100"),
            (
                grid,
                vec![with(
                    &|a| a.value.nvlink_util_centric_scheduling = 2,
                    LaunchAttribute::nvlink_util_centric_scheduling(true),
                )],
                "0 or 1",
            ),
        ];
        for (base, mut list, why) in cases {
            // SAFETY: `list` outlives the config.
            let c = unsafe { base.with_attributes(&mut list) }.unwrap();
            let e = check(&c).unwrap_err();
            assert_eq!(e.status, Status::InvalidArgument, "{why}: {}", e.message);
            assert!(e.message.contains(why), "{why}: {}", e.message);
        }
        // A count without a list, and one too large.
        let mut c = grid;
        c.attributes.count = 2;
        assert!(check(&c).unwrap_err().message.contains("attrs is NULL"));
        let mut many = vec![LaunchAttribute::ignore(); MAX_LAUNCH_ATTRIBUTES as usize + 1];
        // SAFETY: as above.
        assert!(unsafe { grid.with_attributes(&mut many) }.unwrap_err().message.contains("at most 64"));
        let mut c = grid;
        c.attributes = LaunchAttributes { attrs: many.as_mut_ptr(), count: MAX_LAUNCH_ATTRIBUTES + 1, reserved: 0 };
        assert!(check(&c).unwrap_err().message.contains("at most 64"));
        // 64 IGNORE entries are fine, and give CUDA nothing.
        // SAFETY: as above.
        let c = unsafe { grid.with_attributes(&mut many[..64]) }.unwrap();
        assert!(check(&c).is_ok());
        assert!(c.attributes_for_cuda().unwrap().is_empty());
    }

    /// A launch hands the device-updatable node CUDA wrote in its copy back to the caller's
    /// entry, and touches nothing else of the list.
    #[test]
    fn the_device_updatable_node_is_handed_back() {
        let mut list = vec![LaunchAttribute::priority(1), LaunchAttribute::device_updatable_kernel_node(true)];
        let before: Vec<[u8; 72]> = list.iter().map(|a| unsafe { std::mem::transmute_copy(a) }).collect();
        // SAFETY: `list` outlives the config.
        let c = unsafe { LaunchConfig::default().with_attributes(&mut list) }.unwrap();
        let mut a = CudaAttrs::new();
        // SAFETY: a live list.
        assert!(unsafe { a.fill(&c) }.is_none());
        // As CUDA would: the node into the copy.
        // SAFETY: entry 1 of the copy is the device-updatable one.
        unsafe { (*a.as_mut_ptr().add(1)).value.deviceUpdatableKernelNode.devNode = 0x7777 as *mut _ };
        // SAFETY: `fill` ran on `c`; its list is live and writable.
        unsafe { a.hand_back(&c) };
        assert_eq!(list[1].device_node(), Some(0x7777 as *mut _));
        assert_eq!(list[0].device_node(), None);
        let first: [u8; 72] = unsafe { std::mem::transmute_copy(&list[0]) };
        assert_eq!(first, before[0]);
    }

    /// The rules a config must meet, written out plainly: the spec `valid_api` computes in
    /// one pass.
    fn spec(c: &LaunchConfig) -> Option<Api> {
        let api = Api::try_from(c.api).ok()?;
        let dims_ok = [c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y, c.block.z].iter().all(|&d| d >= 1);
        let cluster = [c.cluster.x, c.cluster.y, c.cluster.z];
        let cluster_ok = cluster.iter().all(|&d| d == 0) || cluster.iter().all(|&d| d >= 1);
        let reserved_ok = c.reserved.iter().all(|&r| r == 0) && c.reserved0 == 0 && c.attributes.reserved == 0;
        let shared_ok = c.shared_mem_bytes <= u32::MAX as usize;
        (dims_ok && cluster_ok && reserved_ok && shared_ok).then_some(api)
    }

    /// The one check (`valid_api`, which the fast path and `check` both use) accepts exactly
    /// the configs the spec accepts, and every refusal is explained (never the "without a
    /// reason" fallback).
    #[test]
    fn the_config_check_meets_the_spec_and_explains_every_refusal() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let pick = |v: u64| -> u32 { [0, 1, 2, u32::MAX][v as usize] };
        let (mut accepted, mut refused) = (0, 0);
        for _ in 0..200_000 {
            let mut c = LaunchConfig::default();
            // Mostly valid fields, each sometimes not.
            let field = |next: &mut dyn FnMut(u64) -> u64| if next(8) == 0 { pick(next(4)) } else { 1 };
            c.grid = Dim3::new(field(&mut next), field(&mut next), field(&mut next));
            c.block = Dim3::new(field(&mut next), field(&mut next), field(&mut next));
            if next(6) == 0 {
                c.cluster = Dim3::new(pick(next(4)), pick(next(4)), pick(next(4)));
            }
            c.api = [0, 1, 2, 0x8000_0000][next(4) as usize];
            c.cooperative = (next(8) == 0) as i32;
            c.priority = if next(8) == 0 { -1 } else { 0 };
            c.programmatic_serialization = (next(8) == 0) as i32;
            match next(16) {
                0 => c.reserved[next(4) as usize] = 1 << next(32),
                1 => c.reserved0 = 1 << next(32),
                2 => c.attributes.reserved = 1 << next(32),
                _ => {}
            }
            c.shared_mem_bytes = match next(8) {
                0 => (u32::MAX as usize) + 1,
                1 => u32::MAX as usize,
                _ => 48 * 1024,
            };
            assert_eq!(c.valid_api(), spec(&c), "{c:?}");
            match check(&c) {
                Ok(api) => {
                    assert_eq!(Some(api), spec(&c));
                    accepted += 1;
                }
                Err(e) => {
                    assert_eq!(e.status, Status::InvalidArgument, "{c:?}: {}", e.message);
                    // What the one-pass check accepts, only the attributes can refuse: here,
                    // a named cluster that does not divide the grid.
                    if spec(&c).is_some() {
                        assert!(e.message.contains("divide the grid"), "{c:?}: {}", e.message);
                    }
                    refused += 1;
                }
            }
        }
        assert!(accepted > 10_000 && refused > 10_000, "both sides exercised: {accepted} / {refused}");
    }

    #[test]
    fn hot_layout_check_agrees_and_expires() {
        let k = Kernel(0x7700 as *mut _);
        let lib = 0x7700_0000 as sys::CUlibrary;
        // SAFETY: the kernel is never launched; the layout is the one this test checks against.
        unsafe { crate::registry::prime(k.0, lib, &[Param { offset: 0, size: 8 }, Param { offset: 8, size: 4 }]) };
        // Not in the launch table until its layout is looked up once.
        assert!(!k.args_match_hot(2, None));
        assert_eq!(k.param_count().unwrap(), 2);
        assert!(k.args_match_hot(2, None));
        assert!(k.args_match_hot(2, Some(&[8, 4])));
        assert!(!k.args_match_hot(1, None));
        assert!(!k.args_match_hot(3, None));
        assert!(!k.args_match_hot(2, Some(&[8, 8])));
        assert!(!k.args_match_hot(2, Some(&[8])));
        // Another kernel is not this one.
        assert!(!Kernel(0x7708 as *mut _).args_match_hot(2, None));
        // Unloading the kernel's own library retires it: the next use is a clear error
        // (use after unload), not a launch of a dangling handle. (The stand-in unload does
        // not call CUDA; without a driver, the liveness question has no "live" answer.)
        crate::registry::unload(lib, Api::Driver, || Ok(())).unwrap();
        assert!(!k.args_match_hot(2, None));
        let e = k.param_count().unwrap_err();
        assert!(e.message.contains("unloaded") || e.status != Status::Success, "{}", e.message);
        // ... and the library itself is never handed to CUDA again.
        // SAFETY: a library cudyn unloaded: refused without calling CUDA.
        let e = unsafe { crate::library::unload_raw(lib, Api::Driver) }.unwrap_err();
        assert!(e.message.contains("unloaded through cudyn"), "{}", e.message);
    }

    #[test]
    fn null_kernel_is_refused() {
        // SAFETY: a NULL kernel is refused before anything is read.
        let e = unsafe { launch(Kernel(std::ptr::null_mut()), &LaunchConfig::default(), &[], None) }.unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
    }
}
