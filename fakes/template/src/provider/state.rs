//! The state mapping: power state and reported addresses to the contract's state.

use std::net::{IpAddr, Ipv4Addr};

use conformance::fixture::Power;
use conformance::{State, is_usable_ipv4};

/// The contract state of an instance from its power state and reported addresses:
/// running with a usable IPv4 is Running, running without one is Provisioning, and
/// anything else is Stopped.
pub fn state_of(power: Power, addresses: Option<&[IpAddr]>) -> (State, Option<Ipv4Addr>) {
    match power {
        Power::Running => match first_usable(addresses.unwrap_or_default()) {
            Some(ip) => (State::Running, Some(ip)),
            None => (State::Provisioning, None),
        },
        Power::Paused | Power::Stopped => (State::Stopped, None),
    }
}

pub(super) fn first_usable(addrs: &[IpAddr]) -> Option<Ipv4Addr> {
    addrs.iter().find_map(|a| match a {
        IpAddr::V4(v4) if is_usable_ipv4(*v4) => Some(*v4),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn v4(s: &str) -> IpAddr {
        IpAddr::V4(s.parse().unwrap())
    }

    #[rstest]
    #[case::running_with_address(Power::Running, Some(vec![v4("10.77.0.1")]), State::Running, Some("10.77.0.1"))]
    #[case::running_without_address(Power::Running, Some(vec![]), State::Provisioning, None)]
    #[case::lookup_failed(Power::Running, None, State::Provisioning, None)]
    #[case::only_loopback_and_link_local(Power::Running, Some(vec![v4("127.0.0.1"), v4("169.254.1.1")]), State::Provisioning, None)]
    #[case::first_usable_wins(Power::Running, Some(vec![v4("169.254.1.1"), v4("10.0.0.9")]), State::Running, Some("10.0.0.9"))]
    #[case::ipv6_only(Power::Running, Some(vec!["fd00::1".parse().unwrap()]), State::Provisioning, None)]
    #[case::paused(Power::Paused, Some(vec![v4("10.77.0.1")]), State::Stopped, None)]
    #[case::stopped(Power::Stopped, None, State::Stopped, None)]
    fn maps_power_and_addresses_to_state(
        #[case] power: Power,
        #[case] addrs: Option<Vec<IpAddr>>,
        #[case] state: State,
        #[case] ip: Option<&str>,
    ) {
        let got = state_of(power, addrs.as_deref());
        assert_eq!(got, (state, ip.map(|s| s.parse().unwrap())));
    }
}
