//! Typed methods on `Client`: one per procedure of the wire table that has a
//! `client` clause, generated from that clause, plus the few calls with more
//! to them than one procedure (`open`, `enable_server_keepalive`,
//! `connect_open`). The upload stream's method is in `upload.rs`.
//!
//! A generated method builds the argument struct from its parameters and
//! the clause's fixed fields, makes the call with the handle's deadline, and
//! hands back the clause's result field (or the whole result) as the
//! method's return type.

use libvirt_wire::*;

use crate::client::Client;
use crate::error::{Error, Result};

impl Client {
    /// Authenticates and opens `uri`: `AUTH_LIST`, then `AUTH_POLKIT` when
    /// the socket asks for it, then `CONNECT_OPEN`. SASL is not supported.
    pub async fn open(&self, uri: &str) -> Result<()> {
        let types = self.auth_list().await?;
        if types.first().is_some_and(|t| *t == AuthType::Polkit) {
            if !self.auth_polkit().await? {
                return Err(Error::remote(RemoteError::new(
                    ErrorCode::AuthFailed,
                    ErrorDomain::Rpc,
                    "polkit authentication did not complete",
                )));
            }
        } else if !types.is_empty() && !types.contains(&AuthType::None) {
            return Err(Error::remote(RemoteError::new(
                ErrorCode::AuthUnavailable,
                ErrorDomain::Rpc,
                format!("unsupported authentication schemes {types:?}"),
            )));
        }
        self.connect_open(uri).await
    }

    /// Asks the server to send keepalive PINGs (`CONNECT_SUPPORTS_FEATURE`
    /// with `FEATURE_PROGRAM_KEEPALIVE`). Safe at any time: the connection
    /// always answers PINGs.
    pub async fn enable_server_keepalive(&self) -> Result<bool> {
        self.connect_supports_feature(FEATURE_PROGRAM_KEEPALIVE)
            .await
    }

    /// `CONNECT_OPEN` with `uri` and no flags.
    pub async fn connect_open(&self, uri: &str) -> Result<()> {
        self.connect_open_with(Some(uri), 0).await
    }
}

/// A parameter of a generated method turned into the argument field it
/// fills: borrowed text and handles are copied, plain values pass as they are.
trait IntoField<F> {
    fn into_field(self) -> F;
}

impl<T> IntoField<T> for T {
    fn into_field(self) -> T {
        self
    }
}

impl<T: Clone> IntoField<T> for &T {
    fn into_field(self) -> T {
        self.clone()
    }
}

impl IntoField<String> for &str {
    fn into_field(self) -> String {
        self.to_owned()
    }
}

impl IntoField<Option<String>> for Option<&str> {
    fn into_field(self) -> Option<String> {
        self.map(str::to_owned)
    }
}

/// What a generated method returns, made from the result (or the result
/// field) of its call.
trait FromRet<R> {
    fn from_ret(ret: R) -> Self;
}

impl<T> FromRet<T> for T {
    fn from_ret(ret: T) -> T {
        ret
    }
}

/// libvirt's booleans are ints: anything but 0 is true.
impl FromRet<i32> for bool {
    fn from_ret(ret: i32) -> bool {
        ret != 0
    }
}

/// A domain's state and the state-specific reason.
impl FromRet<DomainGetStateRet> for (DomainState, i32) {
    fn from_ret(ret: DomainGetStateRet) -> Self {
        (DomainState::from_raw(ret.state), ret.reason)
    }
}

/// Generates one `Client` method per table row with a `client` clause.
macro_rules! client_methods {
    (
        $(
            $(#[$m:meta])*
            $variant:ident = $value:literal => $label:literal, $api:literal,
                fn $handler:ident($args:tt) -> $ret:tt $(, client $client:tt)?;
        )*
    ) => {
        impl Client {
            $( client_methods!(@method $variant $label $args [$(#[$m])*] [$($client)?]); )*
        }
    };
    // A row without a `client` clause: its method is written by hand.
    (@method $variant:ident $label:literal $args:tt [$(#[$m:meta])*] []) => {};
    (
        @method $variant:ident $label:literal $args:tt [$(#[$m:meta])*]
        [{
            fn $name:ident($($param:ident: $ty:ty),*)
            $({ $($fixed:ident: $value:expr),* })?
            -> $out:ty $(= $field:ident)?
        }]
    ) => {
        $(#[$m])*
        #[doc = ""]
        #[doc = concat!(
            "`", $label, "`",
            $($(", with `", stringify!($fixed), "` ", stringify!($value),)*)?
            "."
        )]
        pub async fn $name(&self, $($param: $ty),*) -> Result<$out> {
            let ret = self
                .call::<calls::$variant>(&client_methods!(
                    @args $args [$($param)*] [$($($fixed: $value),*)?]
                ))
                .await?;
            Ok(<$out as FromRet<_>>::from_ret(ret $(.$field)?))
        }
    };
    (@args () [] []) => {
        ()
    };
    (@args $args:ident [$($param:ident)*] [$($fixed:ident: $value:expr),*]) => {
        $args {
            $($param: IntoField::into_field($param),)*
            $($fixed: $value,)*
        }
    };
}

for_each_procedure!(client_methods);
