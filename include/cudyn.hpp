/* cudyn.hpp: a header-only C++17 wrapper over cudyn's C API (cudyn.h).
 *
 * Link only cudyn (libcudyn.so or libcudyn.a); no CUDA header or library is needed to build
 * against this header. Everything here is inline or a template, so any number of translation
 * units may include it.
 *
 * Who owns what:
 *   cudyn::library   owns one loaded CUDA library (move-only RAII). Its destructor unloads it
 *                    through the API that loaded it. release() gives the raw handle back to
 *                    you; unload it yourself with cudyn_library_unload(h, same api).
 *   cudyn::kernel    owns nothing: a pointer-sized, trivially copyable view of a
 *                    cudyn_kernel_t (== CUkernel == cudaKernel_t). It is valid while its
 *                    library is loaded (for kernel_of(): for the life of the program).
 *   cudyn::launch_config  a value: a zero-initialised cudyn_launch_config plus setters, and
 *                    the launch attributes it points to (a copy carries its own).
 *   Strings returned as `const char*` (kernel::name(), status_string()) belong to CUDA or
 *   cudyn; strings in cudyn::error / cudyn::result are copies the object owns.
 *   Device memory is never owned by the wrapper: global<T>() returns the address of a
 *   __device__ variable that lives as long as its library.
 *
 * Errors: every fallible operation has two forms.
 *   try_xxx(...)  returns cudyn::result<T>: status(), ok(), message(), cuda_code(), log() and
 *                 value(). Never throws by itself; the success path of kernel::try_launch
 *                 allocates nothing.
 *   xxx(...)      returns T or throws cudyn::error (a std::runtime_error with status(),
 *                 message(), cuda_code() and log()).
 * Without exceptions (-fno-exceptions, i.e. __cpp_exceptions undefined) the throwing forms
 * and cudyn::error are COMPILED OUT: only the try_ forms exist. result<T>::value() on a
 * failed result then prints the error to stderr and calls std::abort(). Define
 * CUDYN_HPP_EXCEPTIONS to 0 or 1 before including this header to choose explicitly.
 *
 * Thread safety: as cudyn.h. The error text comes from cudyn_last_error_message(), which is
 * per thread; the wrapper copies it into the result/exception at once.
 */
#ifndef CUDYN_HPP
#define CUDYN_HPP

#include "cudyn.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#ifndef CUDYN_HPP_EXCEPTIONS
#if defined(__cpp_exceptions)
#define CUDYN_HPP_EXCEPTIONS 1
#else
#define CUDYN_HPP_EXCEPTIONS 0
#endif
#endif

#if CUDYN_HPP_EXCEPTIONS
#include <exception>
#include <stdexcept>
#endif

#if __cplusplus < 201703L && !(defined(_MSVC_LANG) && _MSVC_LANG >= 201703L)
#error "cudyn.hpp needs C++17"
#endif

/* CUDA's own kernel handle types are cudyn's: prove it where CUDA's headers were included
 * first. (Included later, they are still the same type; only the proof is skipped.) */
#if defined(CUDA_VERSION) && CUDA_VERSION >= 12000
static_assert(std::is_same<cudyn_kernel_t, CUkernel>::value, "cudyn_kernel_t is CUkernel");
static_assert(std::is_same<cudyn_library_t, CUlibrary>::value, "cudyn_library_t is CUlibrary");
static_assert(std::is_same<cudyn_stream_t, CUstream>::value, "cudyn_stream_t is CUstream");
#endif
#if defined(CUDART_VERSION) && CUDART_VERSION >= 12000
static_assert(std::is_same<cudyn_kernel_t, cudaKernel_t>::value, "cudyn_kernel_t is cudaKernel_t");
static_assert(std::is_same<cudyn_library_t, cudaLibrary_t>::value, "cudyn_library_t is cudaLibrary_t");
static_assert(std::is_same<cudyn_stream_t, cudaStream_t>::value, "cudyn_stream_t is cudaStream_t");
#endif

namespace cudyn {

/* ------------------------------------------------------------------------------------------
 * Basics
 * ---------------------------------------------------------------------------------------- */

/// Which CUDA API does the work (cudyn_api). Choose per call: load through one, launch
/// through the other if you like.
enum class api : int {
  runtime = CUDYN_API_RUNTIME,  ///< cudaLibraryLoadData, cudaLaunchKernelExC, ... (libcudart 12.8+)
  driver = CUDYN_API_DRIVER,    ///< cuLibraryLoadData, cuLaunchKernelEx, ... (driver 12.0+)
};

/// The C value of an api.
constexpr cudyn_api to_c(api a) noexcept { return static_cast<cudyn_api>(static_cast<int>(a)); }

/// Static text for a status ("CUDYN_ERROR_NOT_FOUND: ..."); never NULL.
inline const char* status_string(cudyn_status s) noexcept { return cudyn_status_string(s); }

/// "cudyn 0.1.0 (driver 13.0, ...)"; static storage.
inline const char* version_string() noexcept { return cudyn_version_string(); }

/// What went wrong: a status plus copies of the message, the CUDA error code and (for
/// compilation) NVRTC's log. Default-constructed: success, no allocation.
class error_info {
 public:
  error_info() noexcept = default;
  error_info(cudyn_status status, std::string message, std::int32_t cuda_code = 0, std::string log = {})
      : status_(status), cuda_code_(cuda_code), message_(std::move(message)), log_(std::move(log)) {}

  /// Capture this thread's last cudyn failure (cudyn_last_error_message /
  /// cudyn_last_cuda_error) for `status`, which the failing call returned.
  static error_info last(cudyn_status status, std::string log = {}) {
    return error_info(status, cudyn_last_error_message(), cudyn_last_cuda_error(), std::move(log));
  }

  cudyn_status status() const noexcept { return status_; }
  bool ok() const noexcept { return status_ == CUDYN_SUCCESS; }
  /// The CUresult / cudaError_t / nvrtcResult / nvJitLinkResult behind it; 0 if none.
  std::int32_t cuda_code() const noexcept { return cuda_code_; }
  /// What cudyn was doing and why it failed ("" on success).
  const std::string& message() const noexcept { return message_; }
  /// NVRTC's log for a failed compilation; "" otherwise.
  const std::string& log() const noexcept { return log_; }
  /// "CUDYN_ERROR_X: <message>", or "CUDYN_ERROR_X: <status text>" when there is no message
  /// (the message already says what the status text would, in more detail).
  std::string describe() const {
    std::string s = cudyn_status_string(status_);
    if (!message_.empty()) {
      std::string::size_type colon = s.find(':');
      if (colon != std::string::npos) s.erase(colon);
      s += ": ";
      s += message_;
    }
    return s;
  }

 private:
  cudyn_status status_ = CUDYN_SUCCESS;
  std::int32_t cuda_code_ = 0;
  std::string message_;
  std::string log_;
};

#if CUDYN_HPP_EXCEPTIONS
/// The exception the throwing API raises. what() is error_info::describe().
class error : public std::runtime_error {
 public:
  explicit error(error_info info) : std::runtime_error(info.describe()), info_(std::move(info)) {}
  error(cudyn_status status, std::string message, std::int32_t cuda_code = 0, std::string log = {})
      : error(error_info(status, std::move(message), cuda_code, std::move(log))) {}

  cudyn_status status() const noexcept { return info_.status(); }
  const std::string& message() const noexcept { return info_.message(); }
  std::int32_t cuda_code() const noexcept { return info_.cuda_code(); }
  const std::string& log() const noexcept { return info_.log(); }
  const error_info& info() const noexcept { return info_; }

 private:
  error_info info_;
};
#endif

namespace detail {
/// `s` (UTF-8) for one line of a message: every character a terminal acts on written as an
/// escape, as cudyn writes its own messages (C0 and C1 controls, DEL, the bidirectional
/// controls: `\x1b`, `\r`, `\n`, `\u{202e}`); anything else as it is.
inline std::string quote_name(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  char buf[16];
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const unsigned char c1 = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
    const unsigned char c2 = i + 2 < s.size() ? static_cast<unsigned char>(s[i + 2]) : 0;
    unsigned cp = 0;
    std::size_t len = 0;
    if (c < 0x20 || c == 0x7f) {
      cp = c, len = 1;
    } else if (c == 0xc2 && c1 >= 0x80 && c1 <= 0x9f) {  // U+0080..U+009F
      cp = c1, len = 2;
    } else if (c == 0xd8 && c1 == 0x9c) {  // U+061C
      cp = 0x61c, len = 2;
    } else if (c == 0xe2 && c1 == 0x80 && ((c2 >= 0x8e && c2 <= 0x8f) || (c2 >= 0xa8 && c2 <= 0xae))) {
      cp = 0x2000u + (c2 - 0x80u), len = 3;  // U+200E, U+200F, U+2028..U+202E
    } else if (c == 0xe2 && c1 == 0x81 && c2 >= 0xa6 && c2 <= 0xa9) {
      cp = 0x2040u + (c2 - 0x80u), len = 3;  // U+2066..U+2069
    }
    if (len == 0) {
      out.push_back(s[i++]);
      continue;
    }
    if (cp == '\n') out += "\\n";
    else if (cp == '\t') out += "\\t";
    else if (cp == '\r') out += "\\r";
    else if (cp < 0x80) std::snprintf(buf, sizeof buf, "\\x%02x", cp), out += buf;
    else std::snprintf(buf, sizeof buf, "\\u{%x}", cp), out += buf;
    i += len;
  }
  return out;
}

/// A failed result's value() without exceptions: say why, then abort.
[[noreturn]] inline void fail(const error_info& e) {
#if CUDYN_HPP_EXCEPTIONS
  throw ::cudyn::error(e);
#else
  std::fprintf(stderr, "cudyn: %s\n", e.describe().c_str());
  if (!e.log().empty()) std::fprintf(stderr, "%s\n", e.log().c_str());
  std::abort();
#endif
}

/// What every result has: the status and the error behind it.
class result_status {
 public:
  result_status() noexcept = default;
  result_status(error_info failure) noexcept : error_(std::move(failure)) {}
  bool ok() const noexcept { return error_.ok(); }
  explicit operator bool() const noexcept { return ok(); }
  cudyn_status status() const noexcept { return error_.status(); }
  const std::string& message() const noexcept { return error_.message(); }
  std::int32_t cuda_code() const noexcept { return error_.cuda_code(); }
  const std::string& log() const noexcept { return error_.log(); }
  const error_info& error_details() const noexcept { return error_; }

 protected:
  /// On failure: throws cudyn::error (without exceptions: prints and aborts).
  void require() const {
    if (!ok()) fail(error_);
  }

 private:
  error_info error_;
};
}  // namespace detail

/// A value or the error_info that explains its absence (the try_ functions' return type).
/// T must be default-constructible. [[nodiscard]]: ignoring a result ignores an error.
template <class T>
class [[nodiscard]] result : public detail::result_status {
 public:
  using value_type = T;
  result(T value) noexcept(std::is_nothrow_move_constructible<T>::value) : value_(std::move(value)) {}
  result(error_info failure) noexcept : detail::result_status(std::move(failure)) {}

  /// The value; on failure throws cudyn::error (without exceptions: prints and aborts).
  T& value() & {
    require();
    return value_;
  }
  const T& value() const& {
    require();
    return value_;
  }
  T&& value() && {
    require();
    return std::move(value_);
  }
  /// The value without checking (default-constructed on failure).
  T& operator*() & noexcept { return value_; }
  const T& operator*() const& noexcept { return value_; }
  T&& operator*() && noexcept { return std::move(value_); }
  T* operator->() noexcept { return &value_; }
  const T* operator->() const noexcept { return &value_; }

 private:
  T value_{};
};

/// A result with nothing but a status.
template <>
class [[nodiscard]] result<void> : public detail::result_status {
 public:
  using value_type = void;
  result() noexcept = default;
  result(error_info failure) noexcept : detail::result_status(std::move(failure)) {}
  /// Throws cudyn::error on failure (without exceptions: prints and aborts).
  void value() const { require(); }
};

namespace detail {
/// result<void> from a C status, capturing the message on failure only.
inline result<void> check(cudyn_status s) {
  if (s == CUDYN_SUCCESS) return result<void>();
  return error_info::last(s);
}

/// Owns a cudyn_buffer; frees it with cudyn_buffer_free.
struct buffer {
  cudyn_buffer b{nullptr, 0};
  buffer() noexcept = default;
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  ~buffer() { cudyn_buffer_free(&b); }
  std::string str() const {
    if (b.data == nullptr || b.size == 0) return std::string();
    const char* p = static_cast<const char*>(b.data);
    std::size_t n = b.size;
    while (n > 0 && p[n - 1] == '\0') --n;  // logs come NUL-terminated
    return std::string(p, n);
  }
};

template <class D, class = void>
struct is_dim3_like : std::false_type {};
template <class D>
struct is_dim3_like<D, std::void_t<decltype(std::declval<const D&>().x), decltype(std::declval<const D&>().y),
                                   decltype(std::declval<const D&>().z)>> : std::true_type {};
}  // namespace detail

/// The C++ name of a kernel symbol, as library::kernel() matches it: "axpy<float>(float*,
/// float, int)" for "_Z4axpyIfEvPT_S0_i" (cudyn_demangle; CUDYN_ERROR_NOT_FOUND for a name
/// that is not mangled C++, such as an extern "C" kernel's). Needs no GPU.
inline result<std::string> try_demangle(const char* symbol) {
  detail::buffer out;
  cudyn_status s = cudyn_demangle(symbol, &out.b);
  if (s != CUDYN_SUCCESS) return error_info::last(s);
  return out.str();
}
#if CUDYN_HPP_EXCEPTIONS
inline std::string demangle(const char* symbol) { return try_demangle(symbol).value(); }
#endif

/// Open `component` and say whether it is usable (cudyn_component_status).
inline result<void> try_component_status(cudyn_component component) {
  return detail::check(cudyn_component_status(component));
}

/* ------------------------------------------------------------------------------------------
 * launch_config
 * ---------------------------------------------------------------------------------------- */

class kernel;

/// A cudyn_launch_config with setters, and room for every launch attribute. Starts
/// zero-initialised (reserved words zero, no cluster, not cooperative, no priority, no
/// attributes, the NULL stream, the runtime API) except that grid and block start at {1,1,1},
/// so that a default config launches one thread. Setters chain:
///   cudyn::launch_config().grid(n / 256).block(256).stream(s).api(cudyn::api::driver)
/// The launch attributes beyond the C struct's named fields live inside this object (the C
/// struct's `attributes` points at them), so a copy carries its own; setting one twice
/// replaces it. Events given to an attribute are CUDA's raw handles, live until the launch is
/// queued.
class launch_config {
 public:
  /// The most attributes one config holds: each launch attribute once.
  static constexpr std::size_t max_attributes = 16;

  launch_config() noexcept : c_{} {
    c_.grid = cudyn_dim3{1, 1, 1};
    c_.block = cudyn_dim3{1, 1, 1};
  }
  /// From a C config, as is (its reserved words must be zero, as cudyn.h requires). Its
  /// attribute list, if any, stays the caller's; setting an attribute here copies it in first.
  launch_config(const cudyn_launch_config& c) noexcept : c_(c) {}
  launch_config(const launch_config& o) noexcept : c_(o.c_), attrs_(o.attrs_), n_(o.n_) { repoint(o); }
  launch_config& operator=(const launch_config& o) noexcept {
    if (this != &o) {
      c_ = o.c_;
      attrs_ = o.attrs_;
      n_ = o.n_;
      repoint(o);
    }
    return *this;
  }

  /// One block of `block` threads per `block` elements of `n` (grid = ceil(n / block)).
  static launch_config linear(std::size_t n, std::uint32_t block = 256) noexcept {
    launch_config c;
    if (block == 0) block = 1;
    std::size_t g = (n + block - 1) / block;
    c.grid(static_cast<std::uint32_t>(g == 0 ? 1 : g)).block(block);
    return c;
  }

  launch_config& grid(std::uint32_t x, std::uint32_t y = 1, std::uint32_t z = 1) noexcept {
    c_.grid = cudyn_dim3{x, y, z};
    return *this;
  }
  /// Any {x, y, z} type: cudyn_dim3, CUDA's dim3, ...
  template <class D, std::enable_if_t<detail::is_dim3_like<D>::value, int> = 0>
  launch_config& grid(const D& d) noexcept {
    return grid(static_cast<std::uint32_t>(d.x), static_cast<std::uint32_t>(d.y), static_cast<std::uint32_t>(d.z));
  }
  launch_config& block(std::uint32_t x, std::uint32_t y = 1, std::uint32_t z = 1) noexcept {
    c_.block = cudyn_dim3{x, y, z};
    return *this;
  }
  template <class D, std::enable_if_t<detail::is_dim3_like<D>::value, int> = 0>
  launch_config& block(const D& d) noexcept {
    return block(static_cast<std::uint32_t>(d.x), static_cast<std::uint32_t>(d.y), static_cast<std::uint32_t>(d.z));
  }
  /// Dynamic shared memory per block, in bytes (above 48 KiB, raise the kernel's
  /// CUDYN_KERNEL_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES first).
  launch_config& shared_mem(std::size_t bytes) noexcept {
    c_.shared_mem_bytes = bytes;
    return *this;
  }
  /// A cudyn_stream_t, i.e. a CUstream or a cudaStream_t; nullptr: the legacy default stream.
  launch_config& stream(cudyn_stream_t s) noexcept {
    c_.stream = s;
    return *this;
  }
  /// Who launches.
  launch_config& api(::cudyn::api a) noexcept {
    c_.api = to_c(a);
    return *this;
  }
  /// Thread-block cluster shape; (0,0,0): no cluster.
  launch_config& cluster(std::uint32_t x, std::uint32_t y = 1, std::uint32_t z = 1) noexcept {
    c_.cluster = cudyn_dim3{x, y, z};
    return *this;
  }
  template <class D, std::enable_if_t<detail::is_dim3_like<D>::value, int> = 0>
  launch_config& cluster(const D& d) noexcept {
    return cluster(static_cast<std::uint32_t>(d.x), static_cast<std::uint32_t>(d.y), static_cast<std::uint32_t>(d.z));
  }
  /// A cooperative launch (grid-wide sync allowed).
  launch_config& cooperative(bool on = true) noexcept {
    c_.cooperative = on ? 1 : 0;
    return *this;
  }
  /// Launch priority (lower is higher, as in CUDA). Any value, 0 included: priority 0 is asked
  /// for with the attribute CUDYN_LAUNCH_ATTRIBUTE_PRIORITY (0 in the C struct's field means
  /// "not set"). no_priority() takes it back.
  launch_config& priority(int p) noexcept {
    remove(CUDYN_LAUNCH_ATTRIBUTE_PRIORITY);
    c_.priority = p;
    if (p == 0) {
      cudyn_launch_attribute a = make(CUDYN_LAUNCH_ATTRIBUTE_PRIORITY);
      a.value.priority = 0;
      set(a);
    }
    return *this;
  }
  /// No priority: the stream's.
  launch_config& no_priority() noexcept {
    remove(CUDYN_LAUNCH_ATTRIBUTE_PRIORITY);
    c_.priority = 0;
    return *this;
  }
  /// Allow programmatic stream serialization (programmatic dependent launch).
  launch_config& programmatic_serialization(bool on = true) noexcept {
    c_.programmatic_serialization = on ? 1 : 0;
    return *this;
  }

  /* --- the other launch attributes (cudyn_launch_attribute_id) ------------------------ */

  /// An L2 access policy window.
  launch_config& access_policy_window(void* base, std::size_t bytes, float hit_ratio,
                                      cudyn_access_property hit = CUDYN_ACCESS_PROPERTY_PERSISTING,
                                      cudyn_access_property miss = CUDYN_ACCESS_PROPERTY_STREAMING) noexcept {
    cudyn_launch_attribute a = make(CUDYN_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW);
    a.value.access_policy_window.base_ptr = base;
    a.value.access_policy_window.num_bytes = bytes;
    a.value.access_policy_window.hit_ratio = hit_ratio;
    a.value.access_policy_window.hit_prop = static_cast<std::uint32_t>(hit);
    a.value.access_policy_window.miss_prop = static_cast<std::uint32_t>(miss);
    return set(a);
  }
  /// The cluster scheduling policy preference.
  launch_config& cluster_scheduling_policy(cudyn_cluster_scheduling_policy p) noexcept {
    cudyn_launch_attribute a = make(CUDYN_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE);
    a.value.cluster_scheduling_policy_preference = static_cast<std::uint32_t>(p);
    return set(a);
  }
  /// Record `event` (a CUevent / cudaEvent_t created with timing disabled) once every block
  /// triggered it, or, with `trigger_at_block_start`, once every block started.
  launch_config& programmatic_event(cudyn_event_t event, bool trigger_at_block_start = false) noexcept {
    cudyn_launch_attribute a = make(CUDYN_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT);
    a.value.programmatic_event.event = event;
    a.value.programmatic_event.trigger_at_block_start = trigger_at_block_start ? 1 : 0;
    return set(a);
  }
  /// The domain ids of the default and the remote memory synchronisation domain.
  launch_config& mem_sync_domain_map(std::uint8_t default_domain, std::uint8_t remote_domain) noexcept {
    cudyn_launch_attribute a = make(CUDYN_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP);
    a.value.mem_sync_domain_map.default_ = default_domain;
    a.value.mem_sync_domain_map.remote = remote_domain;
    return set(a);
  }
  /// The memory synchronisation domain the kernel runs in.
  launch_config& mem_sync_domain(cudyn_mem_sync_domain d) noexcept {
    cudyn_launch_attribute a = make(CUDYN_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN);
    a.value.mem_sync_domain = static_cast<std::uint32_t>(d);
    return set(a);
  }
  /// A preferred substitute cluster shape (a multiple of the cluster's, same z).
  launch_config& preferred_cluster(std::uint32_t x, std::uint32_t y = 1, std::uint32_t z = 1) noexcept {
    cudyn_launch_attribute a = make(CUDYN_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION);
    a.value.preferred_cluster_dim = cudyn_dim3{x, y, z};
    return set(a);
  }
  /// Record `event` (created with timing disabled) once every block has begun.
  launch_config& launch_completion_event(cudyn_event_t event) noexcept {
    cudyn_launch_attribute a = make(CUDYN_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT);
    a.value.launch_completion_event.event = event;
    return set(a);
  }
  /// Make the node a launch in a capturing stream records device-updatable; the launch writes
  /// its handle back (device_node()).
  launch_config& device_updatable_kernel_node(bool on = true) noexcept {
    cudyn_launch_attribute a = make(CUDYN_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE);
    a.value.device_updatable_kernel_node.device_updatable = on ? 1 : 0;
    return set(a);
  }
  /// The node the last launch with device_updatable_kernel_node() wrote back; nullptr before.
  cudyn_graph_device_node_t device_node() const noexcept {
    for (std::size_t i = 0; i < n_; ++i)
      if (attrs_[i].id == CUDYN_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE)
        return attrs_[i].value.device_updatable_kernel_node.dev_node;
    return nullptr;
  }
  /// The shared-memory carveout for this launch, percent (0-100).
  launch_config& shared_mem_carveout(std::uint32_t percent) noexcept {
    cudyn_launch_attribute a = make(CUDYN_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT);
    a.value.shared_mem_carveout = percent;
    return set(a);
  }
  /// Hint that the kernel's blocks carry even NVLink traffic.
  launch_config& nvlink_util_centric_scheduling(bool on = true) noexcept {
    cudyn_launch_attribute a = make(CUDYN_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING);
    a.value.nvlink_util_centric_scheduling = on ? 1u : 0u;
    return set(a);
  }
  /// Any attribute, as CUDA's struct (replacing one of the same id). Checked at the launch.
  launch_config& attribute(const cudyn_launch_attribute& a) noexcept { return set(a); }
  /// The attributes this object holds (not the named fields).
  std::size_t attribute_count() const noexcept { return n_; }

  /// The C struct, ready for cudyn_launch (valid while this object lives, unchanged).
  const cudyn_launch_config& get() const noexcept { return c_; }
  cudyn_launch_config& get() noexcept { return c_; }
  operator const cudyn_launch_config&() const noexcept { return c_; }

  /// A one-dimensional config of `k` on `device` for `n` elements with the block size that
  /// reaches the most occupancy (cudyn_launch_config_for_occupancy; `n` 0: enough blocks to fill
  /// the device). Defined after kernel.
  static result<launch_config> try_for_occupancy(const kernel& k, std::uint64_t n, int device = 0,
                                                 std::size_t dynamic_smem = 0);
#if CUDYN_HPP_EXCEPTIONS
  static launch_config for_occupancy(const kernel& k, std::uint64_t n, int device = 0, std::size_t dynamic_smem = 0);
#endif

 private:
  static cudyn_launch_attribute make(cudyn_launch_attribute_id id) noexcept {
    cudyn_launch_attribute a;
    std::memset(&a, 0, sizeof a);
    a.id = id;
    return a;
  }
  /// This object's own list, with a C list it was made from copied in first (its IGNORE
  /// entries dropped: a list a launch accepts then fits, each id once). False, and the C list
  /// left as it is for the launch to refuse, where no launch would take it: NULL with a count,
  /// or more entries than there are ids (so some id twice, or an unknown one).
  bool own() noexcept {
    if (c_.attributes.attrs == attrs_.data() || c_.attributes.count == 0) return true;
    if (c_.attributes.attrs == nullptr) return false;
    std::size_t n = 0;
    for (std::uint32_t i = 0; i < c_.attributes.count; ++i)
      if (c_.attributes.attrs[i].id != CUDYN_LAUNCH_ATTRIBUTE_IGNORE && ++n > max_attributes) return false;
    n_ = 0;
    for (std::uint32_t i = 0; i < c_.attributes.count; ++i)
      if (c_.attributes.attrs[i].id != CUDYN_LAUNCH_ATTRIBUTE_IGNORE) attrs_[n_++] = c_.attributes.attrs[i];
    publish();
    return true;
  }
  void publish() noexcept {
    c_.attributes.attrs = n_ ? attrs_.data() : nullptr;
    c_.attributes.count = static_cast<std::uint32_t>(n_);
  }
  launch_config& set(const cudyn_launch_attribute& a) noexcept {
    if (!own()) return *this;
    for (std::size_t i = 0; i < n_; ++i)
      if (attrs_[i].id == a.id) {
        attrs_[i] = a;
        publish();
        return *this;
      }
    // Every known id once fits (15, IGNORE included): a full list already holds an unknown id,
    // which the launch refuses, so the newest entry may take the last slot.
    if (n_ < max_attributes) ++n_;
    attrs_[n_ - 1] = a;
    publish();
    return *this;
  }
  void remove(cudyn_launch_attribute_id id) noexcept {
    if (!own()) return;
    std::size_t w = 0;
    for (std::size_t i = 0; i < n_; ++i)
      if (attrs_[i].id != id) attrs_[w++] = attrs_[i];
    n_ = w;
    publish();
  }
  /// After a copy: point at this object's own list if the source pointed at its own.
  void repoint(const launch_config& o) noexcept {
    if (o.c_.attributes.attrs == o.attrs_.data() && o.n_) c_.attributes.attrs = attrs_.data();
  }

  cudyn_launch_config c_;
  // `mutable`: a launch writes a device-updatable node back into its entry.
  mutable std::array<cudyn_launch_attribute, max_attributes> attrs_{};
  std::size_t n_ = 0;
};

/* ------------------------------------------------------------------------------------------
 * kernel
 * ---------------------------------------------------------------------------------------- */

/// Offset and size in bytes of one kernel parameter.
struct parameter {
  std::size_t offset = 0;
  std::size_t size = 0;
};

/// A kernel handle: a non-owning, trivially copyable, pointer-sized cudyn_kernel_t, which is
/// CUkernel and cudaKernel_t. Converts to and from all three implicitly. It stays valid as
/// long as the library it came from is loaded. A default-constructed kernel is null.
class kernel {
 public:
  constexpr kernel() noexcept = default;
  /// Wrap any kernel handle: from cudyn, cuLibraryGetKernel, cudaLibraryGetKernel, cudaGetKernel.
  constexpr kernel(cudyn_kernel_t handle) noexcept : h_(handle) {}
  /// The handle: a cudyn_kernel_t, which is also a CUkernel and a cudaKernel_t.
  constexpr operator cudyn_kernel_t() const noexcept { return h_; }
  constexpr cudyn_kernel_t get() const noexcept { return h_; }
  constexpr explicit operator bool() const noexcept { return h_ != nullptr; }

  /// The kernel's (mangled, for C++) name. The string belongs to CUDA and lives as long as
  /// the kernel's library.
  result<const char*> try_name() const {
    const char* n = nullptr;
    cudyn_status s = cudyn_kernel_name(h_, &n);
    if (s != CUDYN_SUCCESS) return error_info::last(s);
    return n;
  }
  /// Number of parameters.
  result<std::size_t> try_param_count() const {
    std::size_t n = 0;
    cudyn_status s = cudyn_kernel_param_count(h_, &n);
    if (s != CUDYN_SUCCESS) return error_info::last(s);
    return n;
  }
  /// Offset and size of parameter `index`.
  result<parameter> try_param_info(std::size_t index) const {
    parameter p;
    cudyn_status s = cudyn_kernel_param_info(h_, index, &p.offset, &p.size);
    if (s != CUDYN_SUCCESS) return error_info::last(s);
    return p;
  }
  /// A kernel attribute for `device`.
  result<std::int32_t> try_attribute(cudyn_kernel_attribute attr, std::int32_t device = 0) const {
    std::int32_t v = 0;
    cudyn_status s = cudyn_kernel_get_attribute(h_, attr, device, &v);
    if (s != CUDYN_SUCCESS) return error_info::last(s);
    return v;
  }
  /// Set a kernel attribute for `device`.
  result<void> try_set_attribute(cudyn_kernel_attribute attr, std::int32_t value, std::int32_t device = 0) const {
    return detail::check(cudyn_kernel_set_attribute(h_, attr, value, device));
  }
  /// The kernel's CUfunction (== cudaFunction_t) in the current context.
  result<cudyn_function_t> try_function() const {
    cudyn_function_t f = nullptr;
    cudyn_status s = cudyn_kernel_function(h_, &f);
    if (s != CUDYN_SUCCESS) return error_info::last(s);
    return f;
  }

  /// The library this kernel belongs to (cuKernelGetLibrary, driver 12.5+); owned by whoever
  /// loaded it.
  result<cudyn_library_t> try_library() const {
    cudyn_library_t l = nullptr;
    cudyn_status s = cudyn_kernel_get_library(h_, &l);
    if (s != CUDYN_SUCCESS) return error_info::last(s);
    return l;
  }
  /// Set the preferred split of L1 cache and shared memory on `device` (cuKernelSetCacheConfig).
  result<void> try_set_cache_config(cudyn_func_cache config, std::int32_t device = 0) const {
    return detail::check(cudyn_kernel_set_cache_config(h_, config, device));
  }

  /* --- occupancy, on `device` (its primary context is current for the query only) ------ */

  /// The most blocks of `block_size` threads active on one SM
  /// (cudyn_occupancy_max_active_blocks).
  result<int> try_max_active_blocks(int block_size, std::size_t dynamic_smem = 0, int device = 0,
                                    cudyn_occupancy_flags flags = CUDYN_OCCUPANCY_DEFAULT) const {
    int n = 0;
    cudyn_status s = cudyn_occupancy_max_active_blocks(h_, device, block_size, dynamic_smem, flags, &n);
    if (s != CUDYN_SUCCESS) return error_info::last(s);
    return n;
  }
  /// What cudyn_occupancy_max_potential_block_size suggests.
  struct block_size_suggestion {
    int block_size = 0;
    int min_grid_size = 0;
  };
  /// The block size that reaches the most occupancy, with a fixed dynamic shared memory size.
  result<block_size_suggestion> try_max_potential_block_size(std::size_t dynamic_smem = 0, int device = 0,
                                                            int block_size_limit = 0,
                                                            cudyn_occupancy_flags flags = CUDYN_OCCUPANCY_DEFAULT) const {
    block_size_suggestion r;
    cudyn_status s = cudyn_occupancy_max_potential_block_size(h_, device, dynamic_smem, nullptr, nullptr,
                                                              block_size_limit, flags, &r.min_grid_size, &r.block_size);
    if (s != CUDYN_SUCCESS) return error_info::last(s);
    return r;
  }
  /// The same with the dynamic shared memory a function of the block size: any callable
  /// `size_t(int block_size)`, called during the query on this thread for each block size
  /// CUDA's calculator tries, before CUDA is asked and with no lock of cudyn's held (it may
  /// call cudyn, even unload a library). An exception it throws is rethrown when the call
  /// returns (cudyn's and CUDA's frames are never unwound).
  template <class F, std::enable_if_t<std::is_invocable_r<std::size_t, F&, int>::value, int> = 0>
  result<block_size_suggestion> try_max_potential_block_size(F&& smem_of_block, int device = 0,
                                                            int block_size_limit = 0,
                                                            cudyn_occupancy_flags flags = CUDYN_OCCUPANCY_DEFAULT) const {
    struct call {
      std::remove_reference_t<F>* f = nullptr;
#if CUDYN_HPP_EXCEPTIONS
      std::exception_ptr error;
#endif
      static std::size_t run(int block_size, void* user) noexcept {
        call* c = static_cast<call*>(user);
#if CUDYN_HPP_EXCEPTIONS
        if (c->error) return 0;
        try {
          return static_cast<std::size_t>((*c->f)(block_size));
        } catch (...) {
          c->error = std::current_exception();
          return 0;
        }
#else
        return static_cast<std::size_t>((*c->f)(block_size));
#endif
      }
    };
    call c;
    c.f = std::addressof(smem_of_block);
    block_size_suggestion r;
    cudyn_status s = cudyn_occupancy_max_potential_block_size(h_, device, 0, &call::run, &c, block_size_limit, flags,
                                                              &r.min_grid_size, &r.block_size);
#if CUDYN_HPP_EXCEPTIONS
    if (c.error) std::rethrow_exception(c.error);
#endif
    if (s != CUDYN_SUCCESS) return error_info::last(s);
    return r;
  }
  /// The most dynamic shared memory per block for `num_blocks` blocks of `block_size` threads
  /// per SM (cudyn_occupancy_available_dynamic_smem).
  result<std::size_t> try_available_dynamic_smem(int num_blocks, int block_size, int device = 0) const {
    std::size_t n = 0;
    cudyn_status s = cudyn_occupancy_available_dynamic_smem(h_, device, num_blocks, block_size, &n);
    if (s != CUDYN_SUCCESS) return error_info::last(s);
    return n;
  }
  /// The largest cluster for a launch as `config` says (cudyn_occupancy_max_potential_cluster_size).
  result<int> try_max_potential_cluster_size(const launch_config& config, int device = 0) const {
    int n = 0;
    cudyn_status s = cudyn_occupancy_max_potential_cluster_size(h_, device, &config.get(), &n);
    if (s != CUDYN_SUCCESS) return error_info::last(s);
    return n;
  }
  /// The most clusters of the config's shape active at once (cudyn_occupancy_max_active_clusters).
  result<int> try_max_active_clusters(const launch_config& config, int device = 0) const {
    int n = 0;
    cudyn_status s = cudyn_occupancy_max_active_clusters(h_, device, &config.get(), &n);
    if (s != CUDYN_SUCCESS) return error_info::last(s);
    return n;
  }

  /// Launch with typed arguments: each argument's address and sizeof go to
  /// cudyn_launch_checked, so a wrong count or a wrongly sized argument (a double for a
  /// float, an int for a size_t) is CUDYN_ERROR_ARGUMENT_MISMATCH and nothing is launched.
  /// Pass arguments with the parameter's exact type (2.0f, not 2.0). Allocates nothing
  /// unless it fails.
  template <class... Args>
  result<void> try_launch(const launch_config& config, const Args&... args) const {
    static_assert((std::is_trivially_copyable<Args>::value && ...), "kernel arguments must be trivially copyable");
    std::array<void*, sizeof...(Args)> ptrs{{const_cast<void*>(static_cast<const void*>(std::addressof(args)))...}};
    std::array<std::size_t, sizeof...(Args)> sizes{{sizeof(Args)...}};
    return detail::check(cudyn_launch_checked(h_, &config.get(), ptrs.data(), sizes.data(), sizeof...(Args)));
  }
  /// Launch with kernelParams as CUDA takes them (one pointer per parameter), sizes unchecked.
  result<void> try_launch_raw(const launch_config& config, void** args, std::size_t nargs) const {
    return detail::check(cudyn_launch(h_, &config.get(), args, nargs));
  }

#if CUDYN_HPP_EXCEPTIONS
  const char* name() const { return try_name().value(); }
  std::size_t param_count() const { return try_param_count().value(); }
  parameter param_info(std::size_t index) const { return try_param_info(index).value(); }
  std::int32_t attribute(cudyn_kernel_attribute attr, std::int32_t device = 0) const {
    return try_attribute(attr, device).value();
  }
  void set_attribute(cudyn_kernel_attribute attr, std::int32_t value, std::int32_t device = 0) const {
    try_set_attribute(attr, value, device).value();
  }
  cudyn_function_t function() const { return try_function().value(); }
  cudyn_library_t library() const { return try_library().value(); }
  void set_cache_config(cudyn_func_cache config, std::int32_t device = 0) const {
    try_set_cache_config(config, device).value();
  }
  int max_active_blocks(int block_size, std::size_t dynamic_smem = 0, int device = 0,
                        cudyn_occupancy_flags flags = CUDYN_OCCUPANCY_DEFAULT) const {
    return try_max_active_blocks(block_size, dynamic_smem, device, flags).value();
  }
  block_size_suggestion max_potential_block_size(std::size_t dynamic_smem = 0, int device = 0, int block_size_limit = 0,
                                                 cudyn_occupancy_flags flags = CUDYN_OCCUPANCY_DEFAULT) const {
    return try_max_potential_block_size(dynamic_smem, device, block_size_limit, flags).value();
  }
  template <class F, std::enable_if_t<std::is_invocable_r<std::size_t, F&, int>::value, int> = 0>
  block_size_suggestion max_potential_block_size(F&& smem_of_block, int device = 0, int block_size_limit = 0,
                                                 cudyn_occupancy_flags flags = CUDYN_OCCUPANCY_DEFAULT) const {
    return try_max_potential_block_size(std::forward<F>(smem_of_block), device, block_size_limit, flags).value();
  }
  std::size_t available_dynamic_smem(int num_blocks, int block_size, int device = 0) const {
    return try_available_dynamic_smem(num_blocks, block_size, device).value();
  }
  int max_potential_cluster_size(const launch_config& config, int device = 0) const {
    return try_max_potential_cluster_size(config, device).value();
  }
  int max_active_clusters(const launch_config& config, int device = 0) const {
    return try_max_active_clusters(config, device).value();
  }
  template <class... Args>
  void launch(const launch_config& config, const Args&... args) const {
    try_launch(config, args...).value();
  }
  void launch_raw(const launch_config& config, void** args, std::size_t nargs) const {
    try_launch_raw(config, args, nargs).value();
  }
#endif

 private:
  cudyn_kernel_t h_ = nullptr;
};
inline result<launch_config> launch_config::try_for_occupancy(const kernel& k, std::uint64_t n, int device,
                                                              std::size_t dynamic_smem) {
  launch_config c;
  cudyn_status s = cudyn_launch_config_for_occupancy(k.get(), device, n, dynamic_smem, nullptr, nullptr, &c.c_);
  if (s != CUDYN_SUCCESS) return error_info::last(s);
  return c;
}
#if CUDYN_HPP_EXCEPTIONS
inline launch_config launch_config::for_occupancy(const kernel& k, std::uint64_t n, int device, std::size_t dynamic_smem) {
  return try_for_occupancy(k, n, device, dynamic_smem).value();
}
#endif

/// The kernel of a __global__ function of this program from its host function pointer,
/// through the CUDA runtime cudyn opened (cudyn_kernel_of): for a program linked with the
/// shared runtime, in a file g++ compiles too. A program with the static runtime uses
/// kernel_of() (cudaGetKernel in its own translation unit). Adopted; see cudyn_kernel_of.
inline result<kernel> try_kernel_from_host_function(const void* entry) {
  cudyn_kernel_t k = nullptr;
  cudyn_status s = cudyn_kernel_of(entry, &k);
  if (s != CUDYN_SUCCESS) return error_info::last(s);
  return kernel(k);
}
#if CUDYN_HPP_EXCEPTIONS
inline kernel kernel_from_host_function(const void* entry) { return try_kernel_from_host_function(entry).value(); }
#endif

static_assert(sizeof(kernel) == sizeof(void*), "cudyn::kernel is pointer-sized");
static_assert(std::is_trivially_copyable<kernel>::value, "cudyn::kernel is trivially copyable");
static_assert(std::is_standard_layout<kernel>::value, "cudyn::kernel is standard-layout");

/* ------------------------------------------------------------------------------------------
 * library
 * ---------------------------------------------------------------------------------------- */

/// A __device__ variable: its device address and size in bytes. Owned by the library.
template <class T>
struct global_ref {
  T* ptr = nullptr;
  std::size_t bytes = 0;
  /// Number of T's (bytes for void).
  std::size_t count() const noexcept {
    if constexpr (std::is_void<T>::value) {
      return bytes;
    } else {
      return bytes / sizeof(T);
    }
  }
};

/// What from_source compiles with. Copies are taken; nothing need outlive the call.
///   cudyn::source_options o{"-std=c++17", "-DN=4"};
///   o.add_header("ops.h", ops_source).add_name_expression("axpy<float>");
struct source_options {
  /// Program name in messages and logs ("" : cudyn's default).
  std::string name;
  /// NVRTC options ("-std=c++17", "-DN=4", ...). Without -arch: SASS for the present GPU.
  std::vector<std::string> options;
  /// Headers the source may #include by name: {name, contents}.
  std::vector<std::pair<std::string, std::string>> headers;
  /// C++ names to instantiate and find ("axpy<float>"): see library::kernel_by_expression.
  std::vector<std::string> name_expressions;

  source_options() = default;
  source_options(std::initializer_list<std::string> nvrtc_options) : options(nvrtc_options) {}

  source_options& add_option(std::string o) {
    options.push_back(std::move(o));
    return *this;
  }
  source_options& add_header(std::string header_name, std::string contents) {
    headers.emplace_back(std::move(header_name), std::move(contents));
    return *this;
  }
  source_options& add_name_expression(std::string expression) {
    name_expressions.push_back(std::move(expression));
    return *this;
  }
  source_options& program_name(std::string n) {
    name = std::move(n);
    return *this;
  }
};

namespace detail {
/// source_options as the C struct; the pointers stay valid while this object lives.
struct c_compile_options {
  std::vector<const char*> o, hn, hs, ne;
  cudyn_compile_options c{};
  c_compile_options(const source_options& opts, cudyn_code_kind target) {
    for (const auto& s : opts.options) o.push_back(s.c_str());
    for (const auto& h : opts.headers) {
      hn.push_back(h.first.c_str());
      hs.push_back(h.second.c_str());
    }
    for (const auto& e : opts.name_expressions) ne.push_back(e.c_str());
    c.options = o.data();
    c.num_options = o.size();
    c.header_names = hn.data();
    c.header_sources = hs.data();
    c.num_headers = hn.size();
    c.name_expressions = ne.data();
    c.num_name_expressions = ne.size();
    c.target = target;
  }
};
/// The NUL-separated lowered names of a cudyn_buffer, one per name expression, in order.
inline std::vector<std::pair<std::string, std::string>> split_lowered(const cudyn_buffer& b,
                                                                      const std::vector<std::string>& exprs) {
  std::vector<std::pair<std::string, std::string>> out;
  const char* p = static_cast<const char*>(b.data);
  const char* end = p ? p + b.size : p;
  for (const auto& e : exprs) {
    std::string low;
    if (p && p < end) {
      const void* nul = std::memchr(p, '\0', static_cast<std::size_t>(end - p));
      std::size_t n = nul ? static_cast<std::size_t>(static_cast<const char*>(nul) - p) : static_cast<std::size_t>(end - p);
      low.assign(p, n);
      p += n + 1;
    }
    out.emplace_back(e, std::move(low));
  }
  return out;
}
}  // namespace detail

/// Device code made by cudyn: a cubin, PTX or LTO-IR from NVRTC, or a cubin from nvJitLink.
struct code {
  std::vector<char> bytes;
  cudyn_code_kind kind = CUDYN_CODE_UNKNOWN;
  /// The compiler's or linker's log (warnings on success).
  std::string log;
  /// {name expression, lowered name} for each name expression, in order (compile only).
  std::vector<std::pair<std::string, std::string>> lowered_names;
};

/// Compile CUDA C++ with NVRTC, through cudyn's cache, to `target` (CUDYN_CODE_CUBIN,
/// _PTX or _LTOIR). Without -arch: the present GPU (sm_90 with none). Runs without a GPU.
inline result<code> try_compile(const std::string& source, const source_options& opts = source_options(),
                                cudyn_code_kind target = CUDYN_CODE_CUBIN) {
  detail::c_compile_options c(opts, target);
  detail::buffer bytes, log, lowered;
  cudyn_status s = cudyn_compile_ex(source.c_str(), opts.name.empty() ? nullptr : opts.name.c_str(), &c.c, &bytes.b,
                                    &log.b, &lowered.b);
  if (s != CUDYN_SUCCESS) return error_info::last(s, log.str());
  code out;
  const char* p = static_cast<const char*>(bytes.b.data);
  out.bytes.assign(p, p + bytes.b.size);
  out.kind = target;
  out.log = log.str();
  out.lowered_names = detail::split_lowered(lowered.b, opts.name_expressions);
  return out;
}

/// One input to link(): its kind and bytes (not copied; must live through the call).
struct link_input {
  cudyn_code_kind kind;
  const void* data;
  std::size_t size;
  std::string name;
};

/// Link with nvJitLink into one cubin (options e.g. "-lto"; without -arch: the present GPU).
inline result<code> try_link(const std::vector<link_input>& inputs, const std::vector<std::string>& options = {}) {
  std::vector<cudyn_link_input> in;
  for (const auto& i : inputs) in.push_back(cudyn_link_input{i.kind, i.data, i.size, i.name.c_str()});
  std::vector<const char*> o;
  for (const auto& s : options) o.push_back(s.c_str());
  detail::buffer cubin, log;
  cudyn_status s = cudyn_link(in.data(), in.size(), o.data(), o.size(), &cubin.b, &log.b);
  if (s != CUDYN_SUCCESS) return error_info::last(s, log.str());
  code out;
  const char* p = static_cast<const char*>(cubin.b.data);
  out.bytes.assign(p, p + cubin.b.size);
  out.kind = CUDYN_CODE_CUBIN;
  out.log = log.str();
  return out;
}

/// The versions cudyn found (cudyn_versions).
inline cudyn_version_info versions() noexcept {
  cudyn_version_info v{};
  cudyn_versions(&v);
  return v;
}

/// The compile cache's counters (cudyn_cache_stats).
inline cudyn_cache_info cache_stats() noexcept {
  cudyn_cache_info st{};
  cudyn_cache_stats(&st);
  return st;
}

#if CUDYN_HPP_EXCEPTIONS
inline code compile(const std::string& source, const source_options& opts = source_options(),
                    cudyn_code_kind target = CUDYN_CODE_CUBIN) {
  return try_compile(source, opts, target).value();
}
inline code link(const std::vector<link_input>& inputs, const std::vector<std::string>& options = {}) {
  return try_link(inputs, options).value();
}
#endif

/// A loaded CUDA library (cubin, fatbin, PTX, or compiled from source). Move-only; the
/// destructor unloads it through the API that loaded it (errors there are ignored: call
/// try_unload() to see them). Kernels and globals taken from it die with it.
class library {
 public:
  /// An empty library (no handle).
  library() noexcept = default;
  /// Adopt `handle`, loaded through `loaded_by`: this object now owns it.
  library(cudyn_library_t handle, ::cudyn::api loaded_by) noexcept : h_(handle), api_(loaded_by) {}
  library(const library&) = delete;
  library& operator=(const library&) = delete;
  library(library&& o) noexcept
      : h_(std::exchange(o.h_, nullptr)), api_(o.api_), names_(std::move(o.names_)), log_(std::move(o.log_)) {}
  library& operator=(library&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, nullptr);
      api_ = o.api_;
      names_ = std::move(o.names_);
      log_ = std::move(o.log_);
    }
    return *this;
  }
  ~library() { reset(); }

  /* --- loading (static factories) --------------------------------------------------- */

  /// Load a cubin, fatbin or PTX image from memory. The image may be freed afterwards.
  static result<library> try_from_data(const void* image, std::size_t size, ::cudyn::api a = ::cudyn::api::runtime) {
    cudyn_library_t h = nullptr;
    cudyn_status s = cudyn_library_load_data(image, size, to_c(a), &h);
    if (s != CUDYN_SUCCESS) return error_info::last(s);
    return library(h, a);
  }
  /// Load with load options (cudyn_library_load_data_ex), e.g.
  ///   library::try_from_data(ptx, n, api::driver, {{CUDYN_LOAD_OPTION_MAX_REGISTERS, 32}}, &jit_log)
  /// `jit_log` (optional) receives CUDA's JIT log, error then info, on success and failure; a
  /// failure's error also carries it in log().
  static result<library> try_from_data(const void* image, std::size_t size, ::cudyn::api a,
                                       std::initializer_list<cudyn_load_option> options,
                                       std::string* jit_log = nullptr) {
    cudyn_library_t h = nullptr;
    cudyn_buffer log = {nullptr, 0};
    cudyn_status s = cudyn_library_load_data_ex(image, size, to_c(a), options.size() ? options.begin() : nullptr,
                                                options.size(), &h, &log);
    std::string text = log.data ? static_cast<const char*>(log.data) : "";
    cudyn_buffer_free(&log);
    if (jit_log) *jit_log = text;
    if (s != CUDYN_SUCCESS) return error_info::last(s, text);
    return library(h, a);
  }
  /// Load a cubin, fatbin or PTX file.
  static result<library> try_from_file(const char* path, ::cudyn::api a = ::cudyn::api::runtime) {
    cudyn_library_t h = nullptr;
    cudyn_status s = cudyn_library_load_file(path, to_c(a), &h);
    if (s != CUDYN_SUCCESS) return error_info::last(s);
    return library(h, a);
  }
  static result<library> try_from_file(const std::string& path, ::cudyn::api a = ::cudyn::api::runtime) {
    return try_from_file(path.c_str(), a);
  }
  /// Compile CUDA C++ with NVRTC (through cudyn's cache) for the present GPU and load it
  /// (cudyn_library_load_source_ex). On failure with CUDYN_ERROR_COMPILE_FAILED, log() holds
  /// NVRTC's log; on success log() of the library holds it. Name expressions given in
  /// `opts` are resolved by kernel_by_expression() / lowered_name().
  static result<library> try_from_source(const char* source, const source_options& opts = source_options(),
                                         ::cudyn::api a = ::cudyn::api::runtime) {
    detail::c_compile_options c(opts, CUDYN_CODE_UNKNOWN);
    cudyn_library_t h = nullptr;
    detail::buffer log, lowered;
    cudyn_status s = cudyn_library_load_source_ex(source, opts.name.empty() ? nullptr : opts.name.c_str(), &c.c, to_c(a),
                                                  &h, &log.b, &lowered.b);
    if (s != CUDYN_SUCCESS) return error_info::last(s, log.str());
    library lib(h, a);
    lib.log_ = log.str();
    lib.names_ = detail::split_lowered(lowered.b, opts.name_expressions);
    return result<library>(std::move(lib));
  }
  static result<library> try_from_source(const char* source, ::cudyn::api a) {
    return try_from_source(source, source_options(), a);
  }
  static result<library> try_from_source(const std::string& source, const source_options& opts = source_options(),
                                         ::cudyn::api a = ::cudyn::api::runtime) {
    return try_from_source(source.c_str(), opts, a);
  }
  static result<library> try_from_source(const std::string& source, ::cudyn::api a) {
    return try_from_source(source.c_str(), source_options(), a);
  }

  /* --- what is inside ----------------------------------------------------------------- */

  /// Kernel `name`, looked up through the API that loaded the library: its symbol (extern
  /// "C" or mangled name, CUDA's own lookup, tried first), else its C++ name or signature,
  /// "axpy<float>" or "scale(double*, double)" (cudyn_library_find_kernel: a name that fits
  /// several kernels is CUDYN_ERROR_AMBIGUOUS_NAME, listing them). Non-owning; valid while
  /// this library is loaded.
  result<::cudyn::kernel> try_kernel(const char* name) const {
    cudyn_kernel_t k = nullptr;
    cudyn_status s = cudyn_library_find_kernel(h_, name, to_c(api_), &k);
    if (s != CUDYN_SUCCESS) return error_info::last(s);
    return ::cudyn::kernel(k);
  }
  result<::cudyn::kernel> try_kernel(const std::string& name) const { return try_kernel(name.c_str()); }

  /// The lowered (mangled) name of a name expression given to from_source, or nullptr.
  const char* lowered_name(const std::string& expression) const noexcept {
    for (const auto& n : names_)
      if (n.first == expression && !n.second.empty()) return n.second.c_str();
    return nullptr;
  }
  /// Every {name expression, lowered name} pair from from_source, in the order given.
  const std::vector<std::pair<std::string, std::string>>& lowered_names() const noexcept { return names_; }
  /// The kernel of a C++ name expression given to from_source ("axpy<float>").
  /// CUDYN_ERROR_NOT_FOUND if it was not among source_options::name_expressions.
  result<::cudyn::kernel> try_kernel_by_expression(const std::string& expression) const {
    const char* low = lowered_name(expression);
    if (low == nullptr)
      return error_info(CUDYN_ERROR_NOT_FOUND, "'" + detail::quote_name(expression) +
                                                   "' was not among the name expressions this library was compiled "
                                                   "with (source_options::name_expressions)");
    return try_kernel(low);
  }

  /// Number of kernels (driver 12.4+ or runtime 12.8+).
  result<std::size_t> try_kernel_count() const {
    std::uint32_t n = 0;
    cudyn_status s = cudyn_library_kernel_count(h_, &n);
    if (s != CUDYN_SUCCESS) return error_info::last(s);
    return static_cast<std::size_t>(n);
  }
  /// Every kernel of the library.
  result<std::vector<::cudyn::kernel>> try_kernels() const {
    result<std::size_t> count = try_kernel_count();
    if (!count.ok()) return count.error_details();
    const auto n = static_cast<std::uint32_t>(*count);
    std::vector<cudyn_kernel_t> raw(n);
    std::uint32_t written = 0;
    cudyn_status s = cudyn_library_kernels(h_, n ? raw.data() : nullptr, n, &written);
    if (s != CUDYN_SUCCESS) return error_info::last(s);
    return std::vector<::cudyn::kernel>(raw.begin(), raw.begin() + written);
  }

  /// Load every kernel's code onto each of `devices` now, into each device's primary context,
  /// instead of at its first launch there (cudyn_library_preload: the thread's current
  /// context is left as it was; a failure names the device and the kernel). Returns the
  /// milliseconds each device took, in the order given.
  result<std::vector<double>> try_preload(const std::vector<int>& devices) const {
    std::vector<double> ms(devices.size());
    cudyn_status s = cudyn_library_preload(h_, devices.empty() ? nullptr : devices.data(), devices.size(),
                                           ms.empty() ? nullptr : ms.data());
    if (s != CUDYN_SUCCESS) return error_info::last(s);
    return ms;
  }

  /// `bytes` at `p` as T's: CUDYN_ERROR_ARGUMENT_MISMATCH when not a whole number of them.
  template <class T>
  static result<global_ref<T>> typed_ref(const char* what, const char* name, void* p, std::size_t bytes) {
    if constexpr (!std::is_void<T>::value) {
      if (bytes < sizeof(T) || bytes % sizeof(T) != 0)
        return error_info(CUDYN_ERROR_ARGUMENT_MISMATCH, std::string(what) + " '" + detail::quote_name(name) + "' is " +
                                                             std::to_string(bytes) + " bytes, not a whole number of " +
                                                             std::to_string(sizeof(T)) + "-byte elements");
    }
    global_ref<T> g;
    g.ptr = static_cast<T*>(p);
    g.bytes = bytes;
    return g;
  }

  /// The __device__ variable `name`: its device address (in the current context) and size.
  /// CUDYN_ERROR_ARGUMENT_MISMATCH when its size is not a whole number of T's.
  template <class T>
  result<global_ref<T>> try_global(const char* name) const {
    void* p = nullptr;
    std::size_t bytes = 0;
    cudyn_status s = cudyn_library_get_global(h_, name, &p, &bytes);
    if (s != CUDYN_SUCCESS) return error_info::last(s);
    return typed_ref<T>("global", name, p, bytes);
  }
  template <class T>
  result<global_ref<T>> try_global(const std::string& name) const {
    return try_global<T>(name.c_str());
  }

  /// The __managed__ variable `name`: a pointer the host and kernels both use, and its size.
  template <class T>
  result<global_ref<T>> try_managed(const char* name) const {
    void* p = nullptr;
    std::size_t bytes = 0;
    cudyn_status s = cudyn_library_get_managed(h_, name, to_c(api_), &p, &bytes);
    if (s != CUDYN_SUCCESS) return error_info::last(s);
    return typed_ref<T>("managed variable", name, p, bytes);
  }

  /// The library's module in the current context (cudyn_library_get_module; with no current
  /// context, device 0's primary context's, which is then retained for the process).
  result<cudyn_module_t> try_module() const {
    cudyn_module_t m = nullptr;
    cudyn_status s = cudyn_library_get_module(h_, &m);
    if (s != CUDYN_SUCCESS) return error_info::last(s);
    return m;
  }
  /// The unified function `name` (cudyn_library_get_unified_function, through the API that
  /// loaded the library), as a pointer of type F, e.g. `int (*)(int)`. A name the library
  /// lacks is CUDYN_ERROR_NOT_FOUND through either API.
  template <class F = void*>
  result<F> try_unified_function(const char* name) const {
    static_assert(std::is_pointer<F>::value, "F is a function (or void) pointer type");
    void* p = nullptr;
    cudyn_status s = cudyn_library_get_unified_function(h_, name, to_c(api_), &p);
    if (s != CUDYN_SUCCESS) return error_info::last(s);
    F f;
    static_assert(sizeof(f) == sizeof(p), "a function pointer is pointer-sized");
    std::memcpy(&f, &p, sizeof f);
    return f;
  }

#if CUDYN_HPP_EXCEPTIONS
  cudyn_module_t module() const { return try_module().value(); }
  template <class F = void*>
  F unified_function(const char* name) const {
    return try_unified_function<F>(name).value();
  }
  static library from_data(const void* image, std::size_t size, ::cudyn::api a = ::cudyn::api::runtime) {
    return try_from_data(image, size, a).value();
  }
  static library from_data(const void* image, std::size_t size, ::cudyn::api a,
                           std::initializer_list<cudyn_load_option> options, std::string* jit_log = nullptr) {
    return try_from_data(image, size, a, options, jit_log).value();
  }
  template <class T>
  global_ref<T> managed(const char* name) const {
    return try_managed<T>(name).value();
  }
  static library from_file(const char* path, ::cudyn::api a = ::cudyn::api::runtime) {
    return try_from_file(path, a).value();
  }
  static library from_file(const std::string& path, ::cudyn::api a = ::cudyn::api::runtime) {
    return try_from_file(path, a).value();
  }
  static library from_source(const char* source, const source_options& opts = source_options(),
                             ::cudyn::api a = ::cudyn::api::runtime) {
    return try_from_source(source, opts, a).value();
  }
  static library from_source(const char* source, ::cudyn::api a) { return try_from_source(source, a).value(); }
  static library from_source(const std::string& source, const source_options& opts = source_options(),
                             ::cudyn::api a = ::cudyn::api::runtime) {
    return try_from_source(source, opts, a).value();
  }
  static library from_source(const std::string& source, ::cudyn::api a) { return try_from_source(source, a).value(); }

  ::cudyn::kernel kernel(const char* name) const { return try_kernel(name).value(); }
  ::cudyn::kernel kernel(const std::string& name) const { return try_kernel(name).value(); }
  ::cudyn::kernel kernel_by_expression(const std::string& expression) const {
    return try_kernel_by_expression(expression).value();
  }
  std::vector<double> preload(const std::vector<int>& devices) const { return try_preload(devices).value(); }
  std::size_t kernel_count() const { return try_kernel_count().value(); }
  std::vector<::cudyn::kernel> kernels() const { return try_kernels().value(); }
  template <class T>
  global_ref<T> global(const char* name) const {
    return try_global<T>(name).value();
  }
  template <class T>
  global_ref<T> global(const std::string& name) const {
    return try_global<T>(name.c_str()).value();
  }
  /// Unload now; throws on failure.
  void unload() { try_unload().value(); }
#endif

  /* --- ownership ---------------------------------------------------------------------- */

  /// The handle (still owned by this object). A CUlibrary if loaded through the driver, a
  /// cudaLibrary_t through the runtime (the same type).
  cudyn_library_t get() const noexcept { return h_; }
  /// The API that loaded it (and will unload it).
  ::cudyn::api loaded_by() const noexcept { return api_; }
  explicit operator bool() const noexcept { return h_ != nullptr; }
  /// NVRTC's log when the library came from source ("" otherwise).
  const std::string& log() const noexcept { return log_; }
  /// Give up ownership: the caller must cudyn_library_unload(handle, to_c(loaded_by())).
  cudyn_library_t release() noexcept {
    names_.clear();
    log_.clear();
    return std::exchange(h_, nullptr);
  }
  /// Unload now and say how it went; the object is empty afterwards.
  result<void> try_unload() { return detail::check(cudyn_library_unload(release(), to_c(api_))); }
  /// Unload now (ignoring errors) and become empty.
  void reset() noexcept {
    if (cudyn_library_t h = release()) (void)cudyn_library_unload(h, to_c(api_));
  }

 private:
  cudyn_library_t h_ = nullptr;
  ::cudyn::api api_ = ::cudyn::api::runtime;
  std::vector<std::pair<std::string, std::string>> names_;
  std::string log_;
};

/* ------------------------------------------------------------------------------------------
 * kernel_of: a __global__ function of this program as a kernel handle
 * ---------------------------------------------------------------------------------------- */
#if defined(__CUDACC__) || defined(CUDART_VERSION)
#if !defined(CUDART_VERSION) || CUDART_VERSION >= 12000
/// The cudaKernel_t of a __global__ function compiled into this program (cudaGetKernel,
/// called here, in the caller's translation unit, against the CUDA runtime the caller links).
/// Works for `static __global__` functions too: the handle can then be passed anywhere, to
/// cudyn or to code that never saw the function. Link the shared runtime (nvcc
/// -cudart shared, or CMake's CUDA_RUNTIME_LIBRARY Shared) so that your program and cudyn use
/// one libcudart. The handle lives as long as the program; it needs no unloading. It is
/// adopted (cudyn_kernel_adopt): cudyn remembers its layout, so launches take the fast path,
/// and accepts it even where a kernel of a library cudyn unloaded once sat. If the function
/// lives in a shared library your program unloads (dlclose), call cudyn_kernel_release on
/// the handle first.
template <class... Params>
inline result<kernel> try_kernel_of(void (*entry)(Params...)) {
  cudaKernel_t k = nullptr;
  cudaError_t e = ::cudaGetKernel(&k, reinterpret_cast<const void*>(entry));
  if (e != cudaSuccess) {
    return error_info(CUDYN_ERROR_CUDA, std::string("cudaGetKernel: ") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e),
                      static_cast<std::int32_t>(e));
  }
  cudyn_status s = cudyn_kernel_adopt(k);
  if (s != CUDYN_SUCCESS) return error_info::last(s);
  return kernel(k);
}
#if CUDYN_HPP_EXCEPTIONS
template <class... Params>
inline kernel kernel_of(void (*entry)(Params...)) {
  return try_kernel_of(entry).value();
}
#endif
#endif
#endif

}  // namespace cudyn

#endif  // CUDYN_HPP
