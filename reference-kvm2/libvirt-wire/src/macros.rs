//! Table macros: each protocol enum and struct is written once as data and
//! these macros derive its Rust type, conversions and XDR impls from it.

/// Declares an integer-backed enum from one table of `Variant = value => "NAME"`
/// rows, with an `Other(raw)` variant for values not in the table.
///
/// Values not in the table never fail to decode: they are kept as `Other`.
/// Build values from raw integers with `from_raw`, which maps known values to
/// their named variant (so `Other` never holds a value the table names).
macro_rules! int_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident : $repr:ty {
            $( $(#[$vmeta:meta])* $variant:ident = $value:literal => $label:literal, )*
        }
    ) => {
        int_enum! {
            @core
            $(#[$meta])*
            pub enum $name : $repr {
                $( $(#[$vmeta])* $variant = $value, )*
            }
        }

        impl $name {
            /// libvirt's name for the value, if it is in the table.
            pub const fn name(self) -> Option<&'static str> {
                match self.normalized() {
                    $($name::$variant => Some($label),)*
                    $name::Other(_) => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self.name() {
                    Some(name) => f.write_str(name),
                    None => write!(f, "{}({})", stringify!($name), self.to_raw()),
                }
            }
        }
    };
    // The enum, its raw conversions and XDR impls, without names.
    (
        @core
        $(#[$meta:meta])*
        pub enum $name:ident : $repr:ty {
            $( $(#[$vmeta:meta])* $variant:ident = $value:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
            /// A value not in the table, kept as received.
            Other($repr),
        }

        impl $name {
            /// Every named value, in table order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// Maps a raw value to its variant (`Other` for unknown values).
            pub const fn from_raw(value: $repr) -> Self {
                match value {
                    $($value => $name::$variant,)*
                    other => $name::Other(other),
                }
            }

            /// The raw value sent on the wire.
            pub const fn to_raw(self) -> $repr {
                match self {
                    $($name::$variant => $value,)*
                    $name::Other(value) => value,
                }
            }

            const fn normalized(self) -> Self {
                Self::from_raw(self.to_raw())
            }
        }

        impl From<$repr> for $name {
            fn from(value: $repr) -> Self {
                Self::from_raw(value)
            }
        }

        impl From<$name> for $repr {
            fn from(value: $name) -> Self {
                value.to_raw()
            }
        }

        impl $crate::xdr::Encode for $name {
            fn encode(&self, buf: &mut bytes::BytesMut) {
                self.to_raw().encode(buf);
            }
        }

        impl $crate::xdr::Decode for $name {
            fn decode(
                r: &mut $crate::xdr::Reader<'_>,
            ) -> Result<Self, $crate::error::WireError> {
                <$repr as $crate::xdr::Decode>::decode(r).map(Self::from_raw)
            }
        }

        #[cfg(test)]
        impl proptest::arbitrary::Arbitrary for $name {
            type Parameters = ();
            type Strategy = proptest::strategy::BoxedStrategy<Self>;

            fn arbitrary_with(_: ()) -> Self::Strategy {
                use proptest::prelude::*;
                prop_oneof![
                    proptest::sample::select(Self::ALL),
                    any::<$repr>().prop_map(Self::from_raw),
                ]
                .boxed()
            }
        }
    };
}

/// Declares an XDR struct: fields are encoded in declaration order.
///
/// A variable array field carries its declared maximum as `[max = N]` after
/// its type; the decoder rejects longer arrays before allocating.
macro_rules! xdr_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* pub $field:ident : $ty:ty $([max = $max:expr])? , )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        #[cfg_attr(test, derive(proptest_derive::Arbitrary))]
        pub struct $name {
            $(
                $(#[$fmeta])*
                $(#[cfg_attr(test, proptest(strategy = "crate::tests::small_vec()"))]
                  #[doc = concat!("\n\nAt most ", stringify!($max), " elements.")])?
                pub $field: $ty,
            )*
        }

        impl $crate::xdr::Encode for $name {
            #[allow(unused_variables)]
            fn encode(&self, buf: &mut bytes::BytesMut) {
                $( $crate::xdr::Encode::encode(&self.$field, buf); )*
            }
        }

        impl $crate::xdr::Decode for $name {
            #[allow(unused_variables)]
            fn decode(
                r: &mut $crate::xdr::Reader<'_>,
            ) -> Result<Self, $crate::error::WireError> {
                Ok($name {
                    $( $field: xdr_struct!(@decode r, $ty $(, $max)?), )*
                })
            }
        }
    };
    (@decode $r:ident, $ty:ty, $max:expr) => {
        $crate::xdr::decode_array($r, $max)?
    };
    (@decode $r:ident, $ty:ty) => {
        <$ty as $crate::xdr::Decode>::decode($r)?
    };
}
