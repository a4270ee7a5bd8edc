//! Checks of the Get rules (GET-*).

use std::net::{IpAddr, Ipv4Addr};
use std::time::Instant;

use proptest::prelude::*;

use crate::fixture::{FaultKind, FaultSpec, Power, Reachability, Trigger};
use crate::profile::{DeleteReturn, IpSource};
use crate::suite::cx::{CheckError, CheckResult, Cx, describe_result, kind_of};
use crate::suite::props::{PropError, property};
use crate::{ProviderId, State, is_usable_ipv4};

/// Checks the Get (or listing) result after a Delete returned, per delete-return.
pub(crate) async fn gone_after_delete(cx: &Cx, id: &ProviderId, at: &str) -> CheckResult {
    match cx.profile.delete_return() {
        DeleteReturn::Waits => {
            let r = cx.p.get(&cx.ctx(), id).await;
            if !matches!(&r, Err(e) if e.is_not_found()) {
                cx.violate(
                    at,
                    "NotFound right after Delete returned (delete-return=waits)",
                    describe_result(&r),
                );
            }
            Ok(())
        }
        DeleteReturn::Early => cx.wait_gone(cx.p.as_ref(), id, at).await,
    }
}

/// GET-AFTER-DELETE
pub async fn get_after_delete(cx: &Cx) -> CheckResult {
    for running in [false, true] {
        let case = if running {
            "deleted once Running"
        } else {
            "deleted right after Create"
        };
        let req = cx.request();
        let id = cx.create_ok(cx.p.as_ref(), &req, case).await?;
        if running {
            cx.wait_running(cx.p.as_ref(), &id, case).await?;
        }
        cx.delete_ok(cx.p.as_ref(), &id, case).await?;
        gone_after_delete(cx, &id, case).await?;
        cx.note(format!("{case}: Get → NotFound"));
    }
    Ok(())
}

/// GET-DURING-DELETE
pub async fn get_during_delete(cx: &Cx) -> CheckResult {
    let req = cx.request();
    let id = cx.create_ok(cx.p.as_ref(), &req, "Create").await?;
    cx.wait_running(cx.p.as_ref(), &id, "boot").await?;
    // Every backend call slowed a little, so the Delete lasts long enough for Gets to
    // overlap it whatever the machine's load.
    if cx.tb.faults().is_some() {
        cx.inject(FaultSpec {
            location: Some(cx.loc0().name.clone()),
            trigger: Trigger::Always,
            kind: FaultKind::Delay(cx.timing.quiet / 3),
        })?;
    }
    let (p, ctx, i) = (cx.p.clone(), cx.ctx(), id.clone());
    let del = tokio::spawn(async move { p.delete(&ctx, &i).await });
    let (mut polls, mut overlapped) = (0, 0);
    loop {
        let started_before_end = !del.is_finished();
        let r = cx.p.get(&cx.ctx(), &id).await;
        polls += 1;
        if started_before_end {
            overlapped += 1;
        }
        if r.is_err() && !matches!(&r, Err(e) if e.is_not_found()) {
            cx.violate(
                format!("Get #{polls} during Delete"),
                "the instance or NotFound",
                describe_result(&r),
            );
        }
        if !started_before_end {
            break;
        }
    }
    if let Some(f) = cx.tb.faults() {
        f.clear();
    }
    let r = cx.joined(del.await, "delete task")?;
    if let Err(e) = r {
        return cx.fail(
            "Delete",
            "Delete to succeed",
            crate::suite::cx::describe(&e),
        );
    }
    cx.note(format!(
        "{overlapped} of {polls} Gets started while the Delete ran"
    ));
    if overlapped == 0 {
        return Err(CheckError::Harness(
            "the Delete finished before any Get started; nothing overlapped it".into(),
        ));
    }
    gone_after_delete(cx, &id, "after Delete").await
}

/// GET-BUSY
pub async fn get_busy(cx: &Cx) -> CheckResult {
    let faults = cx.faults()?;
    let loc = cx.loc0().name.clone();
    let req = cx.request();
    let id = cx.create_ok(cx.p.as_ref(), &req, "Create").await?;
    cx.wait_running(cx.p.as_ref(), &id, "boot").await?;
    let short = cx.timing.quiet * 2;
    let cases: [(&str, Option<FaultKind>, Option<Reachability>); 5] = [
        ("busy backend", Some(FaultKind::Transient), None),
        ("connection dropped", Some(FaultKind::Drop), None),
        (
            "backend hangs past the deadline",
            Some(FaultKind::Hang),
            None,
        ),
        (
            "location refuses connections",
            None,
            Some(Reachability::Refused),
        ),
        ("location black-holed", None, Some(Reachability::BlackHole)),
    ];
    for (case, fault, reach) in cases {
        let mut fired = None;
        if let Some(kind) = fault {
            fired = Some(cx.inject(FaultSpec {
                location: Some(loc.clone()),
                trigger: Trigger::Always,
                kind,
            })?);
        }
        if let Some(r) = reach {
            faults.set_reachability(&loc, r).await?;
        }
        let (ctx, _) = cx.ctx_for(short);
        let t = Instant::now();
        let r = cx.p.get(&ctx, &id).await;
        let took = t.elapsed();
        faults.clear();
        faults.set_reachability(&loc, Reachability::Up).await?;
        if !matches!(&r, Err(e) if e.is_transient()) {
            cx.violate(case, "Transient", describe_result(&r));
        }
        if took > short + cx.timing.slack {
            cx.violate(
                case,
                format!("an answer within the {short:?} deadline"),
                format!("took {took:?}"),
            );
        }
        if let Some(f) = fired
            && !faults.fired(f)
        {
            return Err(CheckError::Harness(format!(
                "{case}: the injected fault did not fire"
            )));
        }
        cx.note(format!("{case}: Get → {} in {took:?}", kind_of(&r)));
        let back = cx
            .poll(|| async { cx.p.get(&cx.ctx(), &id).await.ok() })
            .await;
        if back.is_none() {
            cx.violate(
                format!("{case}: recovery"),
                "Get to succeed again once the fault is gone",
                "it did not",
            );
        }
    }
    cx.delete_ok(cx.p.as_ref(), &id, "cleanup").await
}

/// GET-STATE
pub async fn get_state(cx: &Cx) -> CheckResult {
    let sc = cx.state_control()?;
    let loc = cx.loc0().name.clone();
    let req = cx.request();
    let id = cx.create_ok(cx.p.as_ref(), &req, "Create").await?;
    let inst = cx.wait_running(cx.p.as_ref(), &id, "boot").await?;
    let with_ip = cx.profile.ip_source() != IpSource::None;
    running_address(cx, &inst, with_ip);
    for (case, set, want, ip) in state_cases(with_ip) {
        match set {
            Set::Addrs(a) => sc.set_addresses(&loc, &req.name, a).await?,
            Set::LookupFails(f) => sc.fail_address_lookup(&loc, &req.name, f).await?,
            Set::Power(p) => sc.set_power(&loc, &req.name, p).await?,
        }
        let got = cx.get_ok(cx.p.as_ref(), &id, case).await?;
        let want_ip = ip.map(|s| s.parse::<Ipv4Addr>().unwrap());
        if got.state != want
            || (want == State::Running && got.ipv4 != want_ip)
            || (want != State::Running && got.ipv4.is_some_and(|a| !is_usable_ipv4(a)))
        {
            cx.violate(
                case,
                format!("{want:?} with address {want_ip:?}"),
                format!("{:?} with address {:?}", got.state, got.ipv4),
            );
        }
        cx.note(format!("{case}: {:?} {:?}", got.state, got.ipv4));
    }
    cx.delete_ok(cx.p.as_ref(), &id, "cleanup").await
}

/// A booted instance has a usable IPv4 address exactly when the profile's
/// `ip-source` promises one.
fn running_address(cx: &Cx, inst: &crate::Instance, with_ip: bool) {
    if with_ip && !inst.ipv4.is_some_and(is_usable_ipv4) {
        cx.violate(
            "Running",
            format!(
                "a usable IPv4 address (ip-source={})",
                cx.profile.ip_source()
            ),
            format!("{:?}", inst.ipv4),
        );
    }
    if !with_ip && inst.ipv4.is_some() {
        cx.violate(
            "Running",
            "no address (ip-source=none)",
            format!("{:?}", inst.ipv4),
        );
    }
}

/// What GET-STATE sets out of band.
enum Set {
    Addrs(Vec<IpAddr>),
    LookupFails(bool),
    Power(Power),
}

/// GET-STATE's cases, in order: what is set, the state Get must report, and the
/// address it must report when Running. The address cases only when the profile's
/// `ip-source` gives one.
fn state_cases(with_ip: bool) -> Vec<(&'static str, Set, State, Option<&'static str>)> {
    let v4 = |s: &str| IpAddr::V4(s.parse::<Ipv4Addr>().unwrap());
    let mut cases = Vec::new();
    if with_ip {
        cases.push((
            "only loopback and link-local addresses",
            Set::Addrs(vec![v4("127.0.0.1"), v4("169.254.7.7")]),
            State::Provisioning,
            None,
        ));
        cases.push((
            "link-local then a usable address",
            Set::Addrs(vec![v4("169.254.7.7"), v4("10.1.2.3")]),
            State::Running,
            Some("10.1.2.3"),
        ));
        cases.push((
            "only IPv6",
            Set::Addrs(vec!["fd00::5".parse().unwrap()]),
            State::Provisioning,
            None,
        ));
        cases.push((
            "no address yet",
            Set::Addrs(vec![]),
            State::Provisioning,
            None,
        ));
        cases.push((
            "a usable address",
            Set::Addrs(vec![v4("10.1.2.4")]),
            State::Running,
            Some("10.1.2.4"),
        ));
        // The lookup fails while a usable address is set: only then does a failed
        // lookup differ from "no address" (a hook that did nothing, or a provider
        // that looked past the failure, shows Running here).
        cases.push((
            "address lookup fails",
            Set::LookupFails(true),
            State::Provisioning,
            None,
        ));
        cases.push((
            "lookup works again",
            Set::LookupFails(false),
            State::Running,
            Some("10.1.2.4"),
        ));
    }
    cases.push(("paused", Set::Power(Power::Paused), State::Stopped, None));
    cases.push(("shut off", Set::Power(Power::Stopped), State::Stopped, None));
    cases
}

/// An arbitrary ID: noise, or a valid ID bent out of shape.
pub(crate) fn arbitrary_ids(cx: &Cx) -> impl Strategy<Value = String> + use<> {
    let valid = cx.tb.id_for(&cx.loc0().name, "x-name").to_string();
    let valid2 = valid.clone();
    prop_oneof![
        "\\PC{0,40}",
        "[a-z/:.%-]{0,40}",
        ("\\PC{0,12}", 0..4usize).prop_map(move |(s, how)| match how {
            0 => format!("{valid}{s}"),
            1 => format!("{s}{valid}"),
            2 => valid.replace("x-name", &s),
            _ => valid.replacen('/', &s, 1),
        }),
        Just(valid2.replace("x-name", "")),
        Just(String::new()),
    ]
}

/// GET-MALFORMED
pub async fn get_malformed(cx: &Cx) -> CheckResult {
    for raw in cx.tb.malformed_ids() {
        let r = cx.p.get(&cx.ctx(), &ProviderId::new(raw.clone())).await;
        if !matches!(&r, Err(e) if e.is_permanent()) {
            cx.violate(format!("Get {raw:?}"), "Permanent", describe_result(&r));
        }
    }
    property(cx, "arbitrary IDs", arbitrary_ids(cx), |raw| async move {
        let id = ProviderId::new(raw);
        let r = cx.p.get(&cx.ctx(), &id).await;
        let well_formed = cx.tb.location_of(&id).is_some();
        match &r {
            Err(e) if e.is_permanent() => Ok(()),
            Err(e) if e.is_not_found() && well_formed => Ok(()),
            _ => Err(PropError::Fail(format!(
                "Get {:?} ({}) returned {}",
                id.as_str(),
                if well_formed {
                    "well formed"
                } else {
                    "malformed"
                },
                describe_result(&r)
            ))),
        }
    })
}

/// GET-UNCONFIGURED
pub async fn get_unconfigured(cx: &Cx) -> CheckResult {
    let id = cx.tb.unconfigured_id(&cx.name());
    let r = cx.p.get(&cx.ctx(), &id).await;
    if !matches!(&r, Err(e) if e.is_permanent()) {
        cx.violate(format!("Get {id}"), "Permanent", describe_result(&r));
    }
    Ok(())
}

/// GET-STATELESS
pub async fn get_stateless(cx: &Cx) -> CheckResult {
    let req = cx.request();
    let id = cx.create_ok(cx.p.as_ref(), &req, "Create").await?;
    let first = cx.wait_running(cx.p.as_ref(), &id, "boot").await?;
    let p2 = cx.tb.restart()?;
    let second = cx
        .get_ok(p2.as_ref(), &id, "Get from a new provider")
        .await?;
    for (field, a, b) in [
        ("id", first.id.to_string(), second.id.to_string()),
        ("name", first.name.clone(), second.name.clone()),
        ("uid", first.uid.clone(), second.uid.clone()),
        ("tag", first.tag.clone(), second.tag.clone()),
        (
            "created_at",
            format!("{:?}", first.created_at),
            format!("{:?}", second.created_at),
        ),
    ] {
        if a != b {
            cx.violate(format!("new provider: {field}"), a, b);
        }
    }
    let listed = p2.list_by_tag(&cx.ctx(), &req.tag).await;
    if !matches!(&listed, Ok(l) if l.instances.iter().any(|i| i.id == id)) {
        cx.violate(
            "new provider: ListByTag",
            format!("{id} listed"),
            describe_result(&listed),
        );
    }
    cx.delete_ok(p2.as_ref(), &id, "cleanup").await
}
