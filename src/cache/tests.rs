//! Unit tests of the cache store: entries, directory checks, eviction, concurrency.

use super::entry::{OFF_HASH, OFF_KEY, OFF_LEN, OFF_VERSION};
use super::*;
use sha2::{Digest, Sha256};
use std::os::unix::fs::symlink;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::sync::{Arc, Mutex, MutexGuard};

/// Serialises tests that change the (process-wide) environment.
static PROCESS_LOCK: Mutex<()> = Mutex::new(());

fn process_lock() -> MutexGuard<'static, ()> {
    PROCESS_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn is_root() -> bool {
    euid() == 0
}

/// A fresh directory under the system temp dir, removed on drop.
struct TestDir(PathBuf);

impl TestDir {
    fn new(name: &str) -> TestDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let p = std::env::temp_dir().join(format!(
            "cudyn-cache-test-{}-{name}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).unwrap();
        TestDir(p)
    }
    fn join(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        fn unlock(p: &Path) {
            if let Ok(m) = fs::symlink_metadata(p) {
                if m.is_dir() {
                    let _ = fs::set_permissions(p, fs::Permissions::from_mode(0o700));
                    if let Ok(rd) = fs::read_dir(p) {
                        for e in rd.flatten() {
                            unlock(&e.path());
                        }
                    }
                }
            }
        }
        unlock(&self.0);
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn key(s: &str) -> Key {
    let mut b = KeyBuilder::new("cudyn.test");
    b.part("name", s.as_bytes());
    b.finish()
}

fn cache_in(td: &TestDir, max: u64) -> Cache {
    Cache::at(td.join("cache"), max).unwrap()
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

fn temp_files(dir: &Path) -> Vec<String> {
    names(dir).into_iter().filter(|n| n.starts_with(TMP_PREFIX)).collect()
}

fn entry_files(dir: &Path) -> Vec<String> {
    names(dir).into_iter().filter(|n| classify(OsStr::new(n)) == Kind::Entry).collect()
}

fn set_mtime(path: &Path, t: SystemTime) {
    File::open(path).unwrap().set_modified(t).unwrap();
}

fn ago(secs: u64) -> SystemTime {
    SystemTime::now() - Duration::from_secs(secs)
}

#[test]
fn round_trip() {
    let td = TestDir::new("roundtrip");
    let c = cache_in(&td, 1 << 20);
    let k = key("a");
    assert_eq!(c.get(&k), None);
    c.put(&k, b"hello cubin").unwrap();
    assert_eq!(c.get(&k).as_deref(), Some(&b"hello cubin"[..]));
    // Replacing and empty payloads work too.
    c.put(&k, b"").unwrap();
    assert_eq!(c.get(&k), Some(vec![]));
    let path = c.entry_path(&k);
    assert_eq!(path.file_name().unwrap().to_str().unwrap(), format!("{}.cudyn", k.hex()));
    assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
    assert!(temp_files(c.dir()).is_empty());
    assert_eq!(entry_files(c.dir()).len(), 1);
    // Encoding layout.
    let e = encode_entry(&k, b"xyz");
    assert_eq!(e.len(), ENTRY_HEADER_LEN + 3);
    assert_eq!(&e[..8], b"CUDYNENT");
    assert_eq!(&e[8..12], &1u32.to_le_bytes());
    assert_eq!(&e[12..44], &k.0);
    assert_eq!(&e[44..52], &3u64.to_le_bytes());
    assert_eq!(&e[52..84], Sha256::digest(b"xyz").as_slice());
    assert_eq!(decode_entry(&k, &e), Ok(&b"xyz"[..]));
}

#[test]
fn key_separation() {
    let k = |domain: &str, parts: &[(&str, &[u8])]| {
        let mut b = KeyBuilder::new(domain);
        for (l, p) in parts {
            b.part(l, p);
        }
        b.finish()
    };
    let base = k("d", &[("s", b"ab"), ("s", b"c")]);
    assert_eq!(base, k("d", &[("s", b"ab"), ("s", b"c")]));
    assert_ne!(base, k("d", &[("s", b"a"), ("s", b"bc")]));
    assert_ne!(base, k("d", &[("s", b"abc")]));
    assert_ne!(base, k("d", &[("t", b"ab"), ("s", b"c")]));
    assert_ne!(base, k("e", &[("s", b"ab"), ("s", b"c")]));
    assert_ne!(base, k("d", &[("s", b"c"), ("s", b"ab")]));
    // Label/content boundary is unambiguous too.
    assert_ne!(k("d", &[("ab", b"c")]), k("d", &[("a", b"bc")]));
    assert_ne!(k("d", &[("", b"")]), k("d", &[]));
    assert_ne!(k("", &[]), KeyBuilder::default().finish());
    // finish does not consume; hex is 64 lower-case chars.
    let mut b = KeyBuilder::new("d");
    b.part("x", b"1");
    assert_eq!(b.finish(), b.finish());
    let h = b.finish().hex();
    assert_eq!(h.len(), 64);
    assert!(h.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)));
    assert_eq!(Key([0xab; 32]).hex(), "ab".repeat(32));
    assert_eq!(format!("{}", Key([1; 32])), "01".repeat(32));
}

#[test]
fn corrupted_payload_is_miss_removed_and_replaced() {
    let td = TestDir::new("corrupt");
    let c = cache_in(&td, 1 << 20);
    let k = key("corrupt");
    c.put(&k, b"0123456789abcdef").unwrap();
    let path = c.entry_path(&k);
    let mut bytes = fs::read(&path).unwrap();
    bytes[ENTRY_HEADER_LEN + 3] ^= 0x40;
    assert_eq!(decode_entry(&k, &bytes), Err(EntryError::HashMismatch));
    fs::write(&path, &bytes).unwrap();
    assert_eq!(c.get(&k), None);
    assert!(!path.exists(), "corrupt entry removed");
    c.put(&k, b"0123456789abcdef").unwrap();
    assert_eq!(c.get(&k).as_deref(), Some(&b"0123456789abcdef"[..]));
    // Corruption in every header field is caught as well.
    let good = encode_entry(&k, b"payload");
    for i in 0..good.len() {
        let mut b = good.clone();
        b[i] ^= 1;
        assert!(decode_entry(&k, &b).is_err(), "flip at byte {i} undetected");
    }
    // Trailing garbage too.
    let mut b = good.clone();
    b.push(0);
    assert_eq!(decode_entry(&k, &b), Err(EntryError::LengthMismatch));
}

#[test]
fn truncated_entries_are_misses() {
    let td = TestDir::new("trunc");
    let c = cache_in(&td, 1 << 20);
    let k = key("trunc");
    let full = encode_entry(&k, b"small payload");
    let path = c.entry_path(&k);
    for n in 0..full.len() {
        assert!(decode_entry(&k, &full[..n]).is_err(), "prefix {n} accepted");
        fs::write(&path, &full[..n]).unwrap();
        assert_eq!(c.get(&k), None, "prefix {n} was a hit");
        assert!(!path.exists(), "prefix {n} not removed");
    }
    assert_eq!(decode_entry(&k, &full[..0]), Err(EntryError::TooShort));
    assert_eq!(decode_entry(&k, &full[..40]), Err(EntryError::TooShort));
    assert_eq!(decode_entry(&k, &full[..full.len() - 1]), Err(EntryError::LengthMismatch));
    fs::write(&path, &full).unwrap();
    assert_eq!(c.get(&k).as_deref(), Some(&b"small payload"[..]));
}

#[test]
fn zero_length_file_is_miss() {
    let td = TestDir::new("zero");
    let c = cache_in(&td, 1 << 20);
    let k = key("zero");
    let path = c.entry_path(&k);
    fs::write(&path, b"").unwrap();
    assert_eq!(c.get(&k), None);
    assert!(!path.exists());
    c.put(&k, b"x").unwrap();
    assert_eq!(c.get(&k), Some(b"x".to_vec()));
}

#[test]
fn foreign_entry_is_miss() {
    let td = TestDir::new("foreign");
    let c = cache_in(&td, 1 << 20);
    let (a, b) = (key("A"), key("B"));
    c.put(&a, b"code of A").unwrap();
    fs::copy(c.entry_path(&a), c.entry_path(&b)).unwrap();
    assert_eq!(decode_entry(&b, &fs::read(c.entry_path(&b)).unwrap()), Err(EntryError::ForeignKey));
    assert_eq!(c.get(&b), None);
    assert!(!c.entry_path(&b).exists());
    assert_eq!(c.get(&a).as_deref(), Some(&b"code of A"[..]));
}

#[test]
fn wrong_version_and_magic_are_misses() {
    let td = TestDir::new("version");
    let c = cache_in(&td, 1 << 20);
    let k = key("v");
    let mut e = encode_entry(&k, b"payload");
    e[OFF_VERSION..OFF_KEY].copy_from_slice(&2u32.to_le_bytes());
    assert_eq!(decode_entry(&k, &e), Err(EntryError::BadVersion));
    fs::write(c.entry_path(&k), &e).unwrap();
    assert_eq!(c.get(&k), None);
    assert!(!c.entry_path(&k).exists());
    let mut e = encode_entry(&k, b"payload");
    e[0] = b'X';
    assert_eq!(decode_entry(&k, &e), Err(EntryError::BadMagic));
    fs::write(c.entry_path(&k), &e).unwrap();
    assert_eq!(c.get(&k), None);
    assert!(!c.entry_path(&k).exists());
}

#[test]
fn decode_never_panics_on_garbage() {
    let k = key("fuzz");
    let good = encode_entry(&k, &[5u8; 100]);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rnd = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..5000 {
        let mut b = good.clone();
        for _ in 0..(rnd() % 4) {
            let i = (rnd() as usize) % b.len();
            b[i] = rnd() as u8;
        }
        let n = (rnd() as usize) % (b.len() + 8);
        b.resize(n, rnd() as u8);
        let _ = decode_entry(&k, &b);
    }
    // A huge length field must not overflow anything.
    let mut b = good.clone();
    b[OFF_LEN..OFF_HASH].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_eq!(decode_entry(&k, &b), Err(EntryError::LengthMismatch));
}

#[test]
fn symlinked_entry_is_miss_and_never_written_through() {
    let td = TestDir::new("symlink");
    let c = cache_in(&td, 1 << 20);
    let k = key("sym");
    let target = td.join("elsewhere.bin");
    let valid = encode_entry(&k, b"looks valid");
    fs::write(&target, &valid).unwrap();
    let path = c.entry_path(&k);
    symlink(&target, &path).unwrap();
    assert_eq!(c.get(&k), None);
    assert!(fs::symlink_metadata(&path).is_err(), "link removed");
    assert_eq!(fs::read(&target).unwrap(), valid, "target untouched");
    // A put over a planted link replaces the link, not the target.
    symlink(&target, &path).unwrap();
    c.put(&k, b"fresh").unwrap();
    assert_eq!(fs::read(&target).unwrap(), valid, "not written through");
    assert!(fs::symlink_metadata(&path).unwrap().file_type().is_file());
    assert_eq!(c.get(&k), Some(b"fresh".to_vec()));
    // A dangling link is a miss as well.
    let k2 = key("dangling");
    symlink(td.join("nowhere"), c.entry_path(&k2)).unwrap();
    assert_eq!(c.get(&k2), None);
    assert!(fs::symlink_metadata(c.entry_path(&k2)).is_err());
    assert!(!td.join("nowhere").exists());
}

#[test]
fn non_regular_entries_are_misses() {
    let td = TestDir::new("fifo");
    let c = cache_in(&td, 1 << 20);
    let k = key("fifo");
    let path = c.entry_path(&k);
    let cpath = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(cpath.as_ptr(), 0o600) }, 0);
    assert_eq!(c.get(&k), None, "must not block on a FIFO");
    assert!(fs::symlink_metadata(&path).is_err());
    // A folder planted at the entry's name is a miss, and goes: the key works again.
    fs::create_dir(&path).unwrap();
    assert_eq!(c.get(&k), None);
    assert!(fs::symlink_metadata(&path).is_err(), "the planted folder stays in the way");
    fs::create_dir(&path).unwrap();
    c.put(&k, b"x").expect("put replaces a folder planted at the entry's name");
    assert_eq!(c.get(&k).as_deref(), Some(&b"x"[..]));
    assert!(temp_files(c.dir()).is_empty());
}

/// A temp file name as `create_temp` makes them.
fn temp_name(n: u64) -> String {
    format!("{TMP_PREFIX}{}.{}.{n}.{:016x}", std::process::id(), 7, n * 0x9e37_79b9)
}

/// Planted folders at cudyn's names (with files, nested folders and a symlink out of the cache
/// inside) never make a key fail: `get`, `put`, eviction and `clear` each free the name, never
/// follow the symlink, and leave everything else alone.
#[test]
fn planted_folders_never_block_a_key() {
    for round in 0..4 {
        let td = TestDir::new("planted");
        let c = cache_in(&td, 1 << 20);
        let outside = td.join("outside.txt");
        fs::write(&outside, b"not the cache's").unwrap();
        let plant = |p: &Path| {
            fs::create_dir_all(p.join("a/b/c")).unwrap();
            fs::write(p.join("a/b/c/f"), b"x").unwrap();
            fs::write(p.join("g"), b"y").unwrap();
            symlink(&outside, p.join("a/link")).unwrap();
            symlink(td.join(""), p.join("dirlink")).unwrap();
        };
        let k = key(&format!("planted{round}"));
        let path = c.entry_path(&k);
        plant(&path);
        match round {
            0 => {
                assert_eq!(c.get(&k), None);
                c.put(&k, b"v").unwrap();
            }
            1 => c.put(&k, b"v").unwrap(),
            2 => {
                // Eviction's sweep (after another key's put) frees it.
                c.put(&key("other"), b"o").unwrap();
                assert!(fs::symlink_metadata(&path).is_err(), "eviction left the planted folder");
                c.put(&k, b"v").unwrap();
            }
            _ => {
                assert_eq!(c.clear().unwrap(), 1, "a planted folder at an entry's name counts as the entry cleared");
                assert!(fs::symlink_metadata(&path).is_err(), "clear left the planted folder");
                c.put(&k, b"v").unwrap();
            }
        }
        assert_eq!(c.get(&k).as_deref(), Some(&b"v"[..]), "round {round}");
        assert_eq!(fs::read(&outside).unwrap(), b"not the cache's", "a symlink inside was followed");
        assert!(td.join("cache").is_dir());
        // A manifest's name too.
        let m = c.dir().join(format!("{}{MANIFEST_EXT}", k.hex()));
        plant(&m);
        assert_eq!(c.get_manifest(&k), None);
        c.put_manifest(&k, b"m").unwrap();
        assert_eq!(c.get_manifest(&k).as_deref(), Some(&b"m"[..]));
    }
}

/// A planted folder too deep (or too full) to remove within the budget is moved aside, so the
/// key works at once; the junk goes later, bounded the same way.
#[test]
fn planted_folder_too_deep_is_moved_aside() {
    let td = TestDir::new("deep");
    let c = cache_in(&td, 1 << 20);
    let k = key("deep");
    let mut p = c.entry_path(&k);
    for i in 0..(REMOVE_DEPTH + 4) {
        p = p.join(format!("d{i}"));
    }
    fs::create_dir_all(&p).unwrap();
    c.put(&k, b"v").unwrap();
    assert_eq!(c.get(&k).as_deref(), Some(&b"v"[..]));
    let junk: Vec<String> = names(c.dir()).into_iter().filter(|n| n.starts_with(JUNK_PREFIX)).collect();
    assert_eq!(junk.len(), 1, "{:?}", names(c.dir()));
    assert_eq!(classify(OsStr::new(&junk[0])), Kind::Junk);
}

/// Everything sized by what is on disk is bounded and fallible: a 40 GB sparse file at an
/// entry's name with a 64 GiB bound is a miss (and removed), read no further than its header,
/// never an abort; a manifest claiming 2^64 checks decodes to nothing.
#[test]
fn huge_sparse_entries_are_misses_not_aborts() {
    let td = TestDir::new("sparse");
    let c = cache_in(&td, 64 << 30);
    for (n, len) in [("huge", 40u64 << 30), ("large", 900 << 20)] {
        let k = key(n);
        let path = c.entry_path(&k);
        let f = File::create(&path).unwrap();
        if f.set_len(len).is_err() {
            eprintln!("note: this filesystem cannot make a {len}-byte sparse file; case skipped");
            continue;
        }
        // A valid-looking header: only the length is wrong.
        let mut h = encode_entry(&k, b"");
        h.truncate(ENTRY_HEADER_LEN);
        use std::os::unix::fs::FileExt;
        f.write_all_at(&h, 0).unwrap();
        drop(f);
        let t = std::time::Instant::now();
        assert_eq!(c.get(&k), None);
        assert!(t.elapsed() < Duration::from_secs(5), "{n}: read the whole file ({:?})", t.elapsed());
        assert!(fs::symlink_metadata(&path).is_err(), "{n}: not removed");
        c.put(&k, b"fine").unwrap();
        assert_eq!(c.get(&k).as_deref(), Some(&b"fine"[..]));
    }
    let mut m = u64::MAX.to_le_bytes().to_vec();
    m.extend_from_slice(&[0u8; 200]);
    assert!(decode_checks(&m).is_none());
    // A store larger than one entry may be is refused, not attempted.
    let big = Cache::at(td.join("big"), 64 << 30).unwrap();
    assert!(big.entry_limit() <= ENTRY_MAX_BYTES);
}

#[test]
fn dir_checks() {
    let td = TestDir::new("dircheck");
    // Missing nested dir is created, leaf mode 0700.
    let nested = td.join("a/b/cache");
    let c = Cache::at(&nested, 1000).unwrap();
    assert_eq!(c.dir(), nested.as_path());
    assert_eq!(c.max_bytes(), 1000);
    let m = fs::symlink_metadata(&nested).unwrap();
    assert!(m.is_dir());
    assert_eq!(m.mode() & 0o777, 0o700);
    // Re-opening an existing good dir works.
    Cache::at(&nested, 1000).unwrap();
    // A symlink to a good dir is refused.
    let link = td.join("link");
    symlink(&nested, &link).unwrap();
    let e = Cache::at(&link, 1000).unwrap_err();
    assert!(e.to_string().contains("symlink"), "{e}");
    // Group/world writable is refused.
    let open = td.join("open");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
    let e = Cache::at(&open, 1000).unwrap_err();
    assert!(e.to_string().contains("writable"), "{e}");
    fs::set_permissions(&open, fs::Permissions::from_mode(0o755)).unwrap();
    Cache::at(&open, 1000).unwrap();
    // A regular file is refused; so is a dir whose parent is a file.
    fs::write(td.join("file"), b"x").unwrap();
    assert!(Cache::at(td.join("file"), 1000).is_err());
    assert!(Cache::at(td.join("file/sub"), 1000).is_err());
    // Owned by someone else (only testable as root).
    if is_root() {
        let other = td.join("other");
        fs::create_dir(&other).unwrap();
        std::os::unix::fs::chown(&other, Some(65534), Some(65534)).unwrap();
        let e = Cache::at(&other, 1000).unwrap_err();
        assert!(e.to_string().contains("owned"), "{e}");
    }
}

#[test]
fn missing_dir_put_fails() {
    let td = TestDir::new("missing");
    let c = cache_in(&td, 1 << 20);
    fs::remove_dir(c.dir()).unwrap();
    let e = c.put(&key("k"), b"payload").unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::NotFound);
    assert!(!c.dir().exists(), "put does not recreate the dir");
    assert_eq!(c.get(&key("k")), None);
    assert_eq!(c.stats().entries, 0);
    // Re-opening recreates it with 0700.
    let c = cache_in(&td, 1 << 20);
    assert_eq!(fs::metadata(c.dir()).unwrap().mode() & 0o777, 0o700);
}

#[test]
fn lru_eviction() {
    let td = TestDir::new("lru");
    let payload = vec![1u8; 1000];
    let esize = (ENTRY_HEADER_LEN + payload.len()) as u64;
    let c = cache_in(&td, 3 * esize + 10);
    let [a, b, cc, d, e] = ["a", "b", "c", "d", "e"].map(key);
    for k in [&a, &b, &cc] {
        c.put(k, &payload).unwrap();
    }
    set_mtime(&c.entry_path(&a), ago(300));
    set_mtime(&c.entry_path(&b), ago(200));
    set_mtime(&c.entry_path(&cc), ago(100));
    assert_eq!(c.stats().bytes, 3 * esize);
    // A hit makes `a` the most recent.
    assert!(c.get(&a).is_some());
    assert!(fs::metadata(c.entry_path(&a)).unwrap().modified().unwrap() > ago(10));
    c.put(&d, &payload).unwrap();
    assert!(!c.entry_path(&b).exists(), "oldest (b) evicted");
    for k in [&a, &cc, &d] {
        assert!(c.entry_path(k).exists());
    }
    c.put(&e, &payload).unwrap();
    assert!(!c.entry_path(&cc).exists(), "next oldest (c) evicted");
    assert_eq!(c.stats().entries, 3);
    assert!(c.bytes() <= c.max_bytes());

    // The entry just written is kept even when it is the oldest by mtime.
    for k in [&a, &d, &e] {
        set_mtime(&c.entry_path(k), SystemTime::now() + Duration::from_secs(1000));
    }
    let f = key("f");
    c.put(&f, &payload).unwrap();
    assert!(c.entry_path(&f).exists());
    assert_eq!(c.stats().entries, 3);

    // An entry larger than the bound is not stored and evicts nothing.
    let before = entry_files(c.dir());
    let big = key("big");
    let err = c.put(&big, &vec![0u8; 3 * 1000 + 300]).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
    assert!(!c.entry_path(&big).exists());
    assert_eq!(entry_files(c.dir()), before);
    assert!(temp_files(c.dir()).is_empty());
}

#[test]
fn stale_temp_files_swept_unrelated_kept() {
    let td = TestDir::new("stale");
    let c = cache_in(&td, 1 << 20);
    let old = c.dir().join(temp_name(1));
    let fresh = c.dir().join(temp_name(2));
    let other = c.dir().join("README");
    // A user's file that only starts like cudyn's temp names is the user's.
    let lookalike = c.dir().join(format!("{TMP_PREFIX}notes"));
    for p in [&old, &fresh, &other, &lookalike] {
        fs::write(p, b"x").unwrap();
        set_mtime(p, ago(7200));
    }
    set_mtime(&fresh, SystemTime::now());
    c.put(&key("k"), b"v").unwrap();
    assert!(!old.exists());
    assert!(fresh.exists());
    assert!(other.exists());
    assert!(lookalike.exists(), "eviction removed a user's .cudyn-tmp.notes");
    assert_eq!(c.stats().entries, 1, "non-entry files are not counted");
}

#[test]
fn concurrent_threads_same_key() {
    let td = TestDir::new("threads");
    let c = Arc::new(cache_in(&td, 1 << 20));
    let k = key("shared");
    let payload: Arc<Vec<u8>> = Arc::new((0..20_000u32).map(|i| (i * 7) as u8).collect());
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let (c, p) = (c.clone(), payload.clone());
            std::thread::spawn(move || {
                for i in 0..50 {
                    match c.get(&k) {
                        Some(got) => assert!(got == *p, "thread {t} got a wrong payload"),
                        None => c.put(&k, &p).unwrap(),
                    }
                    if i % 5 == t % 5 {
                        c.put(&k, &p).unwrap(); // extra renames racing readers
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(entry_files(c.dir()), vec![format!("{}.cudyn", k.hex())]);
    assert!(temp_files(c.dir()).is_empty());
    assert_eq!(c.get(&k).as_deref(), Some(payload.as_slice()));
    let s = c.stats();
    assert_eq!(s.hits + s.misses, 8 * 50 + 1);
}

#[test]
fn stats_counted() {
    let td = TestDir::new("stats");
    let c = cache_in(&td, 1 << 20);
    assert_eq!(c.stats(), CacheStats::default());
    let k = key("s");
    assert!(c.get(&k).is_none());
    c.put(&k, b"12345").unwrap();
    assert!(c.get(&k).is_some());
    assert!(c.get(&k).is_some());
    c.put(&key("t"), b"1").unwrap();
    let s = c.stats();
    assert_eq!((s.hits, s.misses, s.entries), (2, 1, 2));
    assert_eq!(s.bytes, (2 * ENTRY_HEADER_LEN + 6) as u64);
    assert_eq!(c.bytes(), s.bytes);
    // Counters are per instance.
    let c2 = Cache::at(c.dir(), 1 << 20).unwrap();
    assert_eq!((c2.stats().hits, c2.stats().misses), (0, 0));
}

#[test]
fn clear_removes_only_entries_and_temps() {
    let td = TestDir::new("clear");
    let c = cache_in(&td, 1 << 20);
    for n in ["a", "b", "c"] {
        c.put(&key(n), n.as_bytes()).unwrap();
    }
    let unrelated = c.dir().join("notes.txt");
    fs::write(&unrelated, b"keep me").unwrap();
    let lookalike = c.dir().join(format!("{}.cudyn", "Z".repeat(64)));
    fs::write(&lookalike, b"keep").unwrap();
    fs::create_dir(c.dir().join("subdir")).unwrap();
    let tmp = c.dir().join(temp_name(3));
    fs::write(&tmp, b"t").unwrap();
    let users = c.dir().join(format!("{TMP_PREFIX}x"));
    fs::write(&users, b"the user's").unwrap();
    // An entry-named symlink: the link goes, its target stays.
    let target = td.join("target");
    fs::write(&target, b"target").unwrap();
    symlink(&target, c.entry_path(&key("d"))).unwrap();
    assert_eq!(c.clear().unwrap(), 4);
    assert_eq!(c.stats().entries, 0);
    assert!(!tmp.exists());
    assert_eq!(fs::read(&users).unwrap(), b"the user's", "clear removed a user's .cudyn-tmp.x");
    assert_eq!(fs::read(&unrelated).unwrap(), b"keep me");
    assert!(lookalike.exists());
    assert!(c.dir().join("subdir").is_dir());
    assert_eq!(fs::read(&target).unwrap(), b"target");
    assert!(fs::symlink_metadata(c.entry_path(&key("d"))).is_err());
    assert_eq!(c.clear().unwrap(), 0);
}

#[test]
fn from_env_honours_variables() {
    const VARS: [&str; 5] = ["CUDYN_CACHE", "CUDYN_CACHE_DIR", "CUDYN_CACHE_MAX_BYTES", "XDG_CACHE_HOME", "HOME"];
    let _g = process_lock();
    let saved: Vec<_> = VARS.iter().map(std::env::var_os).collect();
    #[allow(unused_unsafe)]
    let set = |name: &str, val: Option<&OsStr>| {
        // SAFETY: environment changes are serialised by PROCESS_LOCK, and
        // no other test reads these variables.
        unsafe {
            match val {
                Some(v) => std::env::set_var(name, v),
                None => std::env::remove_var(name),
            }
        }
    };
    let td = TestDir::new("env");
    let run = || {
        for v in VARS {
            set(v, None);
        }
        let explicit = td.join("explicit");
        set("CUDYN_CACHE_DIR", Some(explicit.as_os_str()));
        set("XDG_CACHE_HOME", Some(td.join("xdg").as_os_str()));
        set("HOME", Some(td.join("home").as_os_str()));
        let c = Cache::from_env().unwrap();
        assert_eq!(c.dir(), explicit.as_path());
        assert_eq!(c.max_bytes(), DEFAULT_MAX_BYTES);
        assert_eq!(fs::metadata(&explicit).unwrap().mode() & 0o777, 0o700);

        set("CUDYN_CACHE_MAX_BYTES", Some(OsStr::new("12345")));
        assert_eq!(Cache::from_env().unwrap().max_bytes(), 12345);
        set("CUDYN_CACHE_MAX_BYTES", Some(OsStr::new("256M")));
        assert_eq!(Cache::from_env().unwrap().max_bytes(), 256 << 20);
        set("CUDYN_CACHE_MAX_BYTES", Some(OsStr::new("lots")));
        let e = Cache::from_env().unwrap_err();
        assert!(e.message.contains("CUDYN_CACHE_MAX_BYTES"), "{e}");
        assert_eq!(e.status, Status::InvalidArgument);
        set("CUDYN_CACHE_MAX_BYTES", None);

        set("CUDYN_CACHE", Some(OsStr::new("0")));
        let e = Cache::from_env().unwrap_err();
        assert!(e.message.contains("CUDYN_CACHE=0"), "{e}");
        assert_eq!(e.status, Status::NotFound);
        set("CUDYN_CACHE", Some(OsStr::new("1")));
        assert!(Cache::from_env().is_ok());

        set("CUDYN_CACHE_DIR", None);
        assert_eq!(Cache::from_env().unwrap().dir(), td.join("xdg/cudyn").as_path());
        set("XDG_CACHE_HOME", Some(OsStr::new("relative/ignored")));
        assert_eq!(Cache::from_env().unwrap().dir(), td.join("home/.cache/cudyn").as_path());
        set("XDG_CACHE_HOME", None);
        assert_eq!(Cache::from_env().unwrap().dir(), td.join("home/.cache/cudyn").as_path());
        set("HOME", None);
        assert!(Cache::from_env().is_err());

        // An unusable directory gives a reason, not a panic.
        fs::write(td.join("afile"), b"x").unwrap();
        set("CUDYN_CACHE_DIR", Some(td.join("afile").as_os_str()));
        let e = Cache::from_env().unwrap_err();
        assert!(e.message.contains("afile") && e.message.contains("not a directory"), "{e}");
        assert_eq!(e.status, Status::Io);
        set("CUDYN_CACHE_DIR", Some(OsStr::new("relative/cache")));
        assert!(Cache::from_env().unwrap_err().message.contains("relative"));
    };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run));
    for (v, old) in VARS.iter().zip(saved) {
        set(v, old.as_deref());
    }
    if let Err(p) = r {
        std::panic::resume_unwind(p);
    }
}

#[test]
fn sizes_with_suffixes() {
    assert_eq!(parse_size("12345"), Some(12345));
    assert_eq!(parse_size(" 256M "), Some(256 << 20));
    assert_eq!(parse_size("4k"), Some(4096));
    assert_eq!(parse_size("2G"), Some(2 << 30));
    assert_eq!(parse_size("3MiB"), Some(3 << 20));
    assert_eq!(parse_size("1T"), Some(1 << 40));
    for bad in ["", "M", "12X", "-5", "1.5G", "99999999999999999999", "17179869184G", "5 M B"] {
        assert_eq!(parse_size(bad), None, "{bad}");
    }
}

#[test]
fn secure_process_has_no_cache_whatever_the_environment() {
    let td = TestDir::new("secure");
    let dir = td.join("c");
    let var = |n: &str| (n == "CUDYN_CACHE_DIR").then(|| dir.clone().into_os_string());
    assert_eq!(config_from(var, false).unwrap().0, dir);
    let e = config_from(var, true).unwrap_err();
    assert!(e.message.contains("setuid"), "{e}");
    assert!(!dir.exists());
}

#[test]
fn readonly_folder_is_refused_with_a_reason() {
    let td = TestDir::new("ro-at");
    let dir = td.join("ro");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o500)).unwrap();
    if is_root() {
        // Root writes anyway; the reason path is covered by the unprivileged child in
        // readonly_dir_put_fails_cleanly (tests/cache_processes.rs).
        assert!(Cache::at(&dir, 1 << 20).is_ok());
        return;
    }
    let e = Cache::at(&dir, 1 << 20).unwrap_err();
    assert!(e.to_string().contains("cannot be written"), "{e}");
}

/// The cache folder is swapped for another (attacker-made) one after cudyn checked it: cudyn
/// neither serves the forged entry nor writes into the other folder.
#[test]
fn swapped_folder_is_never_used() {
    let td = TestDir::new("swap");
    let path = td.join("cache");
    let c = Cache::at(&path, 1 << 20).unwrap();
    let (k, k2) = (key("victim"), key("fresh"));
    c.put(&k, b"genuine").unwrap();
    fs::rename(&path, td.join("moved-away")).unwrap();
    fs::create_dir(&path).unwrap();
    let forged = encode_entry(&k, b"forged");
    fs::write(path.join(format!("{}{ENTRY_EXT}", k.hex())), &forged).unwrap();
    fs::write(path.join(format!("{}{ENTRY_EXT}", k2.hex())), encode_entry(&k2, b"forged too")).unwrap();
    // Reads come from the folder that was checked, wherever its name went.
    assert_eq!(c.get(&k).as_deref(), Some(&b"genuine"[..]));
    assert_eq!(c.get(&k2), None);
    c.put(&key("new"), b"ours").unwrap();
    assert_eq!(names(&path).len(), 2, "nothing written into the other folder: {:?}", names(&path));
    assert_eq!(fs::read(path.join(format!("{}{ENTRY_EXT}", k.hex()))).unwrap(), forged);
    assert!(td.join("moved-away").join(format!("{}{ENTRY_EXT}", key("new").hex())).exists());
    // A symlink put in its place is not followed either.
    fs::remove_dir_all(&path).unwrap();
    symlink(td.join("moved-away"), &path).unwrap();
    assert_eq!(c.clear().unwrap(), 2);
    assert!(Cache::at(&path, 1 << 20).is_err(), "a symlinked folder is refused when opened");
}

/// More names than a listing holds, none of them cudyn's (a vandal with write access to the
/// folder, or another program sharing it): eviction still keeps the bound and `clear` still
/// removes cudyn's entries, since only cudyn's names count toward the listing's bound (they
/// stopped both: "more than N names in the cache folder").
#[test]
fn a_folder_flooded_with_other_names_still_evicts_and_clears() {
    let td = TestDir::new("flood");
    let payload = vec![2u8; 1000];
    let esize = (ENTRY_HEADER_LEN + payload.len()) as u64;
    let c = cache_in(&td, 3 * esize + 10);
    for i in 0..=crate::cache::dirfd::MAX_LISTING {
        fs::write(c.dir().join(format!("x{i}")), b"").unwrap();
    }
    for i in 0..6 {
        c.put(&key(&format!("k{i}")), &payload).unwrap();
    }
    assert!(c.stats().entries <= 3, "the bound holds: {} entries", c.stats().entries);
    assert!(c.bytes() <= c.max_bytes());
    let before = entry_files(c.dir()).len() as u64;
    assert!(before > 0);
    assert_eq!(c.clear().unwrap(), before);
    assert!(entry_files(c.dir()).is_empty());
    assert!(c.dir().join("x0").exists(), "the other names stay");
}
