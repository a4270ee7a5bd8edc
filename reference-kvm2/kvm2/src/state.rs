//! Mapping libvirt domain states and reported addresses onto the contract's
//! instance state.

use std::net::Ipv4Addr;

use conformance::{State, is_usable_ipv4};
use libvirt_wire::{DomainInterface, DomainState, IP_ADDR_TYPE_IPV4};

/// The contract state of a domain in `state` that has (or has not) a usable address.
///
/// nostate → Provisioning; running or blocked → Running with an address,
/// Provisioning without; everything else, unknown codes included → Stopped.
pub fn map_state(state: DomainState, has_ip: bool) -> State {
    match state {
        DomainState::NoState => State::Provisioning,
        DomainState::Running | DomainState::Blocked if has_ip => State::Running,
        DomainState::Running | DomainState::Blocked => State::Provisioning,
        _ => State::Stopped,
    }
}

/// Whether a domain in `state` may have an address worth looking up.
pub fn may_have_address(state: DomainState) -> bool {
    matches!(state, DomainState::Running | DomainState::Blocked)
}

/// The first usable IPv4 address (not loopback, link-local or unspecified).
pub fn first_ipv4(ifaces: &[DomainInterface]) -> Option<Ipv4Addr> {
    ifaces
        .iter()
        .flat_map(|i| i.addrs.iter())
        .filter(|a| a.kind == IP_ADDR_TYPE_IPV4)
        .filter_map(|a| a.addr.parse::<Ipv4Addr>().ok())
        .find(|ip| is_usable_ipv4(*ip))
}

#[cfg(test)]
mod tests {
    use super::*;
    use libvirt_wire::DomainIpAddr;
    use rstest::rstest;

    #[rstest]
    #[case(DomainState::NoState, false, State::Provisioning)]
    #[case(DomainState::Running, false, State::Provisioning)]
    #[case(DomainState::Running, true, State::Running)]
    #[case(DomainState::Blocked, true, State::Running)]
    #[case(DomainState::Paused, true, State::Stopped)]
    #[case(DomainState::Shutdown, false, State::Stopped)]
    #[case(DomainState::Shutoff, false, State::Stopped)]
    #[case(DomainState::Crashed, false, State::Stopped)]
    #[case(DomainState::PmSuspended, false, State::Stopped)]
    #[case(DomainState::Other(42), true, State::Stopped)]
    fn state_table(#[case] s: DomainState, #[case] ip: bool, #[case] want: State) {
        assert_eq!(map_state(s, ip), want);
    }

    fn iface(addrs: &[(i32, &str)]) -> DomainInterface {
        DomainInterface {
            name: "eth0".into(),
            hwaddr: None,
            addrs: addrs
                .iter()
                .map(|(k, a)| DomainIpAddr {
                    kind: *k,
                    addr: (*a).into(),
                    prefix: 24,
                })
                .collect(),
        }
    }

    #[test]
    fn first_ipv4_filters() {
        let got = first_ipv4(&[
            iface(&[(0, "127.0.0.1")]),
            iface(&[
                (1, "fe80::1"),
                (0, "169.254.3.3"),
                (0, "0.0.0.0"),
                (0, "10.0.0.7"),
            ]),
        ]);
        assert_eq!(got, Some(Ipv4Addr::new(10, 0, 0, 7)));
        assert_eq!(first_ipv4(&[iface(&[(1, "fd00::5")])]), None);
        assert_eq!(first_ipv4(&[]), None);
    }
}
