//! The bodies of the fuzz targets in `fuzz/`, kept here so that a plain
//! `cargo test` replays each committed seed corpus through exactly the code
//! the fuzzer runs. Not part of the crate's API.

use std::time::{Duration, UNIX_EPOCH};

use conformance::ProviderId;

use crate::config::Config;
use crate::id::{format_id, parse_id};
use crate::xml::{Mark, metadata_element, parse_mark};

/// Reads `data` as the element `DomainGetMetadata` returns. Nothing may
/// panic, and a mark that parses, written back with [`metadata_element`],
/// must parse to the same mark (its time cut to the second, as kvm2 writes
/// it).
pub fn parse_mark_xml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(mark) = parse_mark(text) else {
        return;
    };
    let written = metadata_element(&mark);
    let back = parse_mark(&written)
        .unwrap_or_else(|e| panic!("a written mark re-parses: {e}: {written:?}"));
    let expected = Mark {
        created_at: mark.created_at.map(whole_seconds),
        ..mark
    };
    assert_eq!(back, expected, "{written:?}");
    // What kvm2 writes, it writes the same way twice.
    assert_eq!(metadata_element(&back), written);
}

/// `t` without its fraction of a second (times before 1970 round down).
fn whole_seconds(t: std::time::SystemTime) -> std::time::SystemTime {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => UNIX_EPOCH + Duration::from_secs(d.as_secs()),
        Err(e) => {
            let d = e.duration();
            let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
            UNIX_EPOCH - Duration::from_secs(secs)
        }
    }
}

/// Loads `data` as a kvm2 configuration file. Nothing may panic, and a
/// configuration that loads is valid, and every host it names gets IDs that
/// kvm2 itself can parse back, every placement zone reaches a configured
/// host, and a request naming no image gets one.
pub fn load_config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(cfg) = Config::from_yaml(text) else {
        return;
    };
    assert_eq!(cfg.validate(), Ok(()));
    for h in &cfg.hosts {
        let id = format_id(&h.name, "vm-1");
        let parsed = parse_id(&id)
            .unwrap_or_else(|| panic!("host {:?} is accepted but its IDs do not parse", h.name));
        assert_eq!(parsed.host, h.name);
        assert!(cfg.host(&h.name).is_some());
    }
    for zone in cfg.placement.keys() {
        assert!(cfg.host_for_zone(zone).is_some(), "zone {zone:?}");
    }
    assert!(cfg.image(None).is_some());
}

/// Parses `data` as an instance ID. Nothing may panic, and an ID that parses
/// formats back to the same string.
pub fn parse_provider_id(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let id = ProviderId::new(text.as_ref());
    let Some(parsed) = parse_id(&id) else {
        return;
    };
    let again = format_id(&parsed.host, &parsed.name);
    assert_eq!(again.as_str(), id.as_str());
    assert_eq!(parse_id(&again), Some(parsed));
}

#[cfg(test)]
mod replay {
    fn replay(target: &str, f: fn(&[u8])) {
        seed_corpus::replay(env!("CARGO_MANIFEST_DIR"), target, f);
    }

    #[test]
    fn parse_mark_corpus() {
        replay("parse_mark", super::parse_mark_xml);
    }

    #[test]
    fn load_config_corpus() {
        replay("load_config", super::load_config);
    }

    #[test]
    fn parse_id_corpus() {
        replay("parse_id", super::parse_provider_id);
    }
}
