//! What libvirtd 11.3 accepts on the wire from clients other than its own
//! (go-libvirt, hand-made ones), measured with raw packets against the real
//! daemon, and the exact texts of the errors its RPC layer answers with:
//! the fake accepts and answers the same.

use bytes::{BufMut, BytesMut};
use libvirt_fake::FakeLibvirt;
use libvirt_wire::{
    DomainLookupByNameArgs, Encode, ErrorCode, ErrorDomain, Header, Procedure, Status,
};

use crate::common::bios_xml;
use crate::wire::Raw;

/// Arguments followed by bytes no field claims.
struct Trailing<'a, T>(&'a T, &'a [u8]);

impl<T: Encode> Encode for Trailing<'_, T> {
    fn encode(&self, buf: &mut BytesMut) {
        self.0.encode(buf);
        buf.put_slice(self.1);
    }
}

async fn opened(fake: &FakeLibvirt) -> Raw<tokio::io::DuplexStream> {
    let mut c = Raw::new(fake.duplex());
    c.handshake().await;
    c
}

/// Bytes after a call's last field are ignored, as libvirtd's XDR decoder
/// ignores them (it answered `ConnectGetLibVersion` + 4 bytes, and a lookup
/// + 4 bytes by the name alone).
#[tokio::test]
async fn bytes_after_the_arguments_are_ignored() {
    let fake = FakeLibvirt::new();
    let mut c = opened(&fake).await;
    let p = c
        .call(Procedure::ConnectGetLibVersion, &Trailing(&(), &[0; 4]))
        .await;
    assert_eq!(p.header.status, Status::Ok, "{:?}", p.remote_error());
    let args = DomainLookupByNameArgs {
        name: "nope".into(),
    };
    let p = c
        .call(
            Procedure::DomainLookupByName,
            &Trailing(&args, &[1, 2, 3, 4, 5]),
        )
        .await;
    let e = p.remote_error().expect("an error");
    assert_eq!(e.code, ErrorCode::NoDomain, "{}", e.message());
    assert_eq!(
        e.message(),
        "Domain not found: no domain with matching name 'nope'"
    );
    // The domain a padded call names is found by its name.
    let conn = crate::common::open(&fake).await;
    conn.domain_define_xml(&bios_xml("a")).await.unwrap();
    let args = DomainLookupByNameArgs { name: "a".into() };
    let p = c
        .call(Procedure::DomainLookupByName, &Trailing(&args, &[0; 8]))
        .await;
    assert_eq!(p.header.status, Status::Ok, "{:?}", p.remote_error());
}

/// Non-zero bytes in a string's XDR padding are not checked (libvirtd found
/// domain `a` from `00 00 00 01 61 ff ff ff`).
#[tokio::test]
async fn string_padding_is_not_checked() {
    let fake = FakeLibvirt::new();
    let conn = crate::common::open(&fake).await;
    conn.domain_define_xml(&bios_xml("a")).await.unwrap();
    let mut c = opened(&fake).await;
    let p = c
        .call_raw(
            &Header::call(Procedure::DomainLookupByName, 7),
            &[0, 0, 0, 1, b'a', 0xff, 0xff, 0xff],
        )
        .await;
    assert_eq!(p.header.serial, 7);
    assert_eq!(p.header.status, Status::Ok, "{:?}", p.remote_error());
}

/// The errors of libvirtd's RPC layer carry the bare detail, with `%s` as
/// their format (the C client's fallbacks match "unknown procedure" as a
/// prefix); a call whose status is not OK is refused naming the status.
#[tokio::test]
async fn rpc_layer_errors_are_worded_as_libvirtd_words_them() {
    let fake = FakeLibvirt::new();
    let mut c = opened(&fake).await;
    let cases: [(Header, &[u8], &str); 3] = [
        (
            Header::call(Procedure::Other(9999), 40),
            &[],
            "unknown procedure: 9999",
        ),
        (
            Header::call(Procedure::DomainLookupByName, 41),
            &[0, 0, 0, 10, b'a', b'b'],
            "Unable to decode message payload",
        ),
        (
            Header {
                status: Status::Continue,
                ..Header::call(Procedure::ConnectGetLibVersion, 42)
            },
            &[],
            "Unexpected message status 2",
        ),
    ];
    for (header, payload, want) in cases {
        let p = c.call_raw(&header, payload).await;
        let e = p.remote_error().expect("an error");
        assert_eq!(
            (e.code, e.domain, e.message()),
            (ErrorCode::Rpc, ErrorDomain::Rpc, want)
        );
        assert_eq!(e.str1.as_deref(), Some("%s"));
        assert_eq!(e.str2.as_deref(), Some(want));
    }
}
