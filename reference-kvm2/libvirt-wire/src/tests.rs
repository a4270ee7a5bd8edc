//! Unit and property tests: round trips of every type, the worked byte
//! examples of the protocol notes, and hostile lengths that must be rejected
//! without allocating.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use bytes::BytesMut;
use proptest::prelude::*;

use crate::*;

/// Records the largest single allocation made on the current thread while
/// tracking is on, so tests can show that hostile lengths allocate nothing big.
struct TrackingAlloc;

thread_local! {
    static TRACKING: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for TrackingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

fn note(size: usize) {
    let _ = TRACKING.try_with(|t| {
        if t.get() {
            let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
        }
    });
}

#[global_allocator]
static ALLOC: TrackingAlloc = TrackingAlloc;

/// Runs `f` and returns its result with the largest allocation it made.
fn largest_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.with(|l| l.set(0));
    TRACKING.with(|t| t.set(true));
    let out = f();
    TRACKING.with(|t| t.set(false));
    (out, LARGEST.with(|l| l.get()))
}

/// Arrays in generated values stay well below every declared maximum.
pub(crate) fn small_vec<T: Arbitrary + 'static>() -> impl Strategy<Value = Vec<T>> {
    proptest::collection::vec(any::<T>(), 0..8)
}

fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| b.is_ascii_hexdigit()).collect();
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}

fn frame<T: Encode + ?Sized>(header: &Header, body: &T) -> Vec<u8> {
    let mut buf = BytesMut::new();
    encode_packet(&mut buf, header, body).unwrap();
    buf.to_vec()
}

// Worked examples.

#[test]
fn auth_list_call_bytes() {
    let bytes = frame(&Header::call(Procedure::AuthList, 1), &());
    assert_eq!(
        bytes,
        hex("0000001c 20008086 00000001 00000042 00000000 00000001 00000000")
    );
}

#[test]
fn auth_list_reply_bytes() {
    let call = Header::call(Procedure::AuthList, 1);
    let mut buf = BytesMut::new();
    let ret = AuthListRet {
        types: vec![AuthType::None],
    };
    encode_reply(&mut buf, &call, &ret).unwrap();
    let expected =
        hex("00000024 20008086 00000001 00000042 00000001 00000001 00000000 00000001 00000000");
    assert_eq!(buf.to_vec(), expected);
    let (packet, used) = Packet::decode(&expected).unwrap().unwrap();
    assert_eq!(used, 36);
    assert_eq!(packet.decode_payload::<AuthListRet>().unwrap(), ret);
}

#[test]
fn connect_open_call_bytes() {
    let args = ConnectOpenArgs {
        name: Some("qemu:///system".into()),
        flags: 0,
    };
    let bytes = frame(&Header::call(Procedure::ConnectOpen, 2), &args);
    let expected = hex(
        "00000038 20008086 00000001 00000001 00000000 00000002 00000000
         00000001 0000000e 71656d753a2f2f2f73797374656d 0000 00000000",
    );
    assert_eq!(bytes, expected);
    let (packet, _) = Packet::decode(&expected).unwrap().unwrap();
    let decoded = CallArgs::decode(packet.header.remote_procedure(), &packet.payload).unwrap();
    assert_eq!(decoded, CallArgs::ConnectOpen(args));
}

#[test]
fn connect_open_accepts_little_endian_presence_flag() {
    // Some clients write the optional's discriminant as 01 00 00 00.
    let payload = hex("01000000 00000001 61000000 00000000");
    let args: ConnectOpenArgs = decode_exact(&payload).unwrap();
    assert_eq!(args.name.as_deref(), Some("a"));
}

#[test]
fn connect_open_success_reply_is_bare_header() {
    let call = Header::call(Procedure::ConnectOpen, 2);
    let mut buf = BytesMut::new();
    encode_reply(&mut buf, &call, &()).unwrap();
    assert_eq!(
        buf.to_vec(),
        hex("0000001c 20008086 00000001 00000001 00000001 00000002 00000000")
    );
}

#[test]
fn keepalive_bytes() {
    let ping = frame(&Header::keepalive(KEEPALIVE_PING), &());
    assert_eq!(
        ping,
        hex("0000001c 6b656570 00000001 00000001 00000002 00000000 00000000")
    );
    let pong = frame(&Header::keepalive(KEEPALIVE_PONG), &());
    assert_eq!(
        pong,
        hex("0000001c 6b656570 00000001 00000002 00000002 00000000 00000000")
    );
    let header = Header::decode(&ping).unwrap().unwrap();
    assert!(header.is_ping());
    assert!(!header.is_pong());
}

#[test]
fn upload_stream_bytes() {
    let call = Header::call(Procedure::StorageVolUpload, 7);
    let data = vec![0xabu8; 262_120];
    let mut buf = BytesMut::new();
    encode_raw(&mut buf, &call.stream(Status::Continue), &data).unwrap();
    assert_eq!(
        &buf[..28],
        &hex("00040004 20008086 00000001 000000d0 00000003 00000007 00000002")[..]
    );
    assert_eq!(buf.len(), 28 + 262_120);
    assert_eq!(&buf[28..], &data[..]);

    let finish = frame(&call.stream(Status::Ok), &());
    assert_eq!(
        finish,
        hex("0000001c 20008086 00000001 000000d0 00000003 00000007 00000000")
    );
    let abort = frame(&call.stream(Status::Error), &());
    assert_eq!(
        abort,
        hex("0000001c 20008086 00000001 000000d0 00000003 00000007 00000001")
    );
}

#[test]
fn error_reply_payload_layout() {
    let message = "Domain not found: no domain with matching name 'x'";
    let mut err = RemoteError::new(ErrorCode::NoDomain, ErrorDomain::Qemu, message);
    err.str1 = Some("Domain not found: %s".into());
    err.str2 = Some("no domain with matching name 'x'".into());
    let bytes = encode_to_vec(&err);

    let mut expected = hex("0000002a 0000000a 00000001");
    encode_str(&mut expected, message);
    expected.extend(hex("00000002 00000000 00000001"));
    encode_str(&mut expected, "Domain not found: %s");
    expected.extend(hex("00000001"));
    encode_str(&mut expected, "no domain with matching name 'x'");
    expected.extend(hex("00000000 ffffffff ffffffff 00000000"));
    assert_eq!(bytes, expected);

    let back: RemoteError = decode_exact(&bytes).unwrap();
    assert_eq!(back, err);
    assert_eq!(back.code, ErrorCode::NoDomain);
    assert_eq!(back.code.to_raw(), 42);
    assert_eq!(
        back.to_string(),
        "Domain not found: no domain with matching name 'x' (VIR_ERR_NO_DOMAIN, VIR_FROM_QEMU)"
    );
}

fn encode_str(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u32).to_be_bytes());
    out.extend(s.as_bytes());
    out.extend(std::iter::repeat_n(0, (4 - s.len() % 4) % 4));
}

#[test]
fn unknown_codes_are_kept() {
    assert_eq!(ErrorCode::from_raw(9999), ErrorCode::Other(9999));
    assert_eq!(ErrorCode::Other(9999).to_raw(), 9999);
    assert_eq!(ErrorCode::from_raw(-5).name(), None);
    assert_eq!(ErrorCode::from_raw(42), ErrorCode::NoDomain);
    assert_eq!(ErrorCode::Other(42).name(), Some("VIR_ERR_NO_DOMAIN"));
    assert_eq!(ErrorDomain::from_raw(1234).to_string(), "ErrorDomain(1234)");
    assert_eq!(Procedure::from_raw(999_999), Procedure::Other(999_999));
    assert_eq!(MessageType::from_raw(9), MessageType::Other(9));
    assert_eq!(
        CallArgs::decode(Procedure::Other(7777), &[]),
        Err(WireError::UnknownProcedure(7777))
    );
}

/// `CONNECT_GET_VERSION` answers one unsigned hyper: QEMU 10.0.2 is 10 000 002.
#[test]
fn connect_get_version_reply_is_one_hyper() {
    let bytes = [0, 0, 0, 0, 0, 0x98, 0x96, 0x82];
    assert_eq!(
        CallRet::decode(Procedure::ConnectGetVersion, &bytes),
        Ok(CallRet::ConnectGetVersion(ConnectGetVersionRet {
            hv_ver: 10_000_002
        }))
    );
    assert!(CallRet::decode(Procedure::ConnectGetVersion, &bytes[..4]).is_err());
    assert_eq!(
        CallArgs::decode(Procedure::ConnectGetVersion, &[]),
        Ok(CallArgs::ConnectGetVersion(()))
    );
}

#[test]
fn procedure_numbers() {
    let table = [
        (Procedure::ConnectOpen, 1),
        (Procedure::ConnectClose, 2),
        (Procedure::ConnectGetVersion, 4),
        (Procedure::ConnectGetCapabilities, 7),
        (Procedure::ConnectGetDomainCapabilities, 342),
        (Procedure::DomainCreate, 9),
        (Procedure::DomainDefineXml, 11),
        (Procedure::DomainDestroy, 12),
        (Procedure::DomainGetXmlDesc, 14),
        (Procedure::DomainGetInfo, 16),
        (Procedure::DomainLookupByName, 23),
        (Procedure::ConnectGetHostname, 59),
        (Procedure::ConnectSupportsFeature, 60),
        (Procedure::AuthList, 66),
        (Procedure::StoragePoolRefresh, 83),
        (Procedure::StoragePoolLookupByName, 84),
        (Procedure::StoragePoolGetInfo, 87),
        (Procedure::StorageVolCreateXml, 93),
        (Procedure::StorageVolDelete, 94),
        (Procedure::StorageVolLookupByName, 95),
        (Procedure::StorageVolGetInfo, 98),
        (Procedure::StorageVolGetPath, 100),
        (Procedure::InterfaceLookupByName, 128),
        (Procedure::InterfaceGetXmlDesc, 130),
        (Procedure::InterfaceIsActive, 156),
        (Procedure::ConnectGetLibVersion, 157),
        (Procedure::DomainCreateWithFlags, 196),
        (Procedure::StorageVolUpload, 208),
        (Procedure::DomainGetState, 212),
        (Procedure::DomainUndefineFlags, 231),
        (Procedure::DomainDestroyFlags, 234),
        (Procedure::DomainSetMetadata, 264),
        (Procedure::DomainGetMetadata, 265),
        (Procedure::ConnectListAllDomains, 273),
        (Procedure::StoragePoolListAllVolumes, 282),
        (Procedure::DomainDefineXmlFlags, 350),
        (Procedure::DomainInterfaceAddresses, 353),
        (Procedure::ConnectGetType, 3),
        (Procedure::NodeGetInfo, 6),
        (Procedure::DomainGetAutostart, 15),
        (Procedure::DomainGetOsType, 19),
        (Procedure::DomainShutdown, 33),
        (Procedure::StoragePoolLookupByVolume, 86),
        (Procedure::StoragePoolGetAutostart, 89),
        (Procedure::StorageVolLookupByKey, 96),
        (Procedure::StorageVolLookupByPath, 97),
        (Procedure::DomainGetSecurityLabel, 121),
        (Procedure::NodeGetSecurityModel, 122),
        (Procedure::DomainIsActive, 150),
        (Procedure::DomainIsPersistent, 151),
        (Procedure::StoragePoolIsActive, 154),
        (Procedure::StoragePoolIsPersistent, 155),
        (Procedure::DomainHasManagedSaveImage, 183),
        (Procedure::DomainSnapshotNum, 187),
        (Procedure::StorageVolDownload, 209),
        (Procedure::ConnectRegisterCloseCallback, 360),
        (Procedure::ConnectUnregisterCloseCallback, 361),
        (Procedure::DomainGetMessages, 426),
        (Procedure::DomainGetAutostartOnce, 449),
    ];
    for (p, n) in table {
        assert_eq!(p.to_raw(), n, "{p}");
        assert_eq!(Procedure::from_raw(n), p);
    }
    let mut seen = std::collections::HashSet::new();
    for p in Procedure::ALL {
        assert!(seen.insert(p.to_raw()), "duplicate number for {p}");
    }
}

#[test]
fn api_names_are_unique_and_round_trip() {
    let mut seen = std::collections::HashSet::new();
    for &p in Procedure::ALL {
        let name = p.api_name();
        assert!(seen.insert(name), "duplicate API name {name}");
        assert_ne!(name, Procedure::UNKNOWN_API_NAME, "{p}");
        assert_eq!(Procedure::from_api_name(name), Some(p), "{name}");
    }
    assert_eq!(Procedure::DomainDefineXml.api_name(), "DomainDefineXML");
    assert_eq!(Procedure::DomainGetXmlDesc.api_name(), "DomainGetXMLDesc");
    assert_eq!(
        Procedure::DomainLookupByUuid.api_name(),
        "DomainLookupByUUID"
    );
    assert_eq!(Procedure::ConnectGetUri.api_name(), "ConnectGetURI");
    assert_eq!(
        Procedure::Other(9999).api_name(),
        Procedure::UNKNOWN_API_NAME
    );
    // An `Other` holding a tabled number still names its procedure.
    assert_eq!(Procedure::Other(11).api_name(), "DomainDefineXML");
    assert_eq!(Procedure::from_api_name(Procedure::UNKNOWN_API_NAME), None);
    assert_eq!(Procedure::from_api_name("virDomainDefineXML"), None);
    assert_eq!(Procedure::from_api_name("domaindefinexml"), None);
}

#[test]
fn procedures_are_found_by_any_spelling_and_number() {
    for name in [
        "DomainDefineXML",
        "virDomainDefineXML",
        "DOMAIN_DEFINE_XML",
        "REMOTE_PROC_DOMAIN_DEFINE_XML",
    ] {
        assert_eq!(
            Procedure::from_name(name),
            Some(Procedure::DomainDefineXml),
            "{name}"
        );
    }
    assert_eq!(Procedure::from_name("DomainTeleport"), None);
    assert_eq!(Procedure::from_number(11), Some(Procedure::DomainDefineXml));
    assert_eq!(Procedure::from_number(5), None);
    assert_eq!(Procedure::DomainDefineXml.to_raw(), 11);
    assert_eq!(Procedure::DomainDefineXml.api_name(), "DomainDefineXML");
    // Display keeps the protocol's name.
    assert_eq!(Procedure::DomainDefineXml.to_string(), "DOMAIN_DEFINE_XML");
    assert_eq!(Procedure::Other(9999).to_string(), "Procedure(9999)");
    assert!(!Procedure::AuthList.needs_open());
    assert!(Procedure::DomainLookupByName.needs_open());
    assert!(Procedure::StorageVolUpload.uses_storage_driver());
    assert!(Procedure::ConnectListAllStoragePools.uses_storage_driver());
    assert!(!Procedure::ConnectListAllDomains.uses_storage_driver());
}

#[test]
fn marker_types_carry_their_api_name() {
    // Usable in const context, as a span name must be.
    const INHERENT: &str = calls::DomainDefineXml::API_NAME;
    const VIA_TRAIT: &str = <calls::DomainGetXmlDesc as RemoteCall>::API_NAME;
    assert_eq!(INHERENT, "DomainDefineXML");
    assert_eq!(VIA_TRAIT, "DomainGetXMLDesc");
    fn check<C: RemoteCall>() {
        assert_eq!(C::API_NAME, C::PROCEDURE.api_name());
    }
    check::<calls::ConnectOpen>();
    check::<calls::StorageVolUpload>();
    check::<calls::DomainInterfaceAddresses>();
    check::<calls::ConnectGetUri>();
}

#[test]
fn uuid_text_round_trip() {
    let text = "6695eb01-f6a4-8304-79aa-97f2502e193f";
    let uuid = Uuid::parse(text).unwrap();
    assert_eq!(uuid.to_string(), text);
    assert_eq!(Uuid::parse("nope"), None);
}

// Hostile lengths.

#[test]
fn short_buffers_need_more_bytes() {
    let bytes = frame(&Header::call(Procedure::DomainLookupByName, 3), &"name");
    for cut in 0..bytes.len() {
        assert_eq!(Packet::decode(&bytes[..cut]).unwrap(), None, "cut at {cut}");
        let mut buf = BytesMut::from(&bytes[..cut]);
        assert_eq!(Packet::decode_from(&mut buf).unwrap(), None);
        assert_eq!(buf.len(), cut, "a short buffer is left untouched");
    }
    assert!(Packet::decode(&bytes).unwrap().is_some());
}

#[test]
fn packet_lengths_out_of_bounds_are_rejected() {
    for len in [0u32, 4, 27] {
        let bytes = len.to_be_bytes();
        assert_eq!(Packet::decode(&bytes), Err(WireError::PacketTooSmall(len)));
        assert_eq!(Header::decode(&bytes), Err(WireError::PacketTooSmall(len)));
    }
    let max_ok = (4 + limits::MESSAGE_MAX) as u32;
    assert_eq!(frame_len(&max_ok.to_be_bytes()), Ok(Some(max_ok as usize)));
    for len in [max_ok + 1, u32::MAX] {
        let mut bytes = BytesMut::from(&len.to_be_bytes()[..]);
        let (result, largest) = largest_allocation(|| Packet::decode_from(&mut bytes));
        assert!(
            matches!(result, Err(WireError::PacketTooLarge { .. })),
            "{result:?}"
        );
        assert!(largest < 1024, "allocated {largest} bytes");
    }
}

#[test]
fn oversize_strings_are_rejected_without_allocating() {
    // A string claiming 4 GiB, and one just over the 4 MiB limit.
    for len in [u32::MAX, (limits::STRING_MAX + 1) as u32] {
        let mut payload = len.to_be_bytes().to_vec();
        payload.extend([b'a'; 64]);
        let (result, largest) =
            largest_allocation(|| decode_exact::<DomainLookupByNameArgs>(&payload));
        assert!(
            matches!(result, Err(WireError::StringTooLong { .. })),
            "{result:?}"
        );
        assert!(largest < 1024, "allocated {largest} bytes");
    }
    // Within the limit but more than was sent: truncated, nothing allocated.
    let mut payload = 1_000_000u32.to_be_bytes().to_vec();
    payload.extend([b'a'; 64]);
    let (result, largest) = largest_allocation(|| decode_exact::<DomainLookupByNameArgs>(&payload));
    assert!(
        matches!(result, Err(WireError::Truncated { .. })),
        "{result:?}"
    );
    assert!(largest < 1024, "allocated {largest} bytes");
}

#[test]
fn oversize_arrays_are_rejected_without_allocating() {
    type DecodeFn = fn(&[u8]) -> Result<(), WireError>;
    let cases: Vec<(&str, u32, DecodeFn)> = vec![
        ("auth types", 21, |b| {
            decode_exact::<AuthListRet>(b).map(drop)
        }),
        ("domains", 16_385, |b| {
            decode_exact::<ConnectListAllDomainsRet>(b).map(drop)
        }),
        ("volumes", 16_385, |b| {
            decode_exact::<StoragePoolListAllVolumesRet>(b).map(drop)
        }),
        ("interfaces", 2049, |b| {
            decode_exact::<DomainInterfaceAddressesRet>(b).map(drop)
        }),
        ("huge count", u32::MAX, |b| {
            decode_exact::<ConnectListAllDomainsRet>(b).map(drop)
        }),
    ];
    for (what, count, decode) in cases {
        let mut payload = count.to_be_bytes().to_vec();
        payload.extend([0u8; 64]);
        let (result, largest) = largest_allocation(|| decode(&payload));
        assert!(
            matches!(result, Err(WireError::ArrayTooLong { .. })),
            "{what}: {result:?}"
        );
        assert!(largest < 1024, "{what}: allocated {largest} bytes");
    }
    // A count within the maximum but more than the input could hold.
    let mut payload = 16_000u32.to_be_bytes().to_vec();
    payload.extend([0u8; 64]);
    let (result, largest) =
        largest_allocation(|| decode_exact::<ConnectListAllDomainsRet>(&payload));
    assert!(
        matches!(result, Err(WireError::Truncated { .. })),
        "{result:?}"
    );
    assert!(largest < 1024, "allocated {largest} bytes");
}

#[test]
fn oversize_packets_are_not_encoded() {
    let mut buf = BytesMut::from(&b"keep"[..]);
    let data = vec![0u8; limits::MESSAGE_MAX];
    let header = Header::call(Procedure::StorageVolUpload, 1).stream(Status::Continue);
    assert!(matches!(
        encode_raw(&mut buf, &header, &data),
        Err(WireError::PacketTooLarge { .. })
    ));
    let xml = "x".repeat(limits::MESSAGE_MAX);
    assert!(matches!(
        encode_packet(&mut buf, &header, &xml),
        Err(WireError::PacketTooLarge { .. })
    ));
    assert_eq!(
        &buf[..],
        b"keep",
        "a failed encode leaves the buffer as it was"
    );
}

#[test]
fn trailing_bytes_are_rejected() {
    let mut payload = encode_to_vec(&DomainLookupByNameArgs { name: "a".into() });
    payload.extend([0, 0, 0, 0]);
    assert_eq!(
        decode_exact::<DomainLookupByNameArgs>(&payload),
        Err(WireError::TrailingBytes(4))
    );
}

// Round trips.

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn call_args_round_trip(args in any::<CallArgs>()) {
        let bytes = encode_to_vec(&args);
        prop_assert_eq!(bytes.len() % 4, 0);
        let back = CallArgs::decode(args.procedure(), &bytes).unwrap();
        prop_assert_eq!(back, args);
    }

    #[test]
    fn call_ret_round_trip(ret in any::<CallRet>()) {
        let bytes = encode_to_vec(&ret);
        prop_assert_eq!(bytes.len() % 4, 0);
        let back = CallRet::decode(ret.procedure(), &bytes).unwrap();
        prop_assert_eq!(back, ret);
    }

    #[test]
    fn remote_error_round_trip(err in any::<RemoteError>()) {
        let bytes = encode_to_vec(&err);
        let back: RemoteError = decode_exact(&bytes).unwrap();
        prop_assert_eq!(back, err);
    }

    #[test]
    fn packet_round_trip(header in any::<Header>(), payload in proptest::collection::vec(any::<u8>(), 0..256)) {
        let mut buf = BytesMut::new();
        encode_raw(&mut buf, &header, &payload).unwrap();
        prop_assert_eq!(buf.len(), 28 + payload.len());
        prop_assert_eq!(Header::decode(&buf).unwrap(), Some(header));
        let (packet, used) = Packet::decode(&buf).unwrap().unwrap();
        prop_assert_eq!(used, buf.len());
        prop_assert_eq!(&packet.header, &header);
        prop_assert_eq!(&packet.payload[..], &payload[..]);
        let mut reencoded = BytesMut::new();
        packet.encode(&mut reencoded).unwrap();
        prop_assert_eq!(&reencoded, &buf);
    }

    #[test]
    fn packets_back_to_back(headers in proptest::collection::vec(any::<Header>(), 1..8)) {
        let mut buf = BytesMut::new();
        for (i, h) in headers.iter().enumerate() {
            encode_raw(&mut buf, h, &vec![i as u8; i]).unwrap();
        }
        for (i, h) in headers.iter().enumerate() {
            let packet = Packet::decode_from(&mut buf).unwrap().unwrap();
            prop_assert_eq!(&packet.header, h);
            prop_assert_eq!(packet.payload.len(), i);
        }
        prop_assert!(buf.is_empty());
    }

    #[test]
    fn enums_round_trip_raw_values(raw in any::<i32>()) {
        prop_assert_eq!(ErrorCode::from_raw(raw).to_raw(), raw);
        prop_assert_eq!(ErrorDomain::from_raw(raw).to_raw(), raw);
        prop_assert_eq!(Procedure::from_raw(raw).to_raw(), raw);
        prop_assert_eq!(MessageType::from_raw(raw).to_raw(), raw);
        prop_assert_eq!(Status::from_raw(raw).to_raw(), raw);
        prop_assert_eq!(DomainState::from_raw(raw).to_raw(), raw);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(Some((packet, _))) = Packet::decode(&bytes) {
            let _ = CallArgs::decode(packet.header.remote_procedure(), &packet.payload);
            let _ = CallRet::decode(packet.header.remote_procedure(), &packet.payload);
            let _ = packet.remote_error();
        }
        for p in Procedure::ALL {
            let _ = CallArgs::decode(*p, &bytes);
            let _ = CallRet::decode(*p, &bytes);
        }
    }
}

/// The C strings of the security calls: each byte widened to four bytes,
/// the NUL counted (`char x<MAX>`) or padding a fixed array (`char x[N]`),
/// as libvirtd 11.3 sends them to virsh.
#[test]
fn c_char_arrays_widen_each_byte_and_count_the_nul() {
    use crate::{CharArray, FixedChars, decode_exact, encode_to_vec};
    let model = encode_to_vec(&CharArray::<257>("none".into()));
    let mut want = vec![0, 0, 0, 5];
    for b in b"none\0" {
        want.extend([0, 0, 0, *b]);
    }
    assert_eq!(model, want);
    assert_eq!(decode_exact::<CharArray<257>>(&model).unwrap().0, "none");
    assert!(
        decode_exact::<CharArray<4>>(&model).is_err(),
        "over its maximum"
    );
    let fixed = encode_to_vec(&FixedChars::<32>("x86_64".into()));
    assert_eq!(fixed.len(), 32 * 4);
    assert_eq!(&fixed[..8], &[0, 0, 0, b'x', 0, 0, 0, b'8']);
    assert_eq!(decode_exact::<FixedChars<32>>(&fixed).unwrap().0, "x86_64");
    // Without its NUL a C string is malformed; bytes past ASCII survive.
    let mut open = vec![0, 0, 0, 1];
    open.extend([0, 0, 0, b'a']);
    assert!(decode_exact::<CharArray<257>>(&open).is_err());
    let latin = CharArray::<8>("\u{e9}t\u{e9}".into());
    let again = decode_exact::<CharArray<8>>(&encode_to_vec(&latin)).unwrap();
    assert_eq!(again, latin);
}
