//! A small, reproducible ISO 9660 writer: one flat root directory, a primary
//! tree with ISO names and a Joliet tree with the real names, fixed timestamps.
//! Enough for a cloud-init NoCloud seed; nothing else is supported.

const SECTOR: usize = 2048;
/// Sectors before the first volume descriptor.
const SYSTEM_AREA: usize = 16;

/// The fixed recording time: 2000-01-01 00:00:00 UTC.
const DEC_DATETIME: &[u8; 17] = b"2000010100000000\0";
const DIR_DATETIME: [u8; 7] = [100, 1, 1, 0, 0, 0, 0];

fn both_u32(out: &mut [u8], v: u32) {
    out[..4].copy_from_slice(&v.to_le_bytes());
    out[4..8].copy_from_slice(&v.to_be_bytes());
}

fn both_u16(out: &mut [u8], v: u16) {
    out[..2].copy_from_slice(&v.to_le_bytes());
    out[2..4].copy_from_slice(&v.to_be_bytes());
}

fn ucs2(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(|u| u.to_be_bytes()).collect()
}

/// Writes `text` into `field`, padded with spaces (UCS-2 spaces when `joliet`).
fn fill(field: &mut [u8], text: &str, joliet: bool) {
    if joliet {
        for pair in field.chunks_mut(2) {
            pair.copy_from_slice(&[0, b' '][..pair.len()]);
        }
        let t = ucs2(text);
        let n = t.len().min(field.len());
        field[..n].copy_from_slice(&t[..n]);
    } else {
        field.fill(b' ');
        let n = text.len().min(field.len());
        field[..n].copy_from_slice(&text.as_bytes()[..n]);
    }
}

fn dir_record(id: &[u8], extent: u32, len: u32, dir: bool) -> Vec<u8> {
    let mut size = 33 + id.len();
    size += size % 2;
    let mut r = vec![0u8; size];
    r[0] = size as u8;
    both_u32(&mut r[2..10], extent);
    both_u32(&mut r[10..18], len);
    r[18..25].copy_from_slice(&DIR_DATETIME);
    r[25] = if dir { 2 } else { 0 };
    both_u16(&mut r[28..32], 1);
    r[32] = id.len() as u8;
    r[33..33 + id.len()].copy_from_slice(id);
    r
}

/// The ISO 9660 name of a file: upper case, `-` as `_`, version `;1`.
fn primary_name(name: &str) -> Vec<u8> {
    let mut n: String = name
        .chars()
        .map(|c| match c {
            'a'..='z' => c.to_ascii_uppercase(),
            'A'..='Z' | '0'..='9' | '_' => c,
            _ => '_',
        })
        .take(30)
        .collect();
    if !n.contains('.') {
        n.push('.');
    }
    n.push_str(";1");
    n.into_bytes()
}

#[allow(clippy::too_many_arguments)]
fn volume_descriptor(
    kind: u8,
    label: &str,
    joliet: bool,
    total: u32,
    path_table_len: u32,
    l_table: u32,
    m_table: u32,
    root: &[u8],
) -> Vec<u8> {
    let mut d = vec![0u8; SECTOR];
    d[0] = kind;
    d[1..6].copy_from_slice(b"CD001");
    d[6] = 1;
    fill(&mut d[8..40], "LINUX", joliet);
    fill(&mut d[40..72], label, joliet);
    both_u32(&mut d[80..88], total);
    if joliet {
        d[88..91].copy_from_slice(b"%/E");
    }
    both_u16(&mut d[120..124], 1);
    both_u16(&mut d[124..128], 1);
    both_u16(&mut d[128..132], SECTOR as u16);
    both_u32(&mut d[132..140], path_table_len);
    d[140..144].copy_from_slice(&l_table.to_le_bytes());
    d[148..152].copy_from_slice(&m_table.to_be_bytes());
    d[156..190].copy_from_slice(root);
    for (a, b) in [(190, 318), (318, 446), (446, 574), (574, 702)] {
        fill(&mut d[a..b], "", joliet);
    }
    for (a, b) in [(702, 739), (739, 776), (776, 813)] {
        fill(&mut d[a..b], "", joliet);
    }
    d[813..830].copy_from_slice(DEC_DATETIME);
    d[830..847].copy_from_slice(DEC_DATETIME);
    d[847..864].copy_from_slice(b"0000000000000000\0");
    d[864..881].copy_from_slice(DEC_DATETIME);
    d[881] = 1;
    d
}

fn path_table(root_extent: u32, big_endian: bool) -> Vec<u8> {
    let mut t = vec![0u8; 10];
    t[0] = 1;
    let (loc, parent) = if big_endian {
        (root_extent.to_be_bytes(), 1u16.to_be_bytes())
    } else {
        (root_extent.to_le_bytes(), 1u16.to_le_bytes())
    };
    t[2..6].copy_from_slice(&loc);
    t[6..8].copy_from_slice(&parent);
    t
}

/// An ISO image labelled `label` holding `files` (name, content) in its root.
///
/// The same input always gives the same bytes.
pub fn write_iso(label: &str, files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut files: Vec<(&str, &[u8])> = files.to_vec();
    files.sort_by_key(|(n, _)| primary_name(n));
    // Layout: descriptors 16..=18, path tables 19..=22, directories 23 and 24, files.
    let (pvd, svd, term) = (16u32, 17u32, 18u32);
    let (pl, pm, jl, jm) = (19u32, 20u32, 21u32, 22u32);
    let (proot, jroot) = (23u32, 24u32);
    let mut next = 25u32;
    let mut extents = Vec::new();
    for (_, data) in &files {
        extents.push(next);
        next += data.len().div_ceil(SECTOR) as u32;
    }
    let total = next;
    let dir = |root: u32, joliet: bool| {
        let mut d = Vec::new();
        d.extend(dir_record(&[0], root, SECTOR as u32, true));
        d.extend(dir_record(&[1], root, SECTOR as u32, true));
        for ((name, data), extent) in files.iter().zip(&extents) {
            let id = if joliet {
                ucs2(name)
            } else {
                primary_name(name)
            };
            d.extend(dir_record(&id, *extent, data.len() as u32, false));
        }
        assert!(d.len() <= SECTOR, "the seed directory fits one sector");
        d.resize(SECTOR, 0);
        d
    };
    let mut out = vec![0u8; total as usize * SECTOR];
    let mut put = |sector: u32, bytes: &[u8]| {
        let at = sector as usize * SECTOR;
        out[at..at + bytes.len()].copy_from_slice(bytes);
    };
    let proot_rec = dir_record(&[0], proot, SECTOR as u32, true);
    let jroot_rec = dir_record(&[0], jroot, SECTOR as u32, true);
    put(
        pvd,
        &volume_descriptor(1, label, false, total, 10, pl, pm, &proot_rec),
    );
    put(
        svd,
        &volume_descriptor(2, label, true, total, 10, jl, jm, &jroot_rec),
    );
    let mut t = vec![0u8; 7];
    t[0] = 255;
    t[1..6].copy_from_slice(b"CD001");
    t[6] = 1;
    put(term, &t);
    put(pl, &path_table(proot, false));
    put(pm, &path_table(proot, true));
    put(jl, &path_table(jroot, false));
    put(jm, &path_table(jroot, true));
    put(proot, &dir(proot, false));
    put(jroot, &dir(jroot, true));
    for ((_, data), extent) in files.iter().zip(&extents) {
        put(*extent, data);
    }
    debug_assert!(SYSTEM_AREA as u32 == pvd);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_reproducibility() {
        let a = write_iso("cidata", &[("user-data", b"hello"), ("meta-data", b"x")]);
        let b = write_iso("cidata", &[("meta-data", b"x"), ("user-data", b"hello")]);
        assert_eq!(a, b);
        assert_eq!(a.len() % SECTOR, 0);
        assert_eq!(&a[16 * SECTOR + 1..16 * SECTOR + 6], b"CD001");
        assert_eq!(&a[16 * SECTOR + 40..16 * SECTOR + 46], b"cidata");
        assert_eq!(a[18 * SECTOR], 255);
        assert_eq!(primary_name("user-data"), b"USER_DATA.;1");
    }
}
