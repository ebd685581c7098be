//! Every CUresult of CUDA 13.0's cuda.h and every cudaError_t of its driver_types.h has the
//! cudyn status decided for it, here, by name: the headers are read at test time, so a value a
//! newer CUDA adds fails this test until someone decides what it means, and a number that moves
//! is caught too. (CUDA_ERROR_NVLINK_UNCORRECTABLE, 220, was once taken for an invalid image.)

use cudyn::cuda::{status_of_cu_result, status_of_cuda_error};
use cudyn::Status;
use std::collections::BTreeMap;

/// The verdicts, by status: every name not listed under another status is listed under Cuda.
fn verdicts(table: &[(Status, &[&str])]) -> BTreeMap<String, Status> {
    let mut m = BTreeMap::new();
    for (status, names) in table {
        for n in *names {
            assert!(m.insert(n.to_string(), *status).is_none(), "{n} is listed twice");
        }
    }
    m
}

/// `NAME = number` entries of the enum whose body starts after `open` and ends at `close`.
fn enum_values(header: &str, open: &str, close: &str, prefix: &str) -> BTreeMap<String, u32> {
    let root = std::path::PathBuf::from(env!("CUDYN_CUDA_ROOT"));
    let text = std::fs::read_to_string(root.join("include").join(header)).unwrap_or_else(|e| panic!("{header}: {e}"));
    let body = &text[text.find(open).unwrap_or_else(|| panic!("{open} in {header}"))..];
    let body = &body[..body.find(close).unwrap_or_else(|| panic!("{close} in {header}"))];
    let mut out = BTreeMap::new();
    for line in body.lines() {
        let t = line.trim().trim_start_matches(',').trim();
        if !t.starts_with(prefix) {
            continue;
        }
        let Some((name, rest)) = t.split_once('=') else { continue };
        let num: String = rest.trim().chars().take_while(|c| c.is_ascii_digit()).collect();
        out.insert(name.trim().to_string(), num.parse().unwrap_or_else(|_| panic!("{name}: {rest}")));
    }
    assert!(out.len() > 50, "read too few values of {open}: {out:?}");
    out
}

fn walk(values: &BTreeMap<String, u32>, table: &BTreeMap<String, Status>, map: fn(u32) -> Status, what: &str) {
    let unlisted: Vec<&String> = values.keys().filter(|n| !table.contains_key(*n)).collect();
    assert!(unlisted.is_empty(), "{what} values with no verdict here (decide their cudyn status): {unlisted:?}");
    let gone: Vec<&String> = table.keys().filter(|n| !values.contains_key(*n)).collect();
    assert!(gone.is_empty(), "{what} names listed here but not in the header: {gone:?}");
    for (name, &code) in values {
        assert_eq!(map(code), table[name], "{what} {name} ({code})");
    }
    // A number no header names is CUDYN_ERROR_CUDA (cudyn_last_cuda_error says which).
    for code in [10, 11, 14, 15, 999_999, u32::MAX] {
        if !values.values().any(|&v| v == code) {
            assert_eq!(map(code), Status::Cuda, "{what} {code}");
        }
    }
}

#[test]
fn every_cuda_result_has_its_status() {
    let values = enum_values("cuda.h", "typedef enum cudaError_enum {", "} CUresult;", "CUDA_");
    let table = verdicts(&[
        (Status::Success, &["CUDA_SUCCESS"]),
        (
            Status::InvalidArgument,
            &[
                "CUDA_ERROR_INVALID_VALUE",
                "CUDA_ERROR_INVALID_CONTEXT",
                "CUDA_ERROR_INVALID_HANDLE",
                "CUDA_ERROR_CONTEXT_IS_DESTROYED",
                "CUDA_ERROR_INVALID_CLUSTER_SIZE",
            ],
        ),
        (Status::DriverNotFound, &["CUDA_ERROR_STUB_LIBRARY"]),
        (Status::UnsupportedVersion, &["CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER", "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"]),
        (
            Status::NoDevice,
            &[
                "CUDA_ERROR_DEVICE_UNAVAILABLE",
                "CUDA_ERROR_NO_DEVICE",
                "CUDA_ERROR_INVALID_DEVICE",
                "CUDA_ERROR_DEVICE_NOT_LICENSED",
            ],
        ),
        (Status::InvalidImage, &["CUDA_ERROR_INVALID_IMAGE", "CUDA_ERROR_INVALID_PTX", "CUDA_ERROR_INVALID_SOURCE"]),
        (Status::NoBinaryForDevice, &["CUDA_ERROR_NO_BINARY_FOR_GPU"]),
        (Status::Io, &["CUDA_ERROR_FILE_NOT_FOUND", "CUDA_ERROR_OPERATING_SYSTEM"]),
        (Status::NotFound, &["CUDA_ERROR_NOT_FOUND"]),
        (
            Status::Cuda,
            &[
                "CUDA_ERROR_OUT_OF_MEMORY",
                "CUDA_ERROR_NOT_INITIALIZED",
                "CUDA_ERROR_DEINITIALIZED",
                "CUDA_ERROR_PROFILER_DISABLED",
                "CUDA_ERROR_PROFILER_NOT_INITIALIZED",
                "CUDA_ERROR_PROFILER_ALREADY_STARTED",
                "CUDA_ERROR_PROFILER_ALREADY_STOPPED",
                "CUDA_ERROR_CONTEXT_ALREADY_CURRENT",
                "CUDA_ERROR_MAP_FAILED",
                "CUDA_ERROR_UNMAP_FAILED",
                "CUDA_ERROR_ARRAY_IS_MAPPED",
                "CUDA_ERROR_ALREADY_MAPPED",
                "CUDA_ERROR_ALREADY_ACQUIRED",
                "CUDA_ERROR_NOT_MAPPED",
                "CUDA_ERROR_NOT_MAPPED_AS_ARRAY",
                "CUDA_ERROR_NOT_MAPPED_AS_POINTER",
                "CUDA_ERROR_ECC_UNCORRECTABLE",
                "CUDA_ERROR_UNSUPPORTED_LIMIT",
                "CUDA_ERROR_CONTEXT_ALREADY_IN_USE",
                "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
                "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT",
                "CUDA_ERROR_NVLINK_UNCORRECTABLE",
                "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
                "CUDA_ERROR_JIT_COMPILATION_DISABLED",
                "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY",
                "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC",
                "CUDA_ERROR_CONTAINED",
                "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND",
                "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED",
                "CUDA_ERROR_ILLEGAL_STATE",
                "CUDA_ERROR_LOSSY_QUERY",
                "CUDA_ERROR_NOT_READY",
                "CUDA_ERROR_ILLEGAL_ADDRESS",
                "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
                "CUDA_ERROR_LAUNCH_TIMEOUT",
                "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING",
                "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
                "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED",
                "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE",
                "CUDA_ERROR_ASSERT",
                "CUDA_ERROR_TOO_MANY_PEERS",
                "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
                "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
                "CUDA_ERROR_HARDWARE_STACK_ERROR",
                "CUDA_ERROR_ILLEGAL_INSTRUCTION",
                "CUDA_ERROR_MISALIGNED_ADDRESS",
                "CUDA_ERROR_INVALID_ADDRESS_SPACE",
                "CUDA_ERROR_INVALID_PC",
                "CUDA_ERROR_LAUNCH_FAILED",
                "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
                "CUDA_ERROR_TENSOR_MEMORY_LEAK",
                "CUDA_ERROR_NOT_PERMITTED",
                "CUDA_ERROR_NOT_SUPPORTED",
                "CUDA_ERROR_SYSTEM_NOT_READY",
                "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
                "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
                "CUDA_ERROR_MPS_CONNECTION_FAILED",
                "CUDA_ERROR_MPS_RPC_FAILURE",
                "CUDA_ERROR_MPS_SERVER_NOT_READY",
                "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED",
                "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED",
                "CUDA_ERROR_MPS_CLIENT_TERMINATED",
                "CUDA_ERROR_CDP_NOT_SUPPORTED",
                "CUDA_ERROR_CDP_VERSION_MISMATCH",
                "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
                "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
                "CUDA_ERROR_STREAM_CAPTURE_MERGE",
                "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
                "CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
                "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
                "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
                "CUDA_ERROR_CAPTURED_EVENT",
                "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
                "CUDA_ERROR_TIMEOUT",
                "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE",
                "CUDA_ERROR_EXTERNAL_DEVICE",
                "CUDA_ERROR_FUNCTION_NOT_LOADED",
                "CUDA_ERROR_INVALID_RESOURCE_TYPE",
                "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION",
                "CUDA_ERROR_KEY_ROTATION",
                "CUDA_ERROR_UNKNOWN",
            ],
        ),
    ]);
    walk(&values, &table, status_of_cu_result, "CUresult");
    assert_eq!(values["CUDA_ERROR_NVLINK_UNCORRECTABLE"], 220);
}

#[test]
fn every_runtime_error_has_its_status() {
    let values = enum_values("driver_types.h", "enum __device_builtin__ cudaError", "};", "cuda");
    let table = verdicts(&[
        (Status::Success, &["cudaSuccess"]),
        (
            Status::InvalidArgument,
            &[
                "cudaErrorInvalidValue",
                "cudaErrorInvalidConfiguration",
                "cudaErrorInvalidDevicePointer",
                "cudaErrorInvalidDeviceFunction",
                "cudaErrorDeviceUninitialized",
                "cudaErrorInvalidResourceHandle",
                "cudaErrorContextIsDestroyed",
                "cudaErrorInvalidClusterSize",
            ],
        ),
        (Status::DriverNotFound, &["cudaErrorStubLibrary"]),
        (
            Status::UnsupportedVersion,
            &["cudaErrorInsufficientDriver", "cudaErrorCallRequiresNewerDriver", "cudaErrorUnsupportedPtxVersion"],
        ),
        (
            Status::NoDevice,
            &[
                "cudaErrorDevicesUnavailable",
                "cudaErrorNoDevice",
                "cudaErrorInvalidDevice",
                "cudaErrorDeviceNotLicensed",
            ],
        ),
        (Status::InvalidImage, &["cudaErrorInvalidKernelImage", "cudaErrorInvalidPtx", "cudaErrorInvalidSource"]),
        (Status::NoBinaryForDevice, &["cudaErrorNoKernelImageForDevice"]),
        (Status::Io, &["cudaErrorFileNotFound", "cudaErrorOperatingSystem"]),
        (Status::NotFound, &["cudaErrorInvalidSymbol", "cudaErrorSymbolNotFound"]),
        (
            Status::Cuda,
            &[
                "cudaErrorMemoryAllocation",
                "cudaErrorInitializationError",
                "cudaErrorCudartUnloading",
                "cudaErrorProfilerDisabled",
                "cudaErrorProfilerNotInitialized",
                "cudaErrorProfilerAlreadyStarted",
                "cudaErrorProfilerAlreadyStopped",
                "cudaErrorInvalidPitchValue",
                "cudaErrorInvalidHostPointer",
                "cudaErrorInvalidTexture",
                "cudaErrorInvalidTextureBinding",
                "cudaErrorInvalidChannelDescriptor",
                "cudaErrorInvalidMemcpyDirection",
                "cudaErrorAddressOfConstant",
                "cudaErrorTextureFetchFailed",
                "cudaErrorTextureNotBound",
                "cudaErrorSynchronizationError",
                "cudaErrorInvalidFilterSetting",
                "cudaErrorInvalidNormSetting",
                "cudaErrorMixedDeviceExecution",
                "cudaErrorNotYetImplemented",
                "cudaErrorMemoryValueTooLarge",
                "cudaErrorInvalidSurface",
                "cudaErrorDuplicateVariableName",
                "cudaErrorDuplicateTextureName",
                "cudaErrorDuplicateSurfaceName",
                "cudaErrorIncompatibleDriverContext",
                "cudaErrorMissingConfiguration",
                "cudaErrorPriorLaunchFailure",
                "cudaErrorLaunchMaxDepthExceeded",
                "cudaErrorLaunchFileScopedTex",
                "cudaErrorLaunchFileScopedSurf",
                "cudaErrorSyncDepthExceeded",
                "cudaErrorLaunchPendingCountExceeded",
                "cudaErrorSoftwareValidityNotEstablished",
                "cudaErrorStartupFailure",
                "cudaErrorMapBufferObjectFailed",
                "cudaErrorUnmapBufferObjectFailed",
                "cudaErrorArrayIsMapped",
                "cudaErrorAlreadyMapped",
                "cudaErrorAlreadyAcquired",
                "cudaErrorNotMapped",
                "cudaErrorNotMappedAsArray",
                "cudaErrorNotMappedAsPointer",
                "cudaErrorECCUncorrectable",
                "cudaErrorUnsupportedLimit",
                "cudaErrorDeviceAlreadyInUse",
                "cudaErrorPeerAccessUnsupported",
                "cudaErrorInvalidGraphicsContext",
                "cudaErrorNvlinkUncorrectable",
                "cudaErrorJitCompilerNotFound",
                "cudaErrorJitCompilationDisabled",
                "cudaErrorUnsupportedExecAffinity",
                "cudaErrorUnsupportedDevSideSync",
                "cudaErrorContained",
                "cudaErrorSharedObjectSymbolNotFound",
                "cudaErrorSharedObjectInitFailed",
                "cudaErrorIllegalState",
                "cudaErrorLossyQuery",
                "cudaErrorNotReady",
                "cudaErrorIllegalAddress",
                "cudaErrorLaunchOutOfResources",
                "cudaErrorLaunchTimeout",
                "cudaErrorLaunchIncompatibleTexturing",
                "cudaErrorPeerAccessAlreadyEnabled",
                "cudaErrorPeerAccessNotEnabled",
                "cudaErrorSetOnActiveProcess",
                "cudaErrorAssert",
                "cudaErrorTooManyPeers",
                "cudaErrorHostMemoryAlreadyRegistered",
                "cudaErrorHostMemoryNotRegistered",
                "cudaErrorHardwareStackError",
                "cudaErrorIllegalInstruction",
                "cudaErrorMisalignedAddress",
                "cudaErrorInvalidAddressSpace",
                "cudaErrorInvalidPc",
                "cudaErrorLaunchFailure",
                "cudaErrorCooperativeLaunchTooLarge",
                "cudaErrorTensorMemoryLeak",
                "cudaErrorNotPermitted",
                "cudaErrorNotSupported",
                "cudaErrorSystemNotReady",
                "cudaErrorSystemDriverMismatch",
                "cudaErrorCompatNotSupportedOnDevice",
                "cudaErrorMpsConnectionFailed",
                "cudaErrorMpsRpcFailure",
                "cudaErrorMpsServerNotReady",
                "cudaErrorMpsMaxClientsReached",
                "cudaErrorMpsMaxConnectionsReached",
                "cudaErrorMpsClientTerminated",
                "cudaErrorCdpNotSupported",
                "cudaErrorCdpVersionMismatch",
                "cudaErrorStreamCaptureUnsupported",
                "cudaErrorStreamCaptureInvalidated",
                "cudaErrorStreamCaptureMerge",
                "cudaErrorStreamCaptureUnmatched",
                "cudaErrorStreamCaptureUnjoined",
                "cudaErrorStreamCaptureIsolation",
                "cudaErrorStreamCaptureImplicit",
                "cudaErrorCapturedEvent",
                "cudaErrorStreamCaptureWrongThread",
                "cudaErrorTimeout",
                "cudaErrorGraphExecUpdateFailure",
                "cudaErrorExternalDevice",
                "cudaErrorFunctionNotLoaded",
                "cudaErrorInvalidResourceType",
                "cudaErrorInvalidResourceConfiguration",
                "cudaErrorUnknown",
                "cudaErrorApiFailureBase",
            ],
        ),
    ]);
    walk(&values, &table, status_of_cuda_error, "cudaError_t");
    assert_eq!(values["cudaErrorNvlinkUncorrectable"], 220);
}
