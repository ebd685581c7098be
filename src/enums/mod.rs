//! The enums shared with C, each defined once. `table.rs` lists every variant with its number,
//! its C name and its text; `c_enums!` below makes of each entry the Rust enum, the checked
//! conversion from the integer a C caller passes, and the name and text tables. The build
//! script (feature `dev-header`) reads the same table with its own `c_enums!` to give cbindgen
//! the C enums for cudyn.h, so the numbers and names in the header cannot drift from these.

use std::ffi::CStr;

/// A `"NAME: text"` C string literal made at compile time.
const fn c_literal(bytes: &'static [u8]) -> &'static CStr {
    match CStr::from_bytes_with_nul(bytes) {
        Ok(c) => c,
        Err(_) => panic!("a c_enums! name or text holds a NUL"),
    }
}

/// See the module documentation. Each entry of an enum is
/// `Variant = number => C_NAME, "text";`, with the variant's doc comments before it.
macro_rules! c_enums {
    ($(
        $(#[doc = $doc:literal])*
        pub enum $name:ident as $cname:ident {
            $(
                $(#[doc = $vdoc:literal])*
                $variant:ident = $value:literal => $cvariant:ident, $text:literal;
            )+
        }
    )+) => { $(
        $(#[doc = $doc])*
        #[doc = concat!("\n\nIn C: `", stringify!($cname), "`.")]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u32)]
        pub enum $name {
            $(
                $(#[doc = $vdoc])*
                #[doc = concat!("\n\nIn C: `", stringify!($cvariant), "` (", stringify!($value), ").")]
                $variant = $value,
            )+
        }

        impl $name {
            /// Every value, in number order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// The C type's name.
            pub const C_TYPE: &'static str = stringify!($cname);

            /// The value from the integer a C caller passed: None for a number that names no value.
            pub const fn from_c(v: i64) -> Option<$name> {
                match v {
                    $($value => Some($name::$variant),)+
                    _ => None,
                }
            }

            /// The value's C name (`CUDYN_...`).
            pub const fn c_name(self) -> &'static str {
                match self {
                    $($name::$variant => stringify!($cvariant),)+
                }
            }

            /// The value's text, for messages.
            pub const fn text(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// `"C_NAME: text"` as a static C string.
            pub const fn c_text(self) -> &'static CStr {
                match self {
                    $($name::$variant => c_literal(concat!(stringify!($cvariant), ": ", $text, "\0").as_bytes()),)+
                }
            }

        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.text())
            }
        }

    )+ };
}

include!("table.rs");

/// The conversions from a C caller's integer that fail with a [`crate::Error`]:
/// `from_c_arg` (CUDYN_ERROR_INVALID_ARGUMENT naming the argument and the valid values) and
/// `TryFrom<i32>` / `TryFrom<u32>`. Invoked in `error.rs`, where `Error` lives, so that this
/// module depends on nothing and the error module on it (no cycle).
macro_rules! c_enum_conversions {
    ($($name:ident),+) => { $(
        impl $name {
            /// `from_c`, with CUDYN_ERROR_INVALID_ARGUMENT naming `what` and the valid values.
            pub fn from_c_arg(v: i64, what: &str) -> Result<$name> {
                $name::from_c(v).ok_or_else(|| {
                    let valid: Vec<String> = $name::ALL.iter().map(|x| format!("{} ({})", x.c_name(), *x as u32)).collect();
                    Error::invalid(format!("{what} {v} is not a {}: it takes {}", $name::C_TYPE, valid.join(", ")))
                })
            }
        }

        impl TryFrom<i32> for $name {
            type Error = Error;
            fn try_from(v: i32) -> Result<$name> {
                $name::from_c_arg(v.into(), "value")
            }
        }

        impl TryFrom<u32> for $name {
            type Error = Error;
            fn try_from(v: u32) -> Result<$name> {
                $name::from_c_arg(v.into(), "value")
            }
        }
    )+ };
}
pub(crate) use c_enum_conversions;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_names_and_texts_come_from_the_table() {
        assert_eq!(Status::from_c(16), Some(Status::Internal));
        assert_eq!(Status::from_c(17), Some(Status::AmbiguousName));
        assert_eq!(Status::from_c(18), None);
        assert_eq!(Status::from_c(-1), None);
        assert_eq!(Status::NotFound.c_name(), "CUDYN_ERROR_NOT_FOUND");
        assert_eq!(
            Status::NotFound.c_text().to_str().unwrap(),
            "CUDYN_ERROR_NOT_FOUND: no kernel or global of that name"
        );
        assert_eq!(Api::try_from(1u32).unwrap(), Api::Driver);
        let e = Api::try_from(7u32).unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("CUDYN_API_RUNTIME (0), CUDYN_API_DRIVER (1)"), "{}", e.message);
        assert_eq!(CodeKind::from_c(7), Some(CodeKind::Library));
        assert_eq!(Attribute::from_c(15), Some(Attribute::ClusterSchedulingPolicyPreference));
    }

    #[test]
    fn every_enum_is_numbered_densely_from_its_first_value() {
        fn dense<T: Copy + Into<u32>>(all: &[T]) {
            let first: u32 = all[0].into();
            for (i, &x) in all.iter().enumerate() {
                assert_eq!(x.into(), first + i as u32);
            }
        }
        dense(&Status::ALL.iter().map(|&x| x as u32).collect::<Vec<_>>());
        dense(&Api::ALL.iter().map(|&x| x as u32).collect::<Vec<_>>());
        dense(&CodeKind::ALL.iter().map(|&x| x as u32).collect::<Vec<_>>());
        dense(&Attribute::ALL.iter().map(|&x| x as u32).collect::<Vec<_>>());
        dense(&Component::ALL.iter().map(|&x| x as u32).collect::<Vec<_>>());
        // Load options: dense but for id 3, retired (it was CUDYN_LOAD_OPTION_FAST_COMPILE).
        let ids: Vec<u32> = LoadOptionId::ALL.iter().map(|&x| x as u32).collect();
        assert_eq!(ids, (1..=22).filter(|&i| i != 3).collect::<Vec<u32>>());
        for dense_enum in [
            JitFallback::ALL.iter().map(|&x| x as u32).collect::<Vec<_>>(),
            JitCacheMode::ALL.iter().map(|&x| x as u32).collect(),
            AccessProperty::ALL.iter().map(|&x| x as u32).collect(),
            ClusterSchedulingPolicy::ALL.iter().map(|&x| x as u32).collect(),
            MemSyncDomain::ALL.iter().map(|&x| x as u32).collect(),
            FuncCache::ALL.iter().map(|&x| x as u32).collect(),
            OccupancyFlags::ALL.iter().map(|&x| x as u32).collect(),
        ] {
            dense(&dense_enum);
        }
        // CUDA's numbers, not dense: launch attributes skip 3 (a stream attribute) and 15
        // (unassigned); the JIT targets are CU_TARGET_* (load_options tests read cuda.h).
        let ids: Vec<u32> = LaunchAttributeId::ALL.iter().map(|&x| x as u32).collect();
        assert_eq!(ids, (0..=16).filter(|&i| i != 3 && i != 15).collect::<Vec<u32>>());
        let targets: Vec<u32> = JitTarget::ALL.iter().map(|&x| x as u32).collect();
        assert!(targets.windows(2).all(|w| w[0] < w[1]), "JitTarget::ALL in number order: {targets:?}");
        for s in Status::ALL {
            assert_eq!(Status::from_c(*s as i64), Some(*s));
            assert!(s.c_text().to_str().unwrap().starts_with(s.c_name()));
        }
    }
}
