//! The server side of the procedure table: [`Handler`], one method per
//! procedure, and [`dispatch`], which routes a decoded CALL to its method.
//!
//! The trait has no default methods, so a server that implements it answers
//! every procedure of the table: a row added without its handler method does
//! not compile. A procedure number not in the table never gets this far:
//! [`crate::CallArgs::decode`] refuses it with
//! [`crate::WireError::UnknownProcedure`], which a server answers as libvirtd
//! answers an unknown procedure.
//!
//! The methods return futures without naming a runtime, so this crate stays
//! free of one; the futures are `Send`, so a server may run each call as a
//! task of its own.

use std::future::Future;

use crate::messages::*;
use crate::procedure::{CallArgs, CallRet};

macro_rules! handler {
    (
        $(
            $(#[$m:meta])*
            $variant:ident = $value:literal => $label:literal, $api:literal,
                fn $method:ident($args:ty) -> $ret:ty $(, client $client:tt)?;
        )*
    ) => {
        /// A server's answer to every procedure of the table: each method
        /// takes the procedure's decoded arguments and gives its successful
        /// result or the server's error.
        pub trait Handler {
            /// Why a call failed: the server turns it into an error REPLY,
            /// or into no answer at all.
            type Error;

            $(
                $(#[$m])*
                #[doc = ""]
                #[doc = concat!("Answers `", $label, "`.")]
                fn $method(
                    &self,
                    args: $args,
                ) -> impl Future<Output = Result<$ret, Self::Error>> + Send;
            )*
        }

        /// Routes a decoded CALL to the handler method of its procedure and
        /// wraps the result as a [`CallRet`] of the same procedure, ready to
        /// be encoded as the REPLY.
        pub async fn dispatch<H: Handler>(args: CallArgs, handler: &H) -> Result<CallRet, H::Error> {
            match args {
                $( CallArgs::$variant(args) => handler.$method(args).await.map(CallRet::$variant), )*
            }
        }
    };
}

crate::for_each_procedure!(handler);

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    use proptest::prelude::*;

    use super::*;
    use crate::Procedure;

    /// A handler whose every method answers at once: with the default
    /// result, or with its own procedure as the error, so a test sees which
    /// method a CALL reached.
    struct Echo {
        fail: bool,
    }

    macro_rules! echo {
        (
            $(
                $(#[$m:meta])*
                $variant:ident = $value:literal => $label:literal, $api:literal,
                    fn $method:ident($args:ty) -> $ret:ty $(, client $client:tt)?;
            )*
        ) => {
            impl Handler for Echo {
                type Error = Procedure;

                $(
                    async fn $method(&self, _: $args) -> Result<$ret, Procedure> {
                        if self.fail {
                            Err(Procedure::$variant)
                        } else {
                            Ok(<$ret>::default())
                        }
                    }
                )*
            }
        };
    }

    crate::for_each_procedure!(echo);

    /// Runs a future that needs no waking to its end.
    fn ready<F: Future>(f: F) -> F::Output {
        let mut f = pin!(f);
        match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(out) => out,
            Poll::Pending => panic!("the handler future was not ready"),
        }
    }

    proptest! {
        #[test]
        fn dispatch_reaches_the_method_of_the_call(args in any::<CallArgs>()) {
            let procedure = args.procedure();
            let ret = ready(dispatch(args.clone(), &Echo { fail: false })).unwrap();
            prop_assert_eq!(ret.procedure(), procedure);
            let err = ready(dispatch(args, &Echo { fail: true })).unwrap_err();
            prop_assert_eq!(err, procedure);
        }
    }

    #[test]
    fn dispatch_futures_are_send() {
        fn send<T: Send>(_: &T) {}
        let call = dispatch(CallArgs::AuthList(()), &Echo { fail: false });
        send(&call);
    }
}
